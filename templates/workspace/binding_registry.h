// binding_registry.h — fixed workspace infrastructure. Do not modify.
//
// Each kernel's binding file (kernels/<name>_binding.cpp) registers a function
// that adds its Python entry points to the extension module; binding.cpp
// applies every registered function when Python imports `cuda_extension`.
// Registration happens during static initialisation of the shared library,
// so binding files need no central list.
//
// Usage, at the end of kernels/axpby_binding.cpp:
//
//   static void register_axpby(pybind11::module& m) {
//     m.def("axpby_forward", &axpby_forward, py::arg("a"), py::arg("x"),
//           py::arg("b"), py::arg("y"));
//   }
//   REGISTER_BINDING(axpby, register_axpby);
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// The same alias <torch/csrc/utils/pybind.h> declares; redeclaring a
// namespace alias to the same namespace is legal.
namespace py = pybind11;

// Hidden like pybind11's own namespace: the registry is private to the
// extension module, and g++ warns when a visible class holds pybind11 types.
#if defined(__GNUC__)
#define CUDA_AGENT_BINDING_HIDDEN __attribute__((visibility("hidden")))
#else
#define CUDA_AGENT_BINDING_HIDDEN
#endif

namespace cuda_agent CUDA_AGENT_BINDING_HIDDEN {

using BindingFunction = std::function<void(pybind11::module&)>;

// BindingRegistry is the process-wide list of registered bindings.
class BindingRegistry {
 public:
  // Instance returns the single registry of this extension module.
  static BindingRegistry& Instance() {
    static BindingRegistry registry;
    return registry;
  }

  // Add records `function` under `name`; called by REGISTER_BINDING.
  void Add(std::string name, BindingFunction function) {
    entries_.emplace_back(std::move(name), std::move(function));
  }

  // ApplyAll runs every registered function on `module`, sorted by name so
  // the result does not depend on the link order of the binding files. A name
  // registered twice (usually a leftover copy of a binding file) throws, which
  // Python reports as an ImportError of cuda_extension.
  void ApplyAll(pybind11::module& module) const {
    std::vector<const Entry*> sorted;
    sorted.reserve(entries_.size());
    for (const Entry& entry : entries_) sorted.push_back(&entry);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Entry* a, const Entry* b) { return a->first < b->first; });
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      if (sorted[i]->first == sorted[i - 1]->first) {
        throw std::runtime_error("REGISTER_BINDING(" + sorted[i]->first +
                                 ") appears in more than one binding file");
      }
    }
    for (const Entry* entry : sorted) entry->second(module);
  }

 private:
  using Entry = std::pair<std::string, BindingFunction>;
  BindingRegistry() = default;
  std::vector<Entry> entries_;
};

// BindingRegistrar adds one binding when its static instance is constructed.
struct BindingRegistrar {
  BindingRegistrar(const char* name, BindingFunction function) {
    BindingRegistry::Instance().Add(name, std::move(function));
  }
};

}  // namespace cuda_agent

// REGISTER_BINDING(name, func) registers `func` (void(pybind11::module&))
// under `name`. `name` must be an identifier, unique within the workspace.
#define REGISTER_BINDING(name, func)                                         \
  static ::cuda_agent::BindingRegistrar cuda_agent_binding_registrar_##name( \
      #name, func)
