// session.h — one environment session: the task's workspace, the agent's tools in the sandbox, the
// judge gateway that the workspace's utils/ reach, the background Bash jobs, and the final grade.
// Nothing here talks to a model: an episode (agent/episode.h) is a session driven by an LLM, and
// the environment server (server/) drives sessions from HTTP and MCP calls. One session is one
// folder on disk (workspace/, jobs/, gateway/), so a restarted server can reopen it.
//
//   SessionSpec spec{.task_spec = "examples/relu_scale/model.py", .task = task, .dir = "s/1", ...};
//   Result<std::unique_ptr<Session>> s = Session::Open(spec, judge);
//   Observation o = (*s)->Call("Bash", R"({"command": "bash utils/compile.sh"})");
//   JudgeResult r = (*s)->Grade();
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/judge_gateway.h"
#include "agent/tools.h"
#include "judge/judge_service.h"
#include "task/task.h"

namespace cuda_agent {

struct SessionSpec {
  std::string task_spec;  // as `judge --task` takes it; the gateway's only task
  Task task;              // the loaded task (its code becomes model.py)
  fs::path dir;           // the session folder; workspace/ inside it
  JudgeOptions judge;     // device, policy, timeouts, cache folder: for grades and in-loop judging
  fs::path binary;  // the cuda-agent binary the workspace's utils/ call (and the gateway runs)
  HarnessEnv env;
  bool reopen = false;               // attach to the workspace already in `dir` (after a restart)
  const Sandbox* sandbox = nullptr;  // null: Sandbox::Default()
};

class Session {
 public:
  // Open makes (or, with spec.reopen, reattaches to) the session folder and starts the gateway.
  // FailedPrecondition when dir/workspace holds files already (without reopen); NotFound when
  // reopen finds no workspace there; Internal when the workspace or the gateway cannot be made.
  static Result<std::unique_ptr<Session>> Open(SessionSpec spec, JudgeService& judge);
  ~Session();  // Close()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const fs::path& Workspace() const;
  const SessionSpec& Spec() const;
  std::string SystemPrompt() const;  // the workspace's SKILL.md
  std::string TaskMessage() const;   // the first user message: goal, device, model.py
  std::vector<ToolSpec> ToolSpecs() const;

  // Call runs one tool call (arguments as JSON text); calls of one session run one at a time.
  // A malformed call is an error observation, never a crash.
  Observation Call(const std::string& tool, const std::string& arguments_text);
  // Grade judges the workspace as it is now with the full pipeline (JudgeService::Evaluate, the
  // request's .workspace set so its protected files are checked); it waits for a call in flight.
  JudgeResult Grade();
  // BestInLoop: the best verdict the workspace's utils/ got so far.
  std::optional<GatewayVerdict> BestInLoop() const;
  // Close stops background jobs and the gateway; the folder stays. Idempotent; it does not wait for
  // a call in flight. Afterwards Call answers an error observation; Grade still works.
  void Close();

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cuda_agent
