// precompiled_header.h — precompiled headers of the heavy includes of binding files, per toolchain
// × compiler × compile flags × variant, in the judge's cache. A binding file that includes torch or
// pybind11 headers is compiled by g++ with `-include <pch>/cuda_agent_pch.h`, which g++ satisfies
// from the .gch, or by clang (builder/binding_compiler.h) with `-include-pch
// <pch>/cuda_agent_pch.h.pch`, made with -fpch-instantiate-templates: the headers are not parsed
// again. g++ still instantiates, in every file, the templates those headers' inline code uses
// (clang finds them instantiated in its .pch), and that grows with what is included — so there are
// two variants: `core` (torch/types.h, torch's pybind11 glue, the CUDA stream/guard headers: what
// SKILL.md's binding example includes) and `full` (torch/extension.h on top, for files that include
// it). g++ falls back to parsing the header itself when a .gch does not match, so a stale one costs
// time, never correctness.
//
// Making the .gch takes about as long as three binding compiles, so it is made in the background
// the first time it is asked for (a detached compiler, so a short-lived `cuda-agent judge` need not
// wait) and used by the builds that come after.
//
//   std::optional<fs::path> pch = PrecompiledHeader(cache_dir, flags, toolchain,
//   PchVariantFor(source), PchCompiler::kGcc);
//   if (pch) for (auto& a : PchIncludeFlags(*pch, PchCompiler::kGcc)) argv.push_back(a);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "harness/toolchain.h"

namespace cuda_agent {

inline constexpr const char* kPchHeader = "cuda_agent_pch.h";

enum class PchVariant { kNone, kCore, kFull };

// The compiler a precompiled header is made by and for (each reads only its own format).
enum class PchCompiler { kGcc, kClang };

// PchVariantFor: kNone for a source without torch, ATen, c10 or pybind11 includes; kFull when it
// includes torch/extension.h (or torch/torch.h, torch/all.h, torch/script.h); else kCore.
PchVariant PchVariantFor(const std::string& source);

// PrecompiledHeader returns the folder holding cuda_agent_pch.h and its ready precompiled form for
// `compiler` invoked with `flags` (the compiler and its flags, without -c, source and output), or
// nothing while it is not made yet (then, when `start`, it starts making it, once, in the
// background; `*failed` tells whether the last attempt, within the hour, failed). Empty
// `cache_dir`: never.
std::optional<fs::path> PrecompiledHeader(const fs::path& cache_dir,
                                          const std::vector<std::string>& flags,
                                          const Toolchain& toolchain, PchVariant variant,
                                          PchCompiler compiler, bool start = true,
                                          bool* failed = nullptr);

// PchIncludeFlags: what a compile adds to use the precompiled header in `dir`.
std::vector<std::string> PchIncludeFlags(const fs::path& dir, PchCompiler compiler);

// PchHeaderText: the header's content for a device and variant.
std::string PchHeaderText(Device device, PchVariant variant);

}  // namespace cuda_agent
