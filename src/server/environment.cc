// environment.cc — the facade of `serve`'s rooms: it checks a request once (server/request_checks),
// keeps the live sessions in the registry (server/session_registry, with its reaper), runs
// asynchronous evaluations on the bounded pool (server/job_runner), queues judgements per device
// (server/judgement_queue), stores everything the moment it is answered (store/session_store: a
// call's observation is stored before its answer leaves, so after a crash the same call_id gets the
// same answer) and gathers the status page (server/status_queries). Each session's `op` mutex runs
// its operations (call, grade, close) one at a time while other sessions go on.
#include "server/environment.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "common/device.h"
#include "common/log.h"
#include "judge/precision.h"
#include "server/job_runner.h"
#include "server/judgement_queue.h"
#include "server/request_checks.h"
#include "server/session_registry.h"
#include "server/status_queries.h"
#include "store/session_store.h"

namespace cuda_agent {
namespace {

// The devices a judgement may name (ParseDevice): the job pool is sized for all of them.
constexpr size_t kDevices = 2;
constexpr double kJobsFullRetryS = 5;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ApiError Unknown(std::string message) { return {404, "not_found", std::move(message)}; }
ApiError Conflict(std::string code, std::string message) {
  return {409, std::move(code), std::move(message)};
}
ApiError StoppingError() {
  return {503, "stopping", "the server is shutting down; retry against its successor", 5};
}
ApiError InternalError(std::string message) { return {500, "internal", std::move(message)}; }
ApiError QueueFull(const std::string& device, double retry_after_s) {
  return {
      429, "busy",
      "the " + device + " judgement queue is full (the server's --queue-per-device); retry later",
      retry_after_s};
}

std::string RandomId(const char* prefix) {
  static std::mutex mutex;
  static std::mt19937_64 generator(std::random_device{}());
  std::lock_guard<std::mutex> lock(mutex);
  char text[32];
  snprintf(text, sizeof text, "%s%012llx", prefix,
           static_cast<unsigned long long>(generator() & 0xffffffffffffULL));
  return text;
}

// RewardOf: the paper's reward when the judgement is a verdict with one, else null.
Json RewardOf(const JudgeResult& result) {
  if (result.outcome != Outcome::kVerdict || !result.reward) return nullptr;
  return *result.reward;
}

Json ParsedOrNull(const std::string& text) {
  Result<Json> parsed = ParseJson(text, "stored value");
  return parsed.ok() ? parsed.value() : Json(nullptr);
}

// Persisted logs a failed write that nothing else depends on (the session's record lags behind
// it; what the client is answered does not change).
void Persisted(const Status& s) {
  if (!s.ok()) LogError("serve: store: " + s.message());
}

}  // namespace

struct Environment::State {
  EnvironmentOptions options;
  JudgeService& judge;
  JudgementQueue queue;
  std::unique_ptr<SessionStore> store;
  SessionRegistry sessions;
  JobRunner jobs;
  CallMeter calls;
  const double started_at = UnixNow();
  std::atomic<bool> stopping{false};
  std::mutex shutdown_mutex;
  bool shut_down = false;
  std::mutex workers_mutex;
  std::map<std::string, size_t> judge_workers;  // SetJudgeWorkers, by device

  State(EnvironmentOptions o, JudgeService& j, std::unique_ptr<SessionStore> s)
      : options(std::move(o)),
        judge(j),
        queue(j, {.capacity = options.queue_per_device, .workers = options.judge_workers}),
        store(std::move(s)),
        sessions(options.max_sessions, [this](Live& record) { Expire(record); }),
        jobs(JobPoolFor(options.judge_workers)) {}

  // JobPoolFor: a worker and a queue place for every judgement the judgement queue can admit at
  // once (each device's places: its workers and --queue-per-device), so a job waiting for one
  // device's worker never holds up another device's, and the pool's own refusal is a backstop.
  JobRunnerOptions JobPoolFor(size_t workers_per_device) const {
    size_t places = kDevices * (options.queue_per_device + std::max<size_t>(workers_per_device, 1));
    return {.workers = places, .queue = places};
  }

  ApiError NotOpen(const std::string& id, const std::string& status) {
    if (status.empty()) return Unknown("no session '" + id + "' (never opened on this server)");
    if (status == "graded") {
      return Conflict("session_graded",
                      "session '" + id + "' was graded; its episode is over (open a new session)");
    }
    return Conflict(
        "session_" + status,
        "session '" + id + "' is " + status +
            (status == "interrupted" ? " (its folder was lost when the server stopped)" : "") +
            "; open a new session");
  }

