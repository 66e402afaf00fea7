// host_environment.cc — the declared variables and their snapshot (host_environment.h).
#include "common/host_environment.h"

#include <array>
#include <cstdlib>
#include <mutex>

namespace cuda_agent {
namespace {

constexpr size_t kCount = static_cast<size_t>(HostVar::kCount);

struct Snapshot {
  std::mutex mutex;
  bool captured = false;
  std::array<std::string, kCount> values;
};

Snapshot& TheSnapshot() {
  static Snapshot snapshot;
  return snapshot;
}

void CaptureLocked(Snapshot& s) {
  for (const HostVariable& v : HostVariables()) {
    const char* value = std::getenv(v.name);  // NOLINT(concurrency-mt-unsafe): before threads
    s.values[static_cast<size_t>(v.var)] = value != nullptr ? value : "";
  }
  s.captured = true;
}

}  // namespace

const std::vector<HostVariable>& HostVariables() {
  using V = HostVar;
  static const std::vector<HostVariable> variables = {
      {V::kHome, "HOME", "the user's home: the default cache folder, hidden from judged code"},
      {V::kPath, "PATH", "where nvcc, g++, ncu, bwrap and other tools are found"},
      {V::kXdgCacheHome, "XDG_CACHE_HOME",
       "the cache's parent folder when CUDA_AGENT_CACHE_DIR is unset"},
      {V::kCacheDir, "CUDA_AGENT_CACHE_DIR",
       "the cache (builds, baselines, results); default ~/.cache/cuda-agent"},
      {V::kLog, "CUDA_AGENT_LOG", "log level on stderr: error, warn (default), info, debug"},
      {V::kSandbox, "CUDA_AGENT_SANDBOX",
       "bwrap, jail or none: how judged code is isolated (default: bubblewrap when it works, else "
       "the jail, else none; docs/sandbox.md)"},
      {V::kBubblewrap, "CUDA_AGENT_BWRAP",
       "the bubblewrap executable (default: beside the binary, then PATH)"},
      {V::kHarnessHome, "CUDA_AGENT_HOME",
       "the cuda-agent folder holding python/cuda_agent_harness"},
      {V::kPython, "CUDA_AGENT_PYTHON", "the Python that runs the harness (default python3)"},
      {V::kForkServer, "CUDA_AGENT_FORK_SERVER",
       "0: start each harness job as a fresh Python instead of forking a warm one"},
      {V::kForkServerIdle, "CUDA_AGENT_FORK_SERVER_IDLE",
       "seconds an idle fork server lives (default 600)"},
      {V::kPythonPath, "PYTHONPATH",
       "kept after the harness's own folder for the harness's children"},
      {V::kNcuPath, "CUDA_AGENT_NCU_PATH",
       "the ncu executable for `profile` (default: CUDA's folders, then PATH)"},
      {V::kCudaHome, "CUDA_HOME", "a CUDA installation searched for ncu"},
      {V::kCudaPath, "CUDA_PATH", "a CUDA installation searched for ncu"},
      {V::kCudaVisibleDevices, "CUDA_VISIBLE_DEVICES",
       "the GPUs this process sees; names its device lease"},
      {V::kTesting, "CUDA_AGENT_TESTING", "1: allow test-only switches (never in production)"},
      {V::kLibcurl, "CUDA_AGENT_LIBCURL",
       "the libcurl the LLM clients load (default libcurl.so.4)"},
      {V::kNoProxy, "no_proxy", "hosts the LLM clients reach without a proxy (loopback always)"},
      {V::kNoProxyUpper, "NO_PROXY", "as no_proxy, when no_proxy is unset"},
      {V::kOpenAiApiKey, "OPENAI_API_KEY", "the key of an OpenAI-compatible model server"},
      {V::kAnthropicApiKey, "ANTHROPIC_API_KEY",
       "the key of Anthropic's API (a loopback base URL needs none)"},
      {V::kAnthropicBaseUrl, "ANTHROPIC_BASE_URL",
       "Anthropic's API address (default https://api.anthropic.com)"},
  };
  return variables;
}

void CaptureHostEnvironment() {
  Snapshot& s = TheSnapshot();
  std::lock_guard<std::mutex> lock(s.mutex);
  CaptureLocked(s);
}

const std::string& HostValue(HostVar var) {
  Snapshot& s = TheSnapshot();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.captured) CaptureLocked(s);
  }
  return s.values[static_cast<size_t>(var)];
}

bool HostSwitchedOff(HostVar var) { return HostValue(var) == "0"; }

}  // namespace cuda_agent
