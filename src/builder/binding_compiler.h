// binding_compiler.h — which compiler builds a torch-style binding file (one that includes torch's
// or pybind11's headers, builder/precompiled_header.h): clang where the machine has one, g++
// otherwise and whenever clang fails.
//
// Why: g++ instantiates, in every binding file, the templates that torch's and pybind11's headers'
// inline code uses, even with a precompiled header; that alone is ≈ 3 s of a binding edit's 7–10 s.
// clang keeps those instantiations in its precompiled header (-fpch-instantiate-templates), so a
// binding file's front end takes well under a second (docs/decisions/binding-compilers.md).
// clang and g++ objects link together (both with libstdc++, the same C++ ABI; pybind11 3
// gives both the same internals id). Any clang failure — an error, a crash, a timeout, a construct
// only g++ accepts — is answered by compiling the file with g++ as before, whose verdict and errors
// are the ones reported, so no binding that g++ accepts is refused.
//
//   if (std::optional<BindingClang> clang = FindBindingClang())
//     argv = {clang->path, "-c", BindingOptimization(device), ...};
#pragma once

#include <optional>
#include <string>

#include "harness/toolchain.h"

namespace cuda_agent {

struct BindingClang {
  std::string path;     // the clang++ executable
  std::string version;  // the first line of `clang++ --version`: part of every cache key
  int major = 0;
};

// FindBindingClang: the clang++ that compiles binding files, or nothing. `setting` is the judge's
// --binding-clang: "off": nothing (g++ only); "auto": the newest clang++-N on $PATH (N from 30 down
// to 11), else clang++; anything else: that executable. Older than clang 11 (no
// -fpch-instantiate-templates) or one whose --version fails: nothing. Asked once per setting in a
// process.
std::optional<BindingClang> FindBindingClang(const std::string& setting = "auto");

// ParseClangMajor: the major version in a `clang++ --version` first line ("Ubuntu clang version
// 16.0.6 (15)" → 16), 0 when it names none.
int ParseClangMajor(const std::string& version_line);

// BindingOptimization: the optimisation level of a binding file compiled by clang. -O0 on CUDA: a
// binding is host glue (argument checks, a kernel launch), and on CUDA the judge times the device's
// activities, never the host's, so optimising it buys no reward and costs seconds per edit (-O0 is
// also what torch's own extension loader uses unless told otherwise). -O3 on the CPU, where the
// wall time of the whole call is what is timed.
const char* BindingOptimization(Device device);

}  // namespace cuda_agent