  // StoredSession: a session's stored record (nullopt when unknown or unreadable).
  std::optional<SessionRow> StoredSession(const std::string& id) {
    Result<std::optional<SessionRow>> row = store->Session(id);
    return row.ok() ? row.value() : std::nullopt;
  }

  std::optional<CallAnswer> StoredCall(const std::string& session_id, const std::string& call_id,
                                       int turn_limit) {
    std::optional<CallRow> row = store->Call(session_id, call_id);
    if (!row) return std::nullopt;
    CallAnswer answer;
    answer.call_id = call_id;
    answer.observation = {row->text, row->is_error};
    answer.calls_used = row->seq;
    answer.turn_limit = turn_limit;
    answer.replayed = true;
    return answer;
  }

  std::optional<GradeAnswer> StoredGrade(const std::string& session_id) {
    std::optional<GradeRow> row = store->Grade(session_id);
    if (!row) return std::nullopt;
    return GradeAnswer{session_id, ParsedOrNull(row->result), ParsedOrNull(row->reward)};
  }

  // Finish ends a live session: its Session closed, its folders removed, its record `status`.
  void Finish(Live& record, const std::string& status, bool remove_folder) {
    if (record.session) record.session->Close();
    record.session.reset();
    std::error_code ec;
    if (remove_folder) {
      fs::remove_all(record.dir, ec);
      if (!record.task_dir.empty()) fs::remove_all(record.task_dir, ec);
    }
    Persisted(store->EndSession(record.id, status, UnixNow()));
  }

  // Expire: the registry's reaper found `record` idle past its TTL.
  void Expire(Live& record) {
    // A graded session keeps its status (the grade is what matters); an open one expires.
    Finish(record, sessions.View(record).status == "graded" ? "graded" : "expired", true);
    LogInfo("serve: session " + record.id + " expired");
  }

  // Reopen brings back the sessions that were open or graded when the last server stopped.
  void Reopen() {
    Result<std::vector<SessionRow>> rows = store->Resumable();
    if (!rows.ok()) return;
    const double now = UnixNow();
    for (const SessionRow& row : rows.value()) {
      auto record = std::make_shared<Live>();
      record->id = row.id;
      record->task = ParsedOrNull(row.task);
      record->task_spec = row.task_spec;
      record->device = row.device;
      record->policy = row.policy;
      record->turn_limit = row.turn_limit;
      record->ttl_s = row.ttl_s;
      record->created_at = row.created_at;
      record->status = row.status;
      record->dir = row.dir;
      record->task_dir = row.task_dir;
      record->expires_at = now + record->ttl_s;
      // The answered calls: their ids (a repeated id is answered from the table) and their count.
      if (Result<std::vector<CallRow>> calls = store->CallIds(record->id); calls.ok()) {
        for (const CallRow& call : calls.value()) {
          record->call_ids.insert(call.call_id);
          record->calls_used = std::max(record->calls_used, call.seq);
        }
      }
      std::error_code ec;
      if (record->status == "graded") {
        if (fs::exists(record->dir, ec)) sessions.Restore(record);
        continue;
      }
      std::string why;
      if (!fs::is_directory(record->dir / "workspace", ec)) {
        why = "its folder " + record->dir.string() + " is gone";
      } else {
        Result<std::unique_ptr<Session>> session = OpenSessionObject(*record, true);
        if (session.ok()) {
          record->session = std::move(session).value();
          sessions.Restore(record);
          LogInfo("serve: reopened session " + record->id);
          continue;
        }
        why = session.status().message();
      }
      LogWarn("serve: session " + record->id + " interrupted: " + why);
      Persisted(store->InterruptSession(record->id, why, now));
    }
    Persisted(store->InterruptUnfinishedJobs(now));
  }

  Result<std::unique_ptr<Session>> OpenSessionObject(const Live& record, bool reopen) {
    Result<Task> task = LoadTask(record.task_spec);
    if (!task.ok()) return task.status();
    SessionSpec spec;
    spec.task_spec = record.task_spec;
    spec.task = std::move(task).value();
    spec.dir = record.dir;
    spec.judge = options.judge;
    spec.judge.device = ParseDevice(record.device).value();
    spec.judge.policy = MakePrecisionPolicy(record.policy).value();
    spec.binary = options.binary;
    spec.env = options.env;
    spec.reopen = reopen;
    return Session::Open(std::move(spec), queue);
  }
};

namespace {

// Held releases a session Acquire (or Remove) marked busy when the operation ends.
class Held {
 public:
  Held(SessionRegistry& registry, Live& record) : registry_(registry), record_(record) {}
  ~Held() { registry_.Release(record_); }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

