// host_environment.h — the process environment, the one place cuda-agent reads it.
//
// A judgement's settings are options (judge/judge_options.h) that travel in its request; what is
// left in the environment is the host's own: where things are (HOME, PATH, CUDA_HOME, the harness,
// the cache), how this host isolates and logs, credentials for the agent's model. Each variable is
// declared once in HostVariables() with what it is for; the command line's edge (cli/main.cc)
// captures them all before any command runs, and below it modules ask HostValue() — no module
// calls getenv (tests/build/test_host_environment.py fails on one that does). docs/cli.md lists
// every variable (the same test checks).
#pragma once

#include <string>
#include <vector>

namespace cuda_agent {

enum class HostVar {
  kHome,                // HOME
  kPath,                // PATH
  kXdgCacheHome,        // XDG_CACHE_HOME
  kCacheDir,            // CUDA_AGENT_CACHE_DIR
  kLog,                 // CUDA_AGENT_LOG
  kSandbox,             // CUDA_AGENT_SANDBOX
  kBubblewrap,          // CUDA_AGENT_BWRAP
  kHarnessHome,         // CUDA_AGENT_HOME
  kPython,              // CUDA_AGENT_PYTHON
  kForkServer,          // CUDA_AGENT_FORK_SERVER
  kForkServerIdle,      // CUDA_AGENT_FORK_SERVER_IDLE
  kPythonPath,          // PYTHONPATH
  kNcuPath,             // CUDA_AGENT_NCU_PATH
  kCudaHome,            // CUDA_HOME
  kCudaPath,            // CUDA_PATH
  kCudaVisibleDevices,  // CUDA_VISIBLE_DEVICES
  kTesting,             // CUDA_AGENT_TESTING
  kLibcurl,             // CUDA_AGENT_LIBCURL
  kNoProxy,             // no_proxy
  kNoProxyUpper,        // NO_PROXY
  kOpenAiApiKey,        // OPENAI_API_KEY
  kAnthropicApiKey,     // ANTHROPIC_API_KEY
  kAnthropicBaseUrl,    // ANTHROPIC_BASE_URL
  kCount,
};

struct HostVariable {
  HostVar var;
  const char* name;     // the environment variable
  const char* purpose;  // one line for docs/cli.md
};

// HostVariables declares every variable the program reads besides the CUDA_AGENT_<FLAG> mirrors
// of command-line flags (read by the option parser, cli/options.cc), in HostVar's order.
const std::vector<HostVariable>& HostVariables();

// CaptureHostEnvironment reads every declared variable from the process environment, replacing the
// values read before. cli/main.cc calls it once before a command runs; a test calls it again after
// it changes the environment. Not to be called while other threads read (HostValue).
void CaptureHostEnvironment();

// HostValue is the captured value of `var`, "" when unset or empty (captured on first use when no
// one captured before: unit tests, fuzz targets).
const std::string& HostValue(HostVar var);

// HostSwitchedOff: whether `var` is "0" — how a CUDA_AGENT_* host switch turns a default-on
// behaviour off (unset, empty or any other value leaves it on).
bool HostSwitchedOff(HostVar var);

}  // namespace cuda_agent
