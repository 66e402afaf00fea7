// agent_loop.h — the ReAct loop of one episode: send the conversation (system prompt = SKILL.md,
// the task as the first message) with the tool specs, run each tool call and append its
// observation, until the model answers without a tool call, the turn limit or the time limit is
// hit, the context budget cannot be met, or the LLM client fails. Malformed calls become error
// observations; the loop never crashes on them. Every event goes to the trajectory (JSONL, flushed
// as it goes). The tools are whatever `call_tool` reaches: an episode passes its session's Call
// (agent/episode.h), a test a registry of its own.
//
//   TrajectoryWriter trajectory;  trajectory.Open(out / "trajectory.jsonl");
//   LoopSummary s = RunReactLoop(*client, session.ToolSpecs(),
//       [&](const std::string& tool, const std::string& args) { return session.Call(tool, args); },
//       config, trajectory, on_turn);
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <string>

#include "agent/context_budget.h"
#include "agent/tools.h"
#include "llm/llm_client.h"

namespace cuda_agent {

inline constexpr int kTrajectoryVersion = 1;

// TrajectoryWriter appends one JSON record per line, flushed at once; each record gets
// {"version", "type", "time"} (time: seconds since the episode started).
class TrajectoryWriter {
 public:
  TrajectoryWriter() = default;
  ~TrajectoryWriter();
  TrajectoryWriter(const TrajectoryWriter&) = delete;
  TrajectoryWriter& operator=(const TrajectoryWriter&) = delete;
  Status Open(const fs::path& path);
  void Write(const std::string& type, Json record);

 private:
  std::FILE* file_ = nullptr;
  double started_ = 0;
};

struct LoopConfig {
  std::string system_prompt;  // SKILL.md
  std::string task_message;   // the first user message: the goal and model.py
  int max_turns = 200;
  ContextBudgetOptions budget;
  double temperature = -1;
  const std::atomic<bool>* interrupted = nullptr;  // set by a signal handler: stop between turns
  double time_limit_s = 0;  // no new turn once the loop has run this long; 0: no limit
};

struct LoopSummary {
  // model_finished | max_turns | time_limit | context_budget | interrupted | llm_error: ...
  std::string stop_reason;
  int turns = 0;       // assistant replies received
  long tokens_in = 0;  // prompt tokens summed over requests (reported, else estimated)
  long tokens_out = 0;
  bool tokens_estimated = false;
  double wall_s = 0;
  double llm_s = 0;
  int llm_attempts = 0;
  int tool_calls = 0;
  int tool_errors = 0;
  int elided_observations = 0;
};

// TurnProgress is what a progress display gets after each turn.
struct TurnProgress {
  int turn = 0;
  int max_turns = 0;
  std::string last_tool;  // "Bash: bash utils/compile.sh"
  int tool_calls = 0;     // in this turn
  int tool_errors = 0;
  double turn_s = 0;
};

// ToolCaller runs one tool call of the model (arguments as the model sent them) and never throws
// for a malformed call: that is an error observation.
using ToolCaller =
    std::function<Observation(const std::string& tool, const std::string& arguments_text)>;

// RunReactLoop runs the turns; `tools` are the specs sent with every request.
LoopSummary RunReactLoop(LlmClient& client, const std::vector<ToolSpec>& tools,
                         const ToolCaller& call_tool, const LoopConfig& config,
                         TrajectoryWriter& trajectory,
                         const std::function<void(const TurnProgress&)>& on_turn = {});

// SummariseCall renders a tool call for a progress line: "Bash: make -j", "Edit: kernels/a.cu".
std::string SummariseCall(const ToolCall& call, size_t max_chars = 70);

// TaskMessage is the first user message: the goal, the workspace, the device and model.py.
std::string TaskMessage(const std::string& model_py, const std::string& device,
                        const std::string& workspace);

}  // namespace cuda_agent
