// precompiled_header.h — one precompiled header of the heavy includes of binding files (torch's
// extension API, pybind11, the CUDA stream/guard headers), per toolchain × compile flags, in the
// judge's cache. A binding file that includes torch or pybind11 headers is compiled with
// `-include <pch>/cuda_agent_pch.h`, which g++ satisfies from the .gch: the headers are not parsed
// again (g++ still instantiates their templates per file, which no header cache avoids). g++ falls
// back to parsing the header itself when the .gch does not match, so a stale one costs time, never
// correctness.
//
// Making the .gch takes about as long as three binding compiles, so it is made in the background
// the first time it is asked for (a detached compiler, so a short-lived `cuda-agent judge` need not
// wait) and used by the builds that come after.
//
//   std::optional<fs::path> pch = PrecompiledHeader(cache_dir, compile_argv, toolchain);
//   if (pch) argv.insert(argv.end(), {"-include", (*pch / "cuda_agent_pch.h").string()});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "build/toolchain.h"
#include "common/fs.h"

namespace cuda_agent {

inline constexpr const char* kPchHeader = "cuda_agent_pch.h";

// UsesHeavyHeaders: the source includes torch, ATen, c10 or pybind11 headers.
bool UsesHeavyHeaders(const std::string& source);

// PrecompiledHeader returns the folder holding cuda_agent_pch.h and its ready .gch for g++ invoked
// with `flags` (the compile flags without source and output), or nothing while it is not made yet
// (then it starts making it, once, in the background). Empty `cache_dir`: never.
std::optional<fs::path> PrecompiledHeader(const fs::path& cache_dir, const std::vector<std::string>& flags,
                                          const Toolchain& toolchain);

// PchHeaderText: the header's content for a device.
std::string PchHeaderText(Device device);

}  // namespace cuda_agent
