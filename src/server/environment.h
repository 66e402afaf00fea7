// environment.h — what `cuda-agent serve` holds, independent of the wire: the open sessions
// (agent/session.h) with their call records, the one-shot evaluations, and the limits that keep a
// server alive under load. The HTTP face (server/http_api) and the MCP face (server/mcp) both call
// this class; neither owns state of its own nor checks more than the wire's shape. Environment is
// a facade over the rooms that do the work: request_checks (a request's contents, checked once),
// session_registry (live sessions and their reaper), judgement_queue (per device), job_runner (the
// bounded pool of asynchronous evaluations), status_queries (the status page's data) and
// store/session_store (everything durable: after a restart, every finished call and grade is
// answered again by its id, and sessions that were open are reopened from their folders or marked
// `interrupted`).
//
//   Environment env(options, judge);
//   Result<SessionOpened> s = env.OpenSession({.task = Json("examples/relu_scale/model.py")});
//   Result<CallAnswer> a = env.Call(s->session_id, "c1", "Read", R"({"file_path": "model.py"})");
//   Result<GradeAnswer> g = env.Grade(s->session_id);
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/session.h"
#include "common/json.h"
#include "judge/judge_service.h"
#include "server/api_result.h"

namespace cuda_agent {

struct EnvironmentOptions {
  fs::path state_dir;  // sessions/<id>/ folders and server.sqlite
  JudgeOptions judge;  // defaults for device, policy, timeouts, cache folder
  fs::path binary;     // this cuda-agent binary (the workspaces' utils/ call it)
  HarnessEnv env;
  size_t max_sessions = 256;     // open at once; beyond: 429
  size_t queue_per_device = 8;   // judgements (grades, evaluations, in-loop judging) waiting per
                                 // device; beyond: 429 with Retry-After
  double default_ttl_s = 3600;   // idle sessions are reaped after their TTL (record kept: expired)
  int default_turn_limit = 150;  // tool calls per session
  size_t judge_workers = 1;      // judgements running at once per device
  std::string version;           // for /v1/health
  double reap_interval_s = 1;    // how often the reaper looks for expired sessions
  // Remote judging (serve --redis): the workers' state for /v1/health, {"workers": [{name, host,
  // device, heartbeat_age_s, consumers: [...]}], "queues": {...}} or {"error": "..."}; called on
  // every health request, so it must answer at once (a cached read). Empty: judging is
  // in-process and health's "workers" is [].
  std::function<Json()> workers;
};

struct OpenSessionRequest {
  Json task;           // a reference string, or {"source": "...", "name"?: "..."}
  std::string device;  // empty: the server's default
  std::string policy;  // empty: the server's default
  int turn_limit = 0;  // 0: the default
  double ttl_s = 0;    // 0: the default
};

struct SessionOpened {
  std::string session_id;
  std::string system_prompt;
  std::string task_message;
  std::vector<ToolSpec> tools;
  int turn_limit = 0;
  double expires_at = 0;  // Unix seconds
};

struct CallAnswer {
  std::string call_id;
  Observation observation;
  int calls_used = 0;
  int turn_limit = 0;
  bool replayed = false;  // the call_id was answered before; nothing ran again
};

struct GradeAnswer {
  std::string session_id;
  Json result;  // the JudgeResult's JSON
  Json reward;  // number or null (not a verdict)
};

class Environment {
 public:
  // Open opens (or creates) the store under options.state_dir and reopens the sessions that were
  // open when the last server stopped (or marks them interrupted when their folder is gone).
  static Result<std::unique_ptr<Environment>> Open(EnvironmentOptions options, JudgeService& judge);
  ~Environment();

  ApiResult<SessionOpened> OpenSession(const OpenSessionRequest& request);
  ApiResult<Json> SessionStatus(const std::string& session_id);
  ApiResult<CallAnswer> Call(const std::string& session_id, const std::string& call_id,
                             const std::string& tool, const std::string& arguments_text);
  ApiResult<GradeAnswer> Grade(const std::string& session_id);
  ApiResult<Json> CloseSession(const std::string& session_id);
  // Evaluate judges inline files against a task (single-turn RL); wait=false answers a job id.
  ApiResult<Json> Evaluate(const Json& task, const Json& files, const std::string& device,
                           const std::string& policy, bool wait);
  ApiResult<Json> Job(const std::string& job_id);

  std::vector<ToolSpec> Tools() const;
  Json Health() const;  // /v1/health
  // StatusPage: what the status page shows (server/status_page.h): {"health", "now", "sessions",
  // "recent_grades": [{"session_id"|"job_id", "task", "reward", "reason", "at"}] (grades and
  // finished evaluations, newest first), "throughput": {"bucket_s": 300, "counts": [12, oldest
  // first]}, "calls_last_minute", "uptime_s"}.
  Json StatusPage() const;
  // SetJudgeWorkers sets how many judgements of `device` run at once (at least 1): with a remote
  // judge, the live consumers of its queue (serve --redis); the 429 bound is this plus
  // queue_per_device.
  void SetJudgeWorkers(const std::string& device, size_t workers);
  // ReapExpired closes sessions idle past their TTL (workspace removed, record kept as expired).
  void ReapExpired();
  // Shutdown stops accepting work (503), waits for running calls up to `grace_s`, closes sessions
  // (their folders stay, so a restart reopens them).
  void Shutdown(double grace_s);
  // Stopping: Shutdown has begun; every face answers new work with 503.
  bool Stopping() const;

 private:
  struct State;
  explicit Environment(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cuda_agent
