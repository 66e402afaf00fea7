// extension_builder.h — the compiler driver. It takes the candidate as a value
// (workspace/candidate.h: its files as the judge read them once) and the CUDA libraries the static
// scan found it uses (builder/cuda_libraries.h); it lists no folder and reads no candidate file.
// The compilers read files, so the builder writes the value's kernels/ files and the template's
// fixed binding files once, into out_dir/.src (emptied first: nothing else is there to be
// included). It compiles every kernels/*.cu with nvcc (its host and device chains side by side,
// builder/nvcc_plan.h) and every .cpp with g++ in parallel (binding files with the precompiled
// header of torch's includes, builder/precompiled_header.h, and by clang where the machine has one,
// builder/binding_compiler.h), links cuda_extension.so for the installed torch and exactly the
// CUDA libraries it was given (against stubs of the libraries, builder/link_stubs.h), records how
// long each step took (BuildReport::steps), and caches objects by the hash of their source, the
// candidate's headers, the flags and the toolchain, and the linked library by the hash of its
// objects' keys and its link command (an unchanged candidate is neither compiled nor linked again).
//
//   BuildRequest req{.template_dir = env.TemplateDir(), .out_dir = build, .libraries =
//   scan.libraries}; BuildReport report = BuildExtension(candidate, req, toolchain); if
//   (!report.ok) ShowToAgent(report.errors);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "builder/cuda_libraries.h"
#include "builder/diagnostics.h"
#include "harness/toolchain.h"
#include "sandbox/sandbox.h"
#include "workspace/candidate.h"
#include "workspace/layout.h"

namespace cuda_agent {

inline constexpr const char* kExtensionName = "cuda_extension";

// The folder of out_dir the sources are written to.
inline constexpr const char* kBuildSourceFolder = ".src";

struct BuildRequest {
  // The fixed binding files (workspace/layout.h: binding.cpp, which must be there, and the binding
  // headers) are read from here, never from the candidate.
  fs::path template_dir;
  fs::path out_dir;  // the sources (out_dir/.src), objects and cuda_extension.so go here
  // The CUDA libraries to link on CUDA (the static scan's CandidateScan::libraries), after torch's.
  CudaLibraries libraries;
  fs::path cache_dir;            // object cache (cache_dir/objects); empty: no cache
  int jobs = 0;                  // parallel compilations; 0: the number of CPUs
  double timeout_seconds = 300;  // per compiler invocation
  // When set, every compiler and linker invocation runs in this sandbox: `policy` plus out_dir
  // writable and its sources readable.
  const Sandbox* sandbox = nullptr;
  SandboxPolicy policy;
  bool fast_math = false;  // nvcc --use_fast_math (the published flags; the `paper` policy)
  // The clang++ for torch-style binding files: auto, off or a path (builder/binding_compiler.h).
  std::string binding_clang = "auto";
  // nvcc's host and device chains run side by side (builder/nvcc_plan.h); false: nvcc runs itself,
  // what the split is checked against (nvcc_plan_test.cc).
  bool split_nvcc = true;
  // Called with each .cu file's fat binary (its device code, copied into out_dir/.device_code) as
  // soon as nvcc's device chain made it, while the file's host side still compiles (only where the
  // chains run apart: builder/nvcc_plan.h); from the build's threads, several at once.
  std::function<void(const fs::path& fatbin)> on_device_code = {};
};

// BuildStep: one timed part of a build (a compiler or linker run, one of nvcc's two chains, an
// object taken from the cache), to show where a build's time goes.
struct BuildStep {
  std::string name;    // "kernels/a.cu: device chain", "binding.cpp: cached", "link", ...
  double start_s = 0;  // from the build's start
  double seconds = 0;
};

struct BuildReport {
  bool ok = false;
  std::string failure;             // one line when !ok: what failed
  std::vector<Diagnostic> errors;  // the first compiler errors
  std::string log_tail;            // the compilers' output (paths made relative), capped
  double seconds = 0;
  int objects_compiled = 0;
  int objects_cached = 0;
  int objects_split = 0;    // .cu objects compiled with nvcc's host and device chains side by side
  int objects_clang = 0;    // binding files clang compiled (builder/binding_compiler.h)
  int clang_fallbacks = 0;  // binding files clang failed on, then compiled (or refused) by g++
  bool library_cached = false;         // nothing changed: the linked library came from the cache
  std::vector<std::string> sources;    // relative paths that were compiled
  std::vector<std::string> libraries;  // the CUDA libraries linked (-l names), beside torch's
  fs::path library;                    // out_dir/cuda_extension.so when ok
  std::vector<BuildStep> steps;        // in the order they ended
};

// BuildExtension compiles and links `candidate`'s kernels/ sources with the template's binding.cpp.
// It never throws; every failure is in the report.
BuildReport BuildExtension(const Candidate& candidate, const BuildRequest& request,
                           const Toolchain& toolchain);

// CollectSources names what a build compiles: binding.cpp, then the candidate's
// kernels/**.{cu,cpp,cc} (relative, in path order), or says why it cannot build.
Result<std::vector<fs::path>> CollectSources(const Candidate& candidate, Device device);

// LinkedLibraries: the -l names a build links: torch's (and on CUDA the runtime's), then
// `libraries` on CUDA (none on the CPU).
std::vector<std::string> LinkedLibraries(Device device, const CudaLibraries& libraries);

// CudaGencode returns the -gencode value for a capability ("9.0" → arch=compute_90a,code=sm_90a).
std::string CudaGencode(const std::string& capability);

}  // namespace cuda_agent
