// mcp_command.cc — `cuda-agent mcp --task TASK`: one MCP session over stdio for a coding agent
// (Claude Code, Cursor, any MCP client that starts servers as processes). An Environment runs in
// this process with no HTTP; stdout carries only JSON-RPC, every log line goes to stderr
// (docs/server.md, "MCP").
#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <ext/stdio_filebuf.h>
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "cli/options.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "harness/client.h"
#include "server/environment.h"
#include "server/mcp.h"

namespace cuda_agent {
namespace {

const std::vector<OptionSpec>& McpSpecs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> own = {
        {"state-dir", true,
         "the session's folder (workspace, jobs, server.sqlite); default: a fresh folder under "
         "<cache-dir>/mcp/",
         ""},
        {"turn-limit", true, "tool calls at most", "150"},
    };
    // The judge's flags, but a candidate comes from the session's workspace.
    for (const OptionSpec& spec : JudgeSpecs()) {
      if (spec.name != "candidate" && spec.name != "json" && spec.name != "out") {
        own.push_back(spec);
      }
    }
    return own;
  }();
  return specs;
}

// FreshStateDir: <cache>/mcp/<UTC time>-<pid>, so two agents' servers never share a store.
fs::path FreshStateDir(const fs::path& cache_dir) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
  fs::path base = cache_dir.empty() ? DefaultCacheDir() : cache_dir;
  return base / "mcp" / (std::string(stamp) + "-" + std::to_string(getpid()));
}

}  // namespace

int McpCommand(const Args& args) {
  const auto& specs = McpSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("mcp", a.status().message(), specs);
  if (!a->positional().empty()) return UsageError("mcp", "unexpected arguments", specs);
  if (a->Get("task").empty()) return UsageError("mcp", "--task is required", specs);
  Result<JudgeOptions> judge_options = OptionsFromArgs(a.value());
  if (!judge_options.ok()) return UsageError("mcp", judge_options.status().message(), specs);
  Result<int> turn_limit = ParseIntFlag(a.value(), "turn-limit");
  if (!turn_limit.ok() || turn_limit.value() < 1) {
    return UsageError("mcp", "--turn-limit expects a positive integer", specs);
  }
  Result<HarnessEnv> harness = HarnessEnv::Discover();
  if (!harness.ok()) {
    std::cerr << "cuda-agent mcp: " << harness.status().message() << "\n";
    return kExitInternal;
  }
  EnvironmentOptions options;
  options.state_dir = a->Get("state-dir").empty() ? FreshStateDir(judge_options->cache_dir)
                                                  : fs::path(a->Get("state-dir"));
  options.judge = judge_options.value();
  options.binary = ExecutablePath();
  options.env = harness.value();
  options.default_turn_limit = turn_limit.value();
  options.max_sessions = 1;
  // An agent may think for a long time between calls; the session ends with the process.
  options.default_ttl_s = 7 * 24 * 3600;
  options.version = CUDA_AGENT_VERSION;

  InProcessJudge judge(harness.value());
  Result<std::unique_ptr<Environment>> env = Environment::Open(options, judge);
  if (!env.ok()) {
    std::cerr << "cuda-agent mcp: " << env.status().message() << "\n";
    return kExitInternal;
  }
  std::cerr << "cuda-agent mcp: task " << a->Get("task") << " on " << a->Get("device")
            << ", state in " << options.state_dir.string() << "\n";
  McpOptions mcp_options{.task = a->Get("task"),
                         .device = a->Get("device"),
                         .policy = a->Get("policy"),
                         .server_version = CUDA_AGENT_VERSION};
  // The protocol gets private copies of stdin and stdout; fd 1 becomes stderr and fd 0 /dev/null,
  // so nothing this process or its children print or read can break the JSON-RPC stream.
  int protocol_in = dup(STDIN_FILENO);
  int protocol_out = dup(STDOUT_FILENO);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (protocol_in < 0 || protocol_out < 0 || null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
      dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::cerr << "cuda-agent mcp: cannot set up stdin/stdout\n";
    return kExitInternal;
  }
  close(null_fd);
  fcntl(protocol_in, F_SETFD, FD_CLOEXEC);
  fcntl(protocol_out, F_SETFD, FD_CLOEXEC);
  __gnu_cxx::stdio_filebuf<char> in_buffer(protocol_in, std::ios::in);
  __gnu_cxx::stdio_filebuf<char> out_buffer(protocol_out, std::ios::out);
  std::istream in(&in_buffer);
  std::ostream out(&out_buffer);
  Status served;
  {
    McpServer mcp(*env.value(), mcp_options);
    served = RunMcpStdio(mcp, {}, in, out);
  }
  // The workspace stays: <state-dir>/sessions/<id>/workspace.
  env.value()->Shutdown(5);
  if (!served.ok()) {
    std::cerr << "cuda-agent mcp: " << served.message() << "\n";
    return kExitUsage;
  }
  return 0;
}

}  // namespace cuda_agent
