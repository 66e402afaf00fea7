// job_policy.h — the sandbox policy every contained harness job starts from: read-only access to
// the interpreter, torch and CUDA that the toolchain found, the judge's cache hidden, GPU nodes
// when the device is CUDA, and the memory/process/file limits. The judge and `tasks check` add
// their folders.
//
//   SandboxPolicy p = BaseJobPolicy(toolchain, {Device::kCuda, cache_dir});
//   p.read_only.push_back(task_dir);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/toolchain.h"
#include "sandbox/sandbox.h"

namespace cuda_agent {

struct JobLimits {
  Device device = Device::kCuda;
  fs::path cache_dir;          // hidden from every job
  uint64_t memory_bytes = 0;   // cgroup memory limit; 0: 3/4 of the machine's memory
  uint64_t max_pids = 4096;    // processes and threads
  double cpu_timeout_s = 900;  // CPU-seconds backstop = this × CPUs (the watchdog comes first)
};

SandboxPolicy BaseJobPolicy(const Toolchain& toolchain, const JobLimits& limits);

// PythonInside: the interpreter jobs run with (the toolchain job's sys.executable), or "".
std::string PythonInside(const Toolchain& toolchain);

// AddWithRealPath appends a path and, when it is a link, where it leads.
void AddWithRealPath(std::vector<fs::path>& paths, const fs::path& p);

}  // namespace cuda_agent
