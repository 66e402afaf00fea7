// judge_gateway.h — how sandboxed workspace commands reach the judge without nesting sandboxes.
// The solve process listens on a Unix socket in a folder bound into the Bash sandbox. Inside, the
// environment variable CUDA_AGENT_JUDGE_GATEWAY=<socket> makes `cuda-agent build|judge|profile`
// forward its argv and cwd over the socket (RunViaJudgeGateway) and print the answer, so `bash
// utils/compile.sh`, `python3 -m utils.verification`, `python3 -m utils.profiling` and `python3 -m
// utils.ncu` print what they always print. Outside, the gateway runs the real command, but only
// `build`, `judge` and `profile --ncu` (whose report never counts as a verdict), with
// the candidate fixed to the episode's workspace, the task fixed to the episode's task, and the
// device, precision policy, timeouts and cache fixed to the episode's JudgeOptions: everything
// else is refused (docs/agent.md, "Judge gateway").
//
//   Result<std::unique_ptr<JudgeGateway>> gw = JudgeGateway::Start(config);
//   tool_context.env_set.push_back("CUDA_AGENT_JUDGE_GATEWAY=" + (*gw)->SocketPath().string());
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "judge/judge.h"

namespace cuda_agent {

inline constexpr const char* kJudgeGatewayEnv = "CUDA_AGENT_JUDGE_GATEWAY";

struct JudgeGatewayConfig {
  fs::path socket_dir;    // created if missing; the socket is socket_dir/judge.sock
  fs::path workspace;     // the only candidate
  std::string task_spec;  // the only task, as `judge --task` takes it
  // The session's judge options: the device, the policy and every other flag of the commands run
  // (judge/judge_args.h), and their time limit (JudgementTimeLimit).
  JudgeOptions judge;
  fs::path binary;  // the cuda-agent binary that runs build/judge outside the sandbox
};

// GatewayVerdict is what an in-loop `judge --json` answered.
struct GatewayVerdict {
  std::string until;  // build, verify or profile
  std::optional<double> reward;
  bool correct = false;
  std::string reason;
};

class JudgeGateway {
 public:
  static Result<std::unique_ptr<JudgeGateway>> Start(JudgeGatewayConfig config);
  ~JudgeGateway();
  void Stop();
  fs::path SocketPath() const { return socket_path_; }

  // Translate checks a forwarded command (argv[0] is build, judge or profile) and returns the argv
  // run outside.
  Result<std::vector<std::string>> Translate(const std::vector<std::string>& argv,
                                             const std::string& cwd) const;
  // Handle answers one request {"argv": [...], "cwd": "..."} with {"exit_code", "stdout",
  // "stderr"}.
  Json Handle(const Json& request);
  // Best: the in-loop verdict with the highest reward so far (a correct one wins ties).
  std::optional<GatewayVerdict> Best() const;
  int Requests() const { return requests_; }

  explicit JudgeGateway(JudgeGatewayConfig config) : config_(std::move(config)) {}

 private:
  void Serve();
  JudgeGatewayConfig config_;
  fs::path socket_path_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::optional<GatewayVerdict> best_;
  std::atomic<int> requests_{0};
};

// RunViaJudgeGateway is `cuda-agent build|judge|profile ...` inside the sandbox: sends the command
// to the gateway at `socket_path`, prints its stdout/stderr, returns its exit status (4 when
// unreachable).
int RunViaJudgeGateway(const std::string& socket_path, const std::string& command,
                       const std::vector<std::string>& args);

}  // namespace cuda_agent
