// extension_builder.h — the compiler driver: compiles every kernels/*.cu with nvcc (its host and
// device chains side by side, builder/nvcc_plan.h) and every .cpp with g++ in parallel (binding
// files with the precompiled header of torch's includes, build/precompiled_header.h, and by clang
// where the machine has one, builder/binding_compiler.h), links
// cuda_extension.so for the installed torch (against stubs of its libraries, builder/link_stubs.h),
// records how long each step took (BuildReport::steps), and caches objects by the hash of their
// source, the candidate's headers, the flags and the toolchain, and the linked library by the hash
// of its objects' keys (an unchanged candidate is neither compiled nor linked again).
//
//   BuildRequest req{.source_dir = snapshot, .out_dir = build, .cache_dir = cache, ...};
//   BuildReport report = BuildExtension(req, toolchain);
//   if (!report.ok) ShowToAgent(report.errors);
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "builder/diagnostics.h"
#include "harness/toolchain.h"
#include "sandbox/sandbox.h"
#include "workspace/layout.h"

namespace cuda_agent {

inline constexpr const char* kExtensionName = "cuda_extension";

struct BuildRequest {
  fs::path source_dir;           // holds binding.cpp, binding_registry.h and kernels/
  fs::path out_dir;              // objects and cuda_extension.so go here
  fs::path cache_dir;            // object cache (cache_dir/objects); empty: no cache
  int jobs = 0;                  // parallel compilations; 0: the number of CPUs
  double timeout_seconds = 300;  // per compiler invocation
  // When set, every compiler and linker invocation runs in this sandbox: `policy` plus out_dir
  // writable and source_dir readable.
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
  bool library_cached = false;       // nothing changed: the linked library came from the cache
  std::vector<std::string> sources;  // relative paths that were compiled
  fs::path library;                  // out_dir/cuda_extension.so when ok
  std::vector<BuildStep> steps;      // in the order they ended
};

// BuildExtension never throws; every failure is in the report.
BuildReport BuildExtension(const BuildRequest& request, const Toolchain& toolchain);

// CollectSources lists binding.cpp and kernels/**.{cu,cpp} (relative), or says why it cannot build.
Result<std::vector<fs::path>> CollectSources(const fs::path& source_dir, Device device);

// CudaGencode returns the -gencode value for a capability ("9.0" → arch=compute_90a,code=sm_90a).
std::string CudaGencode(const std::string& capability);

}  // namespace cuda_agent