 private:
  SessionRegistry& registry_;
  Live& record_;
};

}  // namespace

Environment::Environment(std::unique_ptr<State> state) : state_(std::move(state)) {}

Environment::~Environment() { Shutdown(0); }

Result<std::unique_ptr<Environment>> Environment::Open(EnvironmentOptions options,
                                                       JudgeService& judge) {
  std::error_code ec;
  fs::create_directories(options.state_dir / "sessions", ec);
  if (ec)
    return FailedPrecondition("cannot create " + options.state_dir.string() + ": " + ec.message());
  options.state_dir = fs::canonical(options.state_dir, ec);
  Result<std::unique_ptr<SessionStore>> store =
      SessionStore::Open(options.state_dir / "server.sqlite");
  if (!store.ok()) return store.status();
  auto state = std::make_unique<State>(std::move(options), judge, std::move(store).value());
  state->Reopen();
  SessionStore* store_of_reaper = state->store.get();
  state->sessions.StartReaper(state->options.reap_interval_s,
                              [store_of_reaper] { store_of_reaper->CheckpointPassive(); });
  return std::unique_ptr<Environment>(new Environment(std::move(state)));
}

bool Environment::Stopping() const { return state_->stopping; }

std::vector<ToolSpec> Environment::Tools() const { return DefaultToolRegistry().Specs(); }

ApiResult<SessionOpened> Environment::OpenSession(const OpenSessionRequest& request) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  ApiResult<JudgeTarget> target =
      ResolveJudgeTarget(request.device, request.policy, st.options.judge);
  if (!target.ok()) return *target.error;
  if (std::optional<ApiError> e = CheckSessionLimits(request.turn_limit, request.ttl_s)) return *e;
  ApiResult<TaskInput> task = ParseTaskInput(request.task);
  if (!task.ok()) return *task.error;

  auto record = std::make_shared<Live>();
  record->id = RandomId("s_");
  record->device = DeviceName(target.value->device);
  record->policy = target.value->policy.name;
  record->turn_limit = request.turn_limit > 0 ? request.turn_limit : st.options.default_turn_limit;
  record->ttl_s = request.ttl_s > 0 ? request.ttl_s : st.options.default_ttl_s;
  record->dir = st.options.state_dir / "sessions" / record->id;
  record->task = request.task;
  record->task_spec = task.value->reference;
  // An inline task's source is written to a file of its own: the session loads it as a reference.
  if (task.value->source) {
    record->task_dir = st.options.state_dir / "tasks" / record->id;
    std::error_code ec;
    fs::create_directories(record->task_dir, ec);
    fs::path file = record->task_dir / InlineTaskFileName(task.value->name);
    if (Status s = WriteFileAtomic(file, *task.value->source); !s.ok()) {
      return InternalError("cannot write the inline task: " + s.message());
    }
    record->task_spec = file.string();
  }
  auto drop_task_dir = [&] {
    std::error_code ec;
    if (!record->task_dir.empty()) fs::remove_all(record->task_dir, ec);
  };
  if (Result<Task> loaded = LoadTask(record->task_spec); !loaded.ok()) {
    drop_task_dir();
    return InvalidRequest("task: " + loaded.status().message());
  }

  size_t open = 0;
  if (!st.sessions.Reserve(&open)) {
    drop_task_dir();
    return ApiError{429, "too_many_sessions",
                    std::to_string(open) + " sessions are open (the server's --max-sessions); " +
                        "close or grade one, or retry later",
                    5};
  }
  Result<std::unique_ptr<Session>> session = st.OpenSessionObject(*record, false);
  if (!session.ok()) {
    st.sessions.Unreserve();
    drop_task_dir();
    std::error_code ec;
    fs::remove_all(record->dir, ec);
    if (session.status().code() == StatusCode::kInvalidArgument ||
        session.status().code() == StatusCode::kNotFound) {
      return InvalidRequest("task: " + session.status().message());
    }
    return InternalError("cannot open the session: " + session.status().message());
  }
  record->session = std::move(session).value();
  record->created_at = UnixNow();
  record->expires_at = record->created_at + record->ttl_s;
  Persisted(st.store->AddSession({.id = record->id,
                                  .task = record->task.dump(),
                                  .task_spec = record->task_spec,
                                  .device = record->device,
                                  .policy = record->policy,
                                  .turn_limit = record->turn_limit,
                                  .ttl_s = record->ttl_s,
                                  .created_at = record->created_at,
                                  .expires_at = record->expires_at,
                                  .status = "open",
                                  .dir = record->dir.string(),
                                  .task_dir = record->task_dir.string(),
                                  .reason = ""}));

