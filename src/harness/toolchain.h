// toolchain.h — what the installed PyTorch needs from a compiler: include and library folders, the
// C++ ABI flag, the Python headers, the CUDA home, and the GPU's architecture. Discovered once by
// the harness's `toolchain` job and cached per (python, device, host) until torch changes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/device.h"
#include "common/json.h"
#include "harness/client.h"

namespace cuda_agent {

struct GpuInfo {
  std::string name;        // "NVIDIA H100 80GB HBM3"
  std::string capability;  // "9.0"
  std::string arch;        // "sm_90"
};

struct Toolchain {
  Device device = Device::kCpu;
  std::string python_version;
  std::string torch_version;
  std::string torch_cuda_version;  // empty on CPU builds of torch
  bool cxx11_abi = true;
  std::vector<std::string> include_dirs;
  std::vector<std::string> library_dirs;
  std::string python_include;
  std::string cuda_home;
  std::optional<GpuInfo> gpu;
  Json raw;  // the harness's full answer, for the JudgeResult's env section

  // Fingerprint changes whenever a compiled object could differ.
  std::string Fingerprint() const;
};

// DiscoverToolchain asks the harness (or the cache under `cache_dir`).
Result<Toolchain> DiscoverToolchain(const HarnessEnv& env, Device device, const fs::path& cache_dir,
                                    const fs::path& scratch_dir);

Result<Toolchain> ToolchainFromJson(const Json& raw, Device device);

}  // namespace cuda_agent
