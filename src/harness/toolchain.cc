// toolchain.cc — discovery through the harness, with a cache that is checked against torch's files.
#include "harness/toolchain.h"

#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"

namespace cuda_agent {

std::string Toolchain::Fingerprint() const {
  Json key = {{"device", DeviceName(device)},     {"torch", torch_version},
              {"torch_cuda", torch_cuda_version}, {"abi", cxx11_abi},
              {"include", include_dirs},          {"python_include", python_include},
              {"cuda_home", cuda_home},           {"arch", gpu ? gpu->arch : ""}};
  return Sha256Hex(key.dump());
}

Result<Toolchain> ToolchainFromJson(const Json& raw, Device device) {
  try {
    Toolchain tc;
    tc.device = device;
    tc.raw = raw;
    tc.python_version = raw.value("python_version", "");
    tc.torch_version = raw.value("torch_version", "");
    if (raw.contains("torch_cuda_version") && raw["torch_cuda_version"].is_string()) {
      tc.torch_cuda_version = raw["torch_cuda_version"].get<std::string>();
    }
    tc.cxx11_abi = raw.value("cxx11_abi", true);
    tc.include_dirs = raw.value("include_dirs", std::vector<std::string>{});
    tc.library_dirs = raw.value("library_dirs", std::vector<std::string>{});
    tc.python_include = raw.value("python_include", "");
    if (raw.contains("cuda_home") && raw["cuda_home"].is_string()) {
      tc.cuda_home = raw["cuda_home"].get<std::string>();
    }
    if (raw.contains("gpu") && raw["gpu"].is_object()) {
      const Json& g = raw["gpu"];
      tc.gpu = GpuInfo{g.value("name", ""), g.value("capability", ""), g.value("arch", "")};
    }
    if (tc.torch_version.empty())
      return FailedPrecondition("the harness reported no torch version");
    if (device == Device::kCuda && tc.torch_cuda_version.empty()) {
      return FailedPrecondition("device cuda requested, but torch " + tc.torch_version +
                                " is a CPU-only build");
    }
    if (device == Device::kCuda && !tc.gpu) {
      return FailedPrecondition("device cuda requested, but torch sees no GPU");
    }
    return tc;
  } catch (const Json::exception& e) {
    return Internal(std::string("malformed toolchain description: ") + e.what());
  }
}

namespace {

bool CacheStillValid(const Json& cached) {
  // torch_init_path's modification time is recorded; a reinstall changes it.
  std::string init = cached.value("torch_init_path", "");
  if (init.empty()) return false;
  std::error_code ec;
  auto mtime = fs::last_write_time(init, ec);
  if (ec) return false;
  return cached.value("torch_init_mtime", int64_t{-1}) ==
         static_cast<int64_t>(mtime.time_since_epoch().count());
}

}  // namespace

Result<Toolchain> DiscoverToolchain(const HarnessEnv& env, Device device, const fs::path& cache_dir,
                                    const fs::path& scratch_dir) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  Result<std::string> python = FindExecutable(env.python);
  std::string key = Sha256Hex(std::string(python.ok() ? python.value() : env.python) + "|" +
                              DeviceName(device) + "|" + host)
                        .substr(0, 16);
  fs::path cache_file = cache_dir / "toolchain" / (key + ".json");
  if (Result<Json> cached = ReadJsonFile(cache_file);
      cached.ok() && CacheStillValid(cached.value())) {
    return ToolchainFromJson(cached.value(), device);
  }
  Result<JobOutcome> job =
      RunHarnessJob(env, "toolchain", Json{{"device", DeviceName(device)}}, scratch_dir, 180);
  if (!job.ok()) return job.status();
  if (!job->Ok()) {
    std::string why =
        job->has_result ? job->Reason() : job->process.Describe() + ": " + job->StderrTail(5);
    return FailedPrecondition("toolchain discovery failed: " + why);
  }
  Json raw = job->result;
  std::error_code ec;
  auto mtime = fs::last_write_time(raw.value("torch_init_path", ""), ec);
  if (!ec) raw["torch_init_mtime"] = static_cast<int64_t>(mtime.time_since_epoch().count());
  Result<Toolchain> tc = ToolchainFromJson(raw, device);
  if (tc.ok()) {
    Status saved = WriteJsonFile(cache_file, raw);
    if (!saved.ok()) LogWarn("cannot cache the toolchain: " + saved.message());
  }
  return tc;
}

}  // namespace cuda_agent