  SessionOpened opened;
  opened.session_id = record->id;
  opened.system_prompt = record->session->SystemPrompt();
  opened.task_message = record->session->TaskMessage();
  opened.tools = record->session->ToolSpecs();
  opened.turn_limit = record->turn_limit;
  opened.expires_at = record->expires_at;
  st.sessions.Add(record);
  return opened;
}

ApiResult<Json> Environment::SessionStatus(const std::string& session_id) {
  State& st = *state_;
  Result<std::optional<SessionRow>> row = st.store->Session(session_id);
  if (!row.ok()) return InternalError(row.status().message());
  if (!row.value()) return Unknown("no session '" + session_id + "'");
  const SessionRow& r = *row.value();
  Json out = {{"session_id", session_id},     {"status", r.status},
              {"task", ParsedOrNull(r.task)}, {"device", r.device},
              {"policy", r.policy},           {"turn_limit", r.turn_limit},
              {"created_at", r.created_at},   {"expires_at", r.expires_at}};
  if (!r.reason.empty()) out["reason"] = r.reason;
  out["calls"] = st.store->CallsUsed(session_id);
  if (std::optional<LiveView> live = st.sessions.Find(session_id)) {
    out["status"] = live->status;
    out["calls"] = live->calls_used;
    out["expires_at"] = live->expires_at;
  }
  if (std::optional<GradeAnswer> g = st.StoredGrade(session_id)) {
    out["grade"] = {{"reward", g->reward}, {"result", g->result}};
  }
  return out;
}

ApiResult<CallAnswer> Environment::Call(const std::string& session_id, const std::string& call_id,
                                        const std::string& tool,
                                        const std::string& arguments_text) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  if (std::optional<ApiError> e = CheckCallNames(call_id, tool)) return *e;
  std::shared_ptr<Live> record = st.sessions.Acquire(session_id);
  if (!record) {
    // Not live: a finished call is still answered by its id; anything new is refused.
    std::optional<SessionRow> stored = st.StoredSession(session_id);
    if (stored) {
      if (std::optional<CallAnswer> call = st.StoredCall(session_id, call_id, stored->turn_limit)) {
        return *call;
      }
    }
    return st.NotOpen(session_id, stored ? stored->status : "");
  }
  Held held(st.sessions, *record);
  std::lock_guard<std::mutex> op(record->op);
  if (record->call_ids.count(call_id)) {
    if (std::optional<CallAnswer> stored = st.StoredCall(session_id, call_id, record->turn_limit)) {
      return *stored;
    }
  }
  const LiveView view = st.sessions.View(*record);
  if (!view.open || !record->session) return st.NotOpen(session_id, view.status);
  if (view.calls_used >= record->turn_limit) {
    return Conflict("turn_limit", "session '" + session_id + "' used its " +
                                      std::to_string(record->turn_limit) +
                                      " tool calls (turn_limit); grade it or open a new session");
  }
  Observation observation;
  try {
    observation = record->session->Call(tool, arguments_text);
  } catch (const std::exception& e) {
    // A bug of ours is still the model's observation, never a 500 that loses the turn.
    observation =
        ErrorObservation(std::string("internal error while running the tool: ") + e.what());
  }
  CallAnswer answer;
  answer.call_id = call_id;
  answer.observation = observation;
  answer.turn_limit = record->turn_limit;
  answer.calls_used = st.sessions.CountCall(*record);
  st.calls.Record(UnixNow());
  Persisted(st.store->AddCall({.session_id = session_id,
                               .call_id = call_id,
                               .seq = answer.calls_used,
                               .tool = tool,
                               .arguments = arguments_text,
                               .text = observation.text,
                               .is_error = observation.is_error,
                               .at = UnixNow()}));
  record->call_ids.insert(call_id);
  return answer;
}

