// episode.h — one agent episode as a library call: a session (agent/session.h) driven by an LLM
// through the ReAct loop (agent/agent_loop.h), then graded in-process by the judge service.
// `cuda-agent solve` is flags → EpisodeSpec → RunEpisode → exit status; `bench --solver agent:M`
// calls RunEpisode per task on its own threads. The episode folder (docs/agent.md):
//   OUT/workspace/ OUT/trajectory.jsonl OUT/result.json OUT/jobs/ OUT/gateway/
//
//   EpisodeSpec spec{.task_spec = "examples/relu_scale/model.py", .task = task,
//                    .model_spec = "replay:s.jsonl", .out = "ep", .binary = ExecutablePath(),
//                    .env = env};
//   spec.judge.device = Device::kCpu;
//   InProcessJudge judge(env);
//   EpisodeResult r = RunEpisode(spec, *client, judge, on_progress, &interrupted);
//   if (r.status.ok()) std::cout << r.record["reward"];
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "agent/agent_loop.h"
#include "agent/session.h"
#include "judge/judge_service.h"
#include "llm/llm_client.h"

namespace cuda_agent {

inline constexpr int kEpisodeResultVersion = 1;

struct EpisodeSpec {
  std::string task_spec;   // as `judge --task` takes it
  Task task;               // the loaded task
  std::string model_spec;  // for the records (the client itself is passed to RunEpisode)
  fs::path out;            // the episode folder; it must not hold a workspace already
  int max_turns = 200;
  int context_tokens = 131072;
  int max_output_tokens = 8192;  // per reply, reserved from the context budget
  double temperature = -1;       // < 0: the provider's default
  LlmOptions llm;                // how the caller makes the client (MakeLlmClient)
  double time_limit_s = 0;       // no new turn after this long; 0: none
  // Device, precision policy, timeouts, cache: for the in-loop `build`/`judge` commands (through
  // the gateway) and the final grade alike.
  JudgeOptions judge;
  bool grade = true;  // false: no final grade (the caller judges the workspace itself)
  fs::path binary;    // the cuda-agent binary the workspace's utils/ call
  HarnessEnv env;
  const Sandbox* sandbox = nullptr;  // the tools' sandbox; null: Sandbox::Default()
};

// EpisodeProgress is what a progress display gets: the start, each turn, and the grade's start.
struct EpisodeProgress {
  enum class Phase { kStarted, kTurn, kGrading };
  Phase phase = Phase::kStarted;
  std::string client;  // the client's description
  TurnProgress turn;   // kTurn
  std::optional<GatewayVerdict> best_in_loop;
  std::string stop_reason;  // kGrading
};
using EpisodeProgressFn = std::function<void(const EpisodeProgress&)>;

struct EpisodeResult {
  // OK: the episode ran (whatever its reward; the stop reason says how it ended). Otherwise it did
  // not start: FailedPrecondition when `out` holds an episode already (nothing was written there),
  // Internal when the workspace, gateway or trajectory could not be made (result.json says why).
  Status status;
  Json record = Json::object();  // OUT/result.json as last written
  LoopSummary loop;
  std::optional<JudgeResult> judgement;  // the final grade, when one ran
};

// RunEpisode runs one episode: result.json written at the start, after the loop and after the
// grade; the trajectory as it goes. `interrupted` (may be null) stops it between turns; the grade
// still runs. Never throws.
EpisodeResult RunEpisode(const EpisodeSpec& spec, LlmClient& client, JudgeService& judge,
                         const EpisodeProgressFn& on_progress = {},
                         const std::atomic<bool>* interrupted = nullptr);

// EpisodeNotRun records an episode that could not start before RunEpisode (no model client, no
// harness): OUT/result.json with the episode's fields and `stop_reason`. FailedPrecondition, and
// nothing written, when `out` holds an episode already.
EpisodeResult EpisodeNotRun(const EpisodeSpec& spec, const std::string& stop_reason);

// BestInLoopText renders an in-loop verdict for progress lines: "verify: correct", "profile:
// reward 2", "none".
std::string BestInLoopText(const std::optional<GatewayVerdict>& best);

}  // namespace cuda_agent
