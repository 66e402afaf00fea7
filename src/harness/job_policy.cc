// job_policy.cc — the base sandbox policy of harness jobs.
#include "harness/job_policy.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

namespace cuda_agent {
namespace {

uint64_t DefaultJobMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page / 4 * 3 : 0;
}

}  // namespace

void AddWithRealPath(std::vector<fs::path>& paths, const fs::path& p) {
  if (p.empty()) return;
  std::error_code ec;
  paths.push_back(p);
  fs::path real = fs::canonical(p, ec);
  if (!ec && real != p) paths.push_back(real);
}

std::string PythonInside(const Toolchain& toolchain) {
  const Json& raw = toolchain.raw;
  return raw.value("python_executable", Json("")).is_string()
             ? raw.value("python_executable", std::string())
             : std::string();
}

SandboxPolicy BaseJobPolicy(const Toolchain& toolchain, const JobLimits& limits) {
  SandboxPolicy p;
  std::vector<fs::path>& ro = p.read_only;
  std::string python = PythonInside(toolchain);
  if (!python.empty()) {
    AddWithRealPath(ro, fs::path(python).parent_path().parent_path());
    std::error_code ec;
    fs::path real = fs::canonical(python, ec);  // a venv's interpreter links to its base prefix
    if (!ec) AddWithRealPath(ro, real.parent_path().parent_path());
  }
  const Json& raw = toolchain.raw;
  if (raw.contains("torch_init_path") && raw["torch_init_path"].is_string()) {
    AddWithRealPath(
        ro, fs::path(raw["torch_init_path"].get<std::string>()).parent_path().parent_path());
  }
  for (const auto& d : toolchain.include_dirs) AddWithRealPath(ro, d);
  for (const auto& d : toolchain.library_dirs) AddWithRealPath(ro, d);
  AddWithRealPath(ro, toolchain.python_include);
  AddWithRealPath(ro, toolchain.cuda_home);
  p.hidden = {limits.cache_dir};
  p.gpu = limits.device == Device::kCuda;
  p.memory_bytes = limits.memory_bytes ? limits.memory_bytes : DefaultJobMemory();
  p.max_pids = limits.max_pids;
  p.limits.processes = limits.max_pids;
  p.limits.file_size_bytes = 64ull << 30;
  p.limits.open_files = 4096;
  // CPU seconds: a backstop behind the wall-clock watchdog (threads can burn several CPUs at once).
  p.limits.cpu_seconds = static_cast<uint64_t>(limits.cpu_timeout_s *
                                               std::max(1u, std::thread::hardware_concurrency()));
  return p;
}

}  // namespace cuda_agent