ApiResult<GradeAnswer> Environment::Grade(const std::string& session_id) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  std::shared_ptr<Live> record = st.sessions.Acquire(session_id);
  if (!record) {
    if (std::optional<GradeAnswer> stored = st.StoredGrade(session_id)) return *stored;
    std::optional<SessionRow> row = st.StoredSession(session_id);
    return st.NotOpen(session_id, row ? row->status : "");
  }
  Held held(st.sessions, *record);
  std::lock_guard<std::mutex> op(record->op);
  if (std::optional<GradeAnswer> stored = st.StoredGrade(session_id)) return *stored;
  if (!record->session) {
    std::optional<SessionRow> row = st.StoredSession(session_id);
    return st.NotOpen(session_id, row ? row->status : "");
  }
  double retry_after_s = 0;
  std::optional<JudgementQueue::Place> place = st.queue.Admit(record->device, &retry_after_s);
  if (!place) return QueueFull(record->device, retry_after_s);
  JudgeResult result;
  {
    JudgementQueue::ScopedPlace lent(*place);
    result = record->session->Grade();
  }
  GradeAnswer answer{session_id, result.ToJson(), RewardOf(result)};
  Persisted(st.store->PutGrade(session_id, answer.reward.dump(), answer.result.dump(), UnixNow()));
  Persisted(st.store->SetSessionStatus(session_id, "graded"));
  st.sessions.SetStatus(*record, "graded");
  // The episode is over: background jobs and the gateway stop; the folder stays until the TTL or
  // a DELETE.
  record->session->Close();
  record->session.reset();
  return answer;
}

ApiResult<Json> Environment::CloseSession(const std::string& session_id) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  std::shared_ptr<Live> record = st.sessions.Remove(session_id);
  if (!record) {
    std::optional<SessionRow> row = st.StoredSession(session_id);
    if (!row) return Unknown("no session '" + session_id + "'");
    if (row->status != "closed") {
      // Expired, interrupted, or graded after a restart: its folder (if any) goes now.
      std::error_code ec;
      fs::remove_all(row->dir, ec);
      if (!row->task_dir.empty()) fs::remove_all(row->task_dir, ec);
      Persisted(st.store->SetSessionStatus(session_id, "closed"));
    }
    return Json{{"session_id", session_id}, {"status", "closed"}};
  }
  {
    Held held(st.sessions, *record);
    std::lock_guard<std::mutex> op(record->op);
    st.Finish(*record, "closed", true);
    st.sessions.SetStatus(*record, "closed");
  }
  return Json{{"session_id", session_id}, {"status", "closed"}};
}

ApiResult<Json> Environment::Evaluate(const Json& task_json, const Json& files,
                                      const std::string& device_name, const std::string& policy,
                                      bool wait) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  ApiResult<TaskInput> input = ParseTaskInput(task_json);
  if (!input.ok()) return *input.error;
  ApiResult<Task> task = LoadTaskInput(*input.value);
  if (!task.ok()) return *task.error;
  ApiResult<Candidate> candidate = CandidateFromFiles(files);
  if (!candidate.ok()) return *candidate.error;
  ApiResult<JudgeTarget> target = ResolveJudgeTarget(device_name, policy, st.options.judge);
  if (!target.ok()) return *target.error;
  JudgeRequest request;
  request.task = std::move(task.value).value();
  request.candidate = std::move(candidate.value).value();
  request.options = st.options.judge;
  request.options.device = target.value->device;
  request.options.policy = target.value->policy;
  const std::string device = DeviceName(target.value->device);

  double retry_after_s = 0;
  std::optional<JudgementQueue::Place> place = st.queue.Admit(device, &retry_after_s);
  if (!place) return QueueFull(device, retry_after_s);
  if (wait) {
    JudgeResult result = st.queue.Run(std::move(*place), request);
    return Json{{"reward", RewardOf(result)}, {"result", result.ToJson()}};
  }
  const std::string job_id = RandomId("j_");
  Status stored =
      st.store->AddJob(job_id, task_json.dump(), device, target.value->policy.name, UnixNow());
  if (!stored.ok()) {
    LogError("serve: store: " + stored.message());
    return InternalError("cannot store the job: " + stored.message());
  }
  auto shared_place = std::make_shared<JudgementQueue::Place>(std::move(*place));
  bool queued = st.jobs.Submit([&st, job_id, request, shared_place] {
    Persisted(st.store->SetJobRunning(job_id));
    JudgeResult result = st.queue.Run(std::move(*shared_place), request);
    Persisted(
        st.store->FinishJob(job_id, RewardOf(result).dump(), result.ToJson().dump(), UnixNow()));
  });
  if (!queued) {
    // The pool is full (a backstop: it is sized for every place the judgement queue admits); the
    // job id was never answered, so its row goes.
    Persisted(st.store->RemoveJob(job_id));
    return ApiError{429, "busy",
                    "the server's evaluation jobs are all taken (" +
                        std::to_string(st.jobs.Waiting()) + " waiting); retry later",
                    kJobsFullRetryS};
  }
  return Json{{"job_id", job_id}};
}

