// layout.h — the names of the agent workspace's fixed files (PAPER.md §2's layout): the binding
// infrastructure that every build takes from our template, never from a candidate. The builder,
// the workspace, the agent's tools and the static rules all read these names from here.
#pragma once

namespace cuda_agent {

// The fixed infrastructure files every build uses, from the project's template (never the
// candidate's copies).
inline constexpr const char* kBindingSource = "binding.cpp";
inline constexpr const char* kBindingHeader = "binding_registry.h";
inline constexpr const char* kPlainBindingHeader =
    "plain_binding.h";  // bindings without torch headers
// Every fixed file a build takes from the template: a candidate's copies are never used.
inline constexpr const char* kInfrastructureFiles[] = {kBindingSource, kBindingHeader,
                                                       kPlainBindingHeader};

}  // namespace cuda_agent