ApiResult<Json> Environment::Job(const std::string& job_id) {
  Result<std::optional<JobRow>> row = state_->store->Job(job_id);
  if (!row.ok()) return InternalError(row.status().message());
  if (!row.value()) return Unknown("no job '" + job_id + "'");
  const JobRow& r = *row.value();
  Json out = {{"job_id", job_id}, {"status", r.status}};
  if (r.status == "done") {
    out["reward"] = ParsedOrNull(r.reward);
    out["result"] = ParsedOrNull(r.result);
  } else if (r.status == "interrupted") {
    out["message"] = "the server stopped before this job finished; submit it again";
  }
  return out;
}

Json Environment::Health() const {
  State& st = *state_;
  Json devices = st.queue.Snapshot();
  if (devices.empty()) {
    devices.push_back({{"device", DeviceName(st.options.judge.device)},
                       {"state", "idle"},
                       {"queue_depth", 0},
                       {"running", 0}});
  }
  Json health = {{"version", st.options.version},
                 {"status", st.stopping ? "stopping" : "ok"},
                 {"devices", devices},
                 {"queue_depth", st.queue.QueueDepth()},
                 {"sessions_open", st.sessions.OpenCount()},
                 {"max_sessions", st.options.max_sessions},
                 {"judge", st.judge.Describe()},
                 {"workers", Json::array()}};
  if (st.options.workers) {
    Json remote = st.options.workers();
    if (remote.is_object()) {
      if (remote.contains("workers")) health["workers"] = remote["workers"];
      if (remote.contains("queues")) health["queues"] = remote["queues"];
      if (remote.contains("error")) health["workers_error"] = remote["error"];
    }
  }
  return health;
}

void Environment::SetJudgeWorkers(const std::string& device, size_t workers) {
  State& st = *state_;
  st.queue.SetWorkers(device, workers);
  // The pool grows with the most workers any device has now (never shrinks: see JobPoolFor).
  size_t most = st.options.judge_workers;
  {
    std::lock_guard<std::mutex> lock(st.workers_mutex);
    st.judge_workers[device] = workers;
    for (const auto& [name, n] : st.judge_workers) most = std::max(most, n);
  }
  JobRunnerOptions pool = st.JobPoolFor(most);
  st.jobs.Grow(pool.workers, pool.queue);
}

Json Environment::StatusPage() const {
  State& st = *state_;
  return StatusPageJson({st.sessions, *st.store, st.calls, Health(), st.started_at}, UnixNow());
}

void Environment::ReapExpired() { state_->sessions.Reap(); }

void Environment::Shutdown(double grace_s) {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.shutdown_mutex);
    if (st.shut_down) return;
    st.shut_down = true;
  }
  st.stopping = true;
  st.sessions.StopReaper();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(grace_s, 0.0));
  const int busy = st.sessions.WaitIdle(grace_s);
  const double left =
      std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
  // Jobs still judging past the grace period stay `running` in the store, queued ones `queued`
  // (both interrupted at the next start); their workers are left to the process's exit.
  const size_t jobs = st.jobs.Stop(left);
  if (busy > 0 || jobs > 0) {
    LogWarn("serve: " + std::to_string(busy) + " calls and " + std::to_string(jobs) +
            " jobs still running after the grace period");
  }
  // Sessions close without a status change: their folders stay, the next server reopens them.
  for (const std::shared_ptr<Live>& record : st.sessions.All()) {
    std::unique_lock<std::mutex> op(record->op, std::try_to_lock);
    if (op.owns_lock() && record->session) record->session->Close();
  }
  Persisted(st.store->CheckpointTruncate());
}

}  // namespace cuda_agent
