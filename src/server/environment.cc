// environment.cc — the sessions, calls, grades and jobs of `serve`, kept in memory while they are
// live and in SQLite (state_dir/server.sqlite, WAL) from the moment they are answered: a call's
// observation is stored before its answer leaves, so after a crash the same call_id gets the same
// answer. One mutex guards the maps and counters; each session has a second one so that its
// operations (call, grade, close) run one at a time while other sessions go on.
#include "server/environment.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "common/device.h"
#include "common/log.h"
#include "judge/precision.h"
#include "server/judgement_queue.h"
#include "store/database.h"
#include "store/group_commit.h"

namespace cuda_agent {
namespace {

constexpr size_t kMaxCallIdChars = 128;
constexpr size_t kMaxToolNameChars = 64;
constexpr int kMaxTurnLimit = 100000;
constexpr double kMaxTtlS = 7 * 24 * 3600.0;
constexpr size_t kRecentGrades = 20;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ApiError Invalid(std::string message) { return {400, "invalid_argument", std::move(message)}; }
ApiError Unknown(std::string message) { return {404, "not_found", std::move(message)}; }
ApiError Conflict(std::string code, std::string message) {
  return {409, std::move(code), std::move(message)};
}
ApiError StoppingError() {
  return {503, "stopping", "the server is shutting down; retry against its successor", 5};
}
ApiError InternalError(std::string message) { return {500, "internal", std::move(message)}; }

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

std::string Text(const SqlValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return "";
}
double Real(const SqlValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* n = std::get_if<int64_t>(&v)) return static_cast<double>(*n);
  return 0;
}
int64_t Integer(const SqlValue& v) {
  if (const auto* n = std::get_if<int64_t>(&v)) return *n;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  return 0;
}
Json JsonColumn(const SqlValue& v) {
  Result<Json> parsed = ParseJson(Text(v), "stored value");
  return parsed.ok() ? parsed.value() : Json(nullptr);
}

// TaskLabel: a stored task (its JSON: a reference string, or {"source", "name"?}) as one line.
std::string TaskLabel(const SqlValue& v) {
  Json task = JsonColumn(v);
  if (task.is_string()) return task.get<std::string>();
  if (task.is_object()) return task.value("name", std::string("(inline task)"));
  return Text(v);
}

// SafeTaskName keeps letters, digits, '-', '_' and '.' of an inline task's name (its file stem).
std::string SafeTaskName(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += keep ? c : '_';
  }
  while (!out.empty() && out.front() == '.') out.erase(out.begin());
  if (out.empty()) out = "task";
  return out.substr(0, 64);
}

bool PrintableId(const std::string& id) {
  for (char c : id) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return false;
  }
  return true;
}

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, task TEXT, task_spec TEXT, "
    "device TEXT, policy TEXT, turn_limit INTEGER, ttl_s REAL, created_at REAL, expires_at REAL, "
    "status TEXT, dir TEXT, task_dir TEXT, reason TEXT)",
    "CREATE TABLE IF NOT EXISTS calls (session_id TEXT, call_id TEXT, seq INTEGER, tool TEXT, "
    "arguments TEXT, text TEXT, is_error INTEGER, at REAL, PRIMARY KEY (session_id, call_id))",
    "CREATE TABLE IF NOT EXISTS grades (session_id TEXT PRIMARY KEY, reward TEXT, result TEXT, "
    "at REAL)",
    "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, task TEXT, device TEXT, policy TEXT, "
    "status TEXT, reward TEXT, result TEXT, created_at REAL, finished_at REAL)",
};

}  // namespace

// Live is a session of this server's lifetime: open (with its Session) or graded (its folder kept
// until the TTL or a DELETE).
struct Live {
  std::string id;
  Json task;
  std::string task_spec;
  std::string device;
  std::string policy;
  int turn_limit = 0;
  double ttl_s = 0;
  double created_at = 0;
  fs::path dir;
  fs::path task_dir;  // an inline task's file lives here (empty for references)

  std::mutex op;  // one operation at a time: call, grade, close, reap
  // Guarded by `op`: the call ids this session answered (stored in the calls table), so that a new
  // call costs no lookup there and only a repeated id is read back.
  std::set<std::string> call_ids;
  // Guarded by State::mutex:
  std::string status = "open";
  int calls_used = 0;
  double expires_at = 0;
  int busy = 0;  // operations holding this record; the reaper leaves busy ones alone
  // Guarded by `op`:
  std::unique_ptr<Session> session;

  // IsOpen: the one definition of an open session — one that takes calls (not graded, expired,
  // interrupted or closed). It is what --max-sessions bounds, health's `sessions_open` counts and
  // the status page lists (so its count and its table agree). Caller holds State::mutex.
  bool IsOpen() const { return status == "open"; }
};

struct Environment::State {
  EnvironmentOptions options;
  JudgeService& judge;
  JudgementQueue queue;
  Database db;
  std::mutex db_mutex;               // one connection, shared by every request thread
  GroupCommit writer{db, db_mutex};  // writes of concurrent requests share commits

  mutable std::mutex mutex;
  std::condition_variable idle;  // busy operations or jobs went to zero
  std::map<std::string, std::shared_ptr<Live>> live;
  size_t opening = 0;  // sessions being opened (they count against max_sessions)
  int busy_total = 0;
  int jobs_running = 0;
  std::deque<double> call_times;  // the last minute's calls, for the status page's rate
  double started_at = UnixNow();
  std::atomic<bool> stopping{false};
  bool shut_down = false;

  struct JobThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<JobThread> job_threads;
  std::thread reaper;
  std::condition_variable reaper_wake;

  State(EnvironmentOptions o, JudgeService& j, Database d)
      : options(std::move(o)),
        judge(j),
        queue(j, {.capacity = options.queue_per_device, .workers = options.judge_workers}),
        db(std::move(d)) {}

  Status Exec(const std::string& sql, const std::vector<SqlValue>& params = {}) {
    Status s = writer.Write(sql, params);
    if (!s.ok()) LogError("serve: store: " + s.message());
    return s;
  }
  // Persist: a write whose failure Exec logs and nothing else depends on (the session's record
  // lags behind it; what the client is answered does not change).
  void Persist(const std::string& sql, const std::vector<SqlValue>& params = {}) {
    (void)Exec(sql, params);
  }
  Result<std::vector<Row>> Query(const std::string& sql, const std::vector<SqlValue>& params = {}) {
    std::lock_guard<std::mutex> lock(db_mutex);
    return db.Query(sql, params);
  }

  // Acquire finds a live session and marks it busy (and not idle: its TTL starts again).
  std::shared_ptr<Live> Acquire(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(id);
    if (it == live.end()) return nullptr;
    ++it->second->busy;
    ++busy_total;
    it->second->expires_at = UnixNow() + it->second->ttl_s;
    return it->second;
  }
  void Done(Live& record) {
    std::lock_guard<std::mutex> lock(mutex);
    --record.busy;
    --busy_total;
    record.expires_at = UnixNow() + record.ttl_s;
    idle.notify_all();
  }

  // StoredStatus: a session's stored status, or "" when the id is unknown.
  std::string StoredStatus(const std::string& id) {
    Result<std::vector<Row>> rows = Query("SELECT status FROM sessions WHERE id = ?", {id});
    if (!rows.ok() || rows->empty()) return "";
    return Text(rows.value()[0][0]);
  }

  std::optional<CallAnswer> StoredCall(const std::string& session_id, const std::string& call_id,
                                       int turn_limit) {
    Result<std::vector<Row>> rows =
        Query("SELECT seq, text, is_error FROM calls WHERE session_id = ? AND call_id = ?",
              {session_id, call_id});
    if (!rows.ok() || rows->empty()) return std::nullopt;
    const Row& r = rows.value()[0];
    CallAnswer answer;
    answer.call_id = call_id;
    answer.observation = {Text(r[1]), Integer(r[2]) != 0};
    answer.calls_used = static_cast<int>(Integer(r[0]));
    answer.turn_limit = turn_limit;
    answer.replayed = true;
    return answer;
  }

  std::optional<GradeAnswer> StoredGrade(const std::string& session_id) {
    Result<std::vector<Row>> rows =
        Query("SELECT reward, result FROM grades WHERE session_id = ?", {session_id});
    if (!rows.ok() || rows->empty()) return std::nullopt;
    return GradeAnswer{session_id, JsonColumn(rows.value()[0][1]), JsonColumn(rows.value()[0][0])};
  }

  int StoredTurnLimit(const std::string& session_id) {
    Result<std::vector<Row>> rows =
        Query("SELECT turn_limit FROM sessions WHERE id = ?", {session_id});
    if (!rows.ok() || rows->empty()) return 0;
    return static_cast<int>(Integer(rows.value()[0][0]));
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

  // Finish ends a live session: its Session closed, its folders removed, its record `status`.
  void Finish(Live& record, const std::string& status, bool remove_folder) {
    if (record.session) record.session->Close();
    record.session.reset();
    std::error_code ec;
    if (remove_folder) {
      fs::remove_all(record.dir, ec);
      if (!record.task_dir.empty()) fs::remove_all(record.task_dir, ec);
    }
    Persist("UPDATE sessions SET status = ?, expires_at = ? WHERE id = ?",
            {status, UnixNow(), record.id});
  }

  void ReaperLoop() {
    // Checkpoints run here, on a connection of their own, not inside a request's commit (the
    // request connection's automatic checkpoint is off): a checkpoint's fsync would otherwise hold
    // the store's mutex, and every request behind it, for milliseconds.
    Result<Database> checkpointer = Database::Open(options.state_dir / "server.sqlite");
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      reaper_wake.wait_for(lock, std::chrono::duration<double>(options.reap_interval_s));
      if (stopping) break;
      lock.unlock();
      Reap();
      if (checkpointer.ok()) (void)checkpointer->Query("PRAGMA wal_checkpoint(PASSIVE)");
      lock.lock();
    }
  }

  void Reap() {
    std::vector<std::shared_ptr<Live>> expired;
    {
      std::lock_guard<std::mutex> lock(mutex);
      const double now = UnixNow();
      for (auto it = live.begin(); it != live.end();) {
        if (it->second->busy == 0 && it->second->expires_at < now) {
          expired.push_back(it->second);
          it = live.erase(it);
        } else {
          ++it;
        }
      }
      // Finished job threads are joined here, so they do not pile up.
      for (auto it = job_threads.begin(); it != job_threads.end();) {
        if (*it->done) {
          it->thread.join();
          it = job_threads.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const std::shared_ptr<Live>& record : expired) {
      std::lock_guard<std::mutex> op(record->op);
      // A graded session keeps its status (the grade is what matters); an open one expires.
      Finish(*record, record->status == "graded" ? "graded" : "expired", true);
      LogInfo("serve: session " + record->id + " expired");
    }
  }

  // Reopen brings back the sessions that were open or graded when the last server stopped.
  void Reopen() {
    Result<std::vector<Row>> rows = Query(
        "SELECT id, task, task_spec, device, policy, turn_limit, ttl_s, created_at, status, dir, "
        "task_dir FROM sessions WHERE status IN ('open', 'graded') AND dir != ''");
    if (!rows.ok()) return;
    const double now = UnixNow();
    for (const Row& r : rows.value()) {
      auto record = std::make_shared<Live>();
      record->id = Text(r[0]);
      record->task = JsonColumn(r[1]);
      record->task_spec = Text(r[2]);
      record->device = Text(r[3]);
      record->policy = Text(r[4]);
      record->turn_limit = static_cast<int>(Integer(r[5]));
      record->ttl_s = Real(r[6]);
      record->created_at = Real(r[7]);
      record->status = Text(r[8]);
      record->dir = Text(r[9]);
      record->task_dir = Text(r[10]);
      record->expires_at = now + record->ttl_s;
      // The answered calls: their ids (a repeated id is answered from the table) and their count.
      if (Result<std::vector<Row>> calls =
              Query("SELECT call_id, seq FROM calls WHERE session_id = ?", {record->id});
          calls.ok()) {
        for (const Row& call : calls.value()) {
          record->call_ids.insert(Text(call[0]));
          record->calls_used = std::max(record->calls_used, static_cast<int>(Integer(call[1])));
        }
      }
      std::error_code ec;
      if (record->status == "graded") {
        if (fs::exists(record->dir, ec)) live[record->id] = record;
        continue;
      }
      std::string why;
      if (!fs::is_directory(record->dir / "workspace", ec)) {
        why = "its folder " + record->dir.string() + " is gone";
      } else {
        Result<std::unique_ptr<Session>> session = OpenSessionObject(*record, true);
        if (session.ok()) {
          record->session = std::move(session).value();
          live[record->id] = record;
          LogInfo("serve: reopened session " + record->id);
          continue;
        }
        why = session.status().message();
      }
      LogWarn("serve: session " + record->id + " interrupted: " + why);
      Persist("UPDATE sessions SET status = 'interrupted', reason = ?, expires_at = ? WHERE id = ?",
              {why, now, record->id});
    }
    Persist(
        "UPDATE jobs SET status = 'interrupted', finished_at = ? WHERE status IN ('queued', "
        "'running')",
        {now});
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

Environment::Environment(std::unique_ptr<State> state) : state_(std::move(state)) {}

Environment::~Environment() { Shutdown(0); }

Result<std::unique_ptr<Environment>> Environment::Open(EnvironmentOptions options,
                                                       JudgeService& judge) {
  std::error_code ec;
  fs::create_directories(options.state_dir / "sessions", ec);
  if (ec)
    return FailedPrecondition("cannot create " + options.state_dir.string() + ": " + ec.message());
  options.state_dir = fs::canonical(options.state_dir, ec);
  Result<Database> db = Database::Open(options.state_dir / "server.sqlite");
  if (!db.ok()) return db.status();
  // WAL with synchronous=NORMAL: a commit is in the log before the answer leaves, so it survives
  // the process being killed (kill -9); only a power loss may take the last commits.
  if (Status s = db->Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  if (Result<std::vector<Row>> r = db->Query("PRAGMA wal_autocheckpoint=0"); !r.ok()) {
    return r.status();
  }
  for (const char* sql : kSchema) {
    if (Status s = db->Exec(sql); !s.ok()) return s;
  }
  auto state = std::make_unique<State>(std::move(options), judge, std::move(db).value());
  state->Reopen();
  State* raw = state.get();
  state->reaper = std::thread([raw] { raw->ReaperLoop(); });
  return std::unique_ptr<Environment>(new Environment(std::move(state)));
}

bool Environment::Stopping() const { return state_->stopping; }

std::vector<ToolSpec> Environment::Tools() const { return DefaultToolRegistry().Specs(); }

ApiResult<SessionOpened> Environment::OpenSession(const OpenSessionRequest& request) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  auto record = std::make_shared<Live>();
  record->id = RandomId("s_");
  record->device = request.device.empty() ? DeviceName(st.options.judge.device) : request.device;
  if (!ParseDevice(record->device).ok()) {
    return Invalid("device '" + record->device + "' is not one of cuda, cpu");
  }
  record->device = DeviceName(ParseDevice(record->device).value());
  record->policy = request.policy.empty() ? st.options.judge.policy.name : request.policy;
  if (Result<PrecisionPolicy> p = MakePrecisionPolicy(record->policy); !p.ok()) {
    return Invalid("policy: " + p.status().message());
  }
  if (request.turn_limit < 0 || request.turn_limit > kMaxTurnLimit) {
    return Invalid("turn_limit must be between 1 and " + std::to_string(kMaxTurnLimit));
  }
  if (request.ttl_s < 0 || request.ttl_s > kMaxTtlS || std::isnan(request.ttl_s)) {
    return Invalid("ttl_s must be a positive number of seconds, at most " +
                   std::to_string(static_cast<int>(kMaxTtlS)));
  }
  record->turn_limit = request.turn_limit > 0 ? request.turn_limit : st.options.default_turn_limit;
  record->ttl_s = request.ttl_s > 0 ? request.ttl_s : st.options.default_ttl_s;
  record->dir = st.options.state_dir / "sessions" / record->id;
  record->task = request.task;

  // The task: a reference as `judge --task` takes it, or inline source written to a file.
  if (request.task.is_string()) {
    record->task_spec = request.task.get<std::string>();
    if (record->task_spec.empty()) return Invalid("task must not be empty");
  } else if (request.task.is_object()) {
    for (const auto& [key, value] : request.task.items()) {
      if (key != "source" && key != "name") {
        return Invalid("task: unknown field '" + key + "' (an inline task has source and name)");
      }
    }
    if (!request.task.contains("source") || !request.task["source"].is_string()) {
      return Invalid("task.source must be the text of a model.py");
    }
    if (request.task.contains("name") && !request.task["name"].is_string()) {
      return Invalid("task.name must be a string");
    }
    std::string name = SafeTaskName(request.task.value("name", std::string("task")));
    if (name.size() < 3 || name.substr(name.size() - 3) != ".py") name += ".py";
    record->task_dir = st.options.state_dir / "tasks" / record->id;
    std::error_code ec;
    fs::create_directories(record->task_dir, ec);
    fs::path file = record->task_dir / name;
    if (Status s = WriteFileAtomic(file, request.task["source"].get<std::string>()); !s.ok()) {
      return InternalError("cannot write the inline task: " + s.message());
    }
    record->task_spec = file.string();
  } else {
    return Invalid("task must be a reference string or {\"source\": \"...\", \"name\"?: \"...\"}");
  }
  auto drop_task_dir = [&] {
    std::error_code ec;
    if (!record->task_dir.empty()) fs::remove_all(record->task_dir, ec);
  };
  if (Result<Task> task = LoadTask(record->task_spec); !task.ok()) {
    drop_task_dir();
    return Invalid("task: " + task.status().message());
  }

  {
    std::lock_guard<std::mutex> lock(st.mutex);
    size_t open = st.opening;
    for (const auto& [id, r] : st.live) open += r->IsOpen() ? 1 : 0;
    if (open >= st.options.max_sessions) {
      drop_task_dir();
      return ApiError{429, "too_many_sessions",
                      std::to_string(open) + " sessions are open (the server's --max-sessions); " +
                          "close or grade one, or retry later",
                      5};
    }
    ++st.opening;
  }
  Result<std::unique_ptr<Session>> session = st.OpenSessionObject(*record, false);
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    --st.opening;
  }
  if (!session.ok()) {
    drop_task_dir();
    std::error_code ec;
    fs::remove_all(record->dir, ec);
    if (session.status().code() == StatusCode::kInvalidArgument ||
        session.status().code() == StatusCode::kNotFound) {
      return Invalid("task: " + session.status().message());
    }
    return InternalError("cannot open the session: " + session.status().message());
  }
  record->session = std::move(session).value();
  record->created_at = UnixNow();
  record->expires_at = record->created_at + record->ttl_s;
  st.Persist(
      "INSERT INTO sessions (id, task, task_spec, device, policy, turn_limit, ttl_s, created_at, "
      "expires_at, status, dir, task_dir, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, "
      "'')",
      {record->id, record->task.dump(), record->task_spec, record->device, record->policy,
       static_cast<int64_t>(record->turn_limit), record->ttl_s, record->created_at,
       record->expires_at, record->dir.string(), record->task_dir.string()});

  SessionOpened opened;
  opened.session_id = record->id;
  opened.system_prompt = record->session->SystemPrompt();
  opened.task_message = record->session->TaskMessage();
  opened.tools = record->session->ToolSpecs();
  opened.turn_limit = record->turn_limit;
  opened.expires_at = record->expires_at;
  std::lock_guard<std::mutex> lock(st.mutex);
  st.live[record->id] = record;
  return opened;
}

ApiResult<Json> Environment::SessionStatus(const std::string& session_id) {
  State& st = *state_;
  Result<std::vector<Row>> rows = st.Query(
      "SELECT task, device, policy, turn_limit, created_at, expires_at, status, reason FROM "
      "sessions WHERE id = ?",
      {session_id});
  if (!rows.ok()) return InternalError(rows.status().message());
  if (rows->empty()) return Unknown("no session '" + session_id + "'");
  const Row& r = rows.value()[0];
  Json out = {{"session_id", session_id}, {"status", Text(r[6])},    {"task", JsonColumn(r[0])},
              {"device", Text(r[1])},     {"policy", Text(r[2])},    {"turn_limit", Integer(r[3])},
              {"created_at", Real(r[4])}, {"expires_at", Real(r[5])}};
  if (!Text(r[7]).empty()) out["reason"] = Text(r[7]);
  Result<std::vector<Row>> used =
      st.Query("SELECT COALESCE(MAX(seq), 0) FROM calls WHERE session_id = ?", {session_id});
  out["calls"] = used.ok() && !used->empty() ? Integer(used.value()[0][0]) : 0;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (auto it = st.live.find(session_id); it != st.live.end()) {
      out["status"] = it->second->status;
      out["calls"] = it->second->calls_used;
      out["expires_at"] = it->second->expires_at;
    }
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
  if (call_id.empty() || call_id.size() > kMaxCallIdChars || !PrintableId(call_id)) {
    return Invalid("call_id must be 1 to " + std::to_string(kMaxCallIdChars) +
                   " printable characters without spaces");
  }
  if (tool.empty() || tool.size() > kMaxToolNameChars) {
    return Invalid("tool must name one of the session's tools (GET /v1/tools)");
  }
  std::shared_ptr<Live> record = st.Acquire(session_id);
  if (!record) {
    // Not live: a finished call is still answered by its id; anything new is refused.
    std::string status = st.StoredStatus(session_id);
    if (!status.empty()) {
      if (std::optional<CallAnswer> stored =
              st.StoredCall(session_id, call_id, st.StoredTurnLimit(session_id))) {
        return *stored;
      }
    }
    return st.NotOpen(session_id, status);
  }
  struct Release {
    State& st;
    Live& record;
    ~Release() { st.Done(record); }
  } release{st, *record};
  std::lock_guard<std::mutex> op(record->op);
  if (record->call_ids.count(call_id)) {
    if (std::optional<CallAnswer> stored = st.StoredCall(session_id, call_id, record->turn_limit)) {
      return *stored;
    }
  }
  std::string status;
  bool open = false;
  int used = 0;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    status = record->status;
    open = record->IsOpen();
    used = record->calls_used;
  }
  if (!open || !record->session) return st.NotOpen(session_id, status);
  if (used >= record->turn_limit) {
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
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    answer.calls_used = ++record->calls_used;
    const double now = UnixNow();
    st.call_times.push_back(now);
    while (!st.call_times.empty() && st.call_times.front() < now - 60) st.call_times.pop_front();
  }
  st.Persist(
      "INSERT OR IGNORE INTO calls (session_id, call_id, seq, tool, arguments, text, is_error, at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      {session_id, call_id, static_cast<int64_t>(answer.calls_used), tool, arguments_text,
       observation.text, static_cast<int64_t>(observation.is_error ? 1 : 0), UnixNow()});
  record->call_ids.insert(call_id);
  return answer;
}

ApiResult<GradeAnswer> Environment::Grade(const std::string& session_id) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  std::shared_ptr<Live> record = st.Acquire(session_id);
  if (!record) {
    if (std::optional<GradeAnswer> stored = st.StoredGrade(session_id)) return *stored;
    return st.NotOpen(session_id, st.StoredStatus(session_id));
  }
  struct Release {
    State& st;
    Live& record;
    ~Release() { st.Done(record); }
  } release{st, *record};
  std::lock_guard<std::mutex> op(record->op);
  if (std::optional<GradeAnswer> stored = st.StoredGrade(session_id)) return *stored;
  if (!record->session) return st.NotOpen(session_id, st.StoredStatus(session_id));
  double retry_after_s = 0;
  std::optional<JudgementQueue::Place> place = st.queue.Admit(record->device, &retry_after_s);
  if (!place) {
    return ApiError{429, "busy",
                    "the " + record->device +
                        " judgement queue is full (the server's --queue-per-device); retry later",
                    retry_after_s};
  }
  JudgeResult result;
  {
    JudgementQueue::ScopedPlace lent(*place);
    result = record->session->Grade();
  }
  GradeAnswer answer{session_id, result.ToJson(), RewardOf(result)};
  st.Persist("INSERT OR REPLACE INTO grades (session_id, reward, result, at) VALUES (?, ?, ?, ?)",
             {session_id, answer.reward.dump(), answer.result.dump(), UnixNow()});
  st.Persist("UPDATE sessions SET status = 'graded' WHERE id = ?", {session_id});
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    record->status = "graded";
  }
  // The episode is over: background jobs and the gateway stop; the folder stays until the TTL or
  // a DELETE.
  record->session->Close();
  record->session.reset();
  return answer;
}

ApiResult<Json> Environment::CloseSession(const std::string& session_id) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  std::shared_ptr<Live> record;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    auto it = st.live.find(session_id);
    if (it != st.live.end()) {
      record = it->second;
      st.live.erase(it);
      ++record->busy;
      ++st.busy_total;
    }
  }
  if (!record) {
    std::string status = st.StoredStatus(session_id);
    if (status.empty()) return Unknown("no session '" + session_id + "'");
    if (status != "closed") {
      // Expired, interrupted, or graded after a restart: its folder (if any) goes now.
      Result<std::vector<Row>> rows =
          st.Query("SELECT dir, task_dir FROM sessions WHERE id = ?", {session_id});
      std::error_code ec;
      if (rows.ok() && !rows->empty()) {
        fs::remove_all(Text(rows.value()[0][0]), ec);
        if (!Text(rows.value()[0][1]).empty()) fs::remove_all(Text(rows.value()[0][1]), ec);
      }
      st.Persist("UPDATE sessions SET status = 'closed' WHERE id = ?", {session_id});
    }
    return Json{{"session_id", session_id}, {"status", "closed"}};
  }
  {
    std::lock_guard<std::mutex> op(record->op);
    st.Finish(*record, "closed", true);
    std::lock_guard<std::mutex> lock(st.mutex);
    record->status = "closed";
  }
  st.Done(*record);
  return Json{{"session_id", session_id}, {"status", "closed"}};
}

ApiResult<Json> Environment::Evaluate(const Json& task_json, const Json& files,
                                      const std::string& device_name, const std::string& policy,
                                      bool wait) {
  State& st = *state_;
  if (st.stopping) return StoppingError();
  std::string task_spec;
  Task task;
  if (task_json.is_string()) {
    Result<Task> loaded = LoadTask(task_json.get<std::string>());
    if (!loaded.ok()) return Invalid("task: " + loaded.status().message());
    task = std::move(loaded).value();
  } else if (task_json.is_object()) {
    for (const auto& [key, value] : task_json.items()) {
      if (key != "source" && key != "name") {
        return Invalid("task: unknown field '" + key + "' (an inline task has source and name)");
      }
    }
    if (!task_json.contains("source") || !task_json["source"].is_string()) {
      return Invalid("task.source must be the text of a model.py");
    }
    task.code = task_json["source"].get<std::string>();
    task.name = task_json.contains("name") && task_json["name"].is_string()
                    ? task_json["name"].get<std::string>()
                    : "inline";
    task.id = TaskIdForCode(task.code);
    if (Status s = CheckTaskShape(task); !s.ok()) return Invalid("task: " + s.message());
  } else {
    return Invalid("task must be a reference string or {\"source\": \"...\", \"name\"?: \"...\"}");
  }
  if (!files.is_object()) return Invalid("files must be an object of file name to content");
  Result<Candidate> candidate = Candidate::FromJson(files);
  if (!candidate.ok()) return Invalid("files: " + candidate.status().message());
  if (candidate->empty()) return Invalid("files: no candidate files (kernels/*, model_new.py)");
  JudgeRequest request;
  request.task = task;
  request.candidate = std::move(candidate).value();
  request.options = st.options.judge;
  const std::string device_text =
      device_name.empty() ? DeviceName(st.options.judge.device) : device_name;
  Result<Device> device = ParseDevice(device_text);
  if (!device.ok()) return Invalid("device '" + device_text + "' is not one of cuda, cpu");
  request.options.device = device.value();
  Result<PrecisionPolicy> precision =
      MakePrecisionPolicy(policy.empty() ? st.options.judge.policy.name : policy);
  if (!precision.ok()) return Invalid("policy: " + precision.status().message());
  request.options.policy = precision.value();

  double retry_after_s = 0;
  std::optional<JudgementQueue::Place> place =
      st.queue.Admit(DeviceName(device.value()), &retry_after_s);
  if (!place) {
    return ApiError{429, "busy",
                    std::string("the ") + DeviceName(device.value()) +
                        " judgement queue is full (the server's --queue-per-device); retry later",
                    retry_after_s};
  }
  if (wait) {
    JudgeResult result = st.queue.Run(std::move(*place), request);
    return Json{{"reward", RewardOf(result)}, {"result", result.ToJson()}};
  }
  const std::string job_id = RandomId("j_");
  Status stored = st.Exec(
      "INSERT INTO jobs (id, task, device, policy, status, reward, result, created_at, "
      "finished_at) VALUES (?, ?, ?, ?, 'queued', 'null', 'null', ?, 0)",
      {job_id, task_json.dump(), DeviceName(device.value()), precision->name, UnixNow()});
  if (!stored.ok()) return InternalError("cannot store the job: " + stored.message());
  std::lock_guard<std::mutex> lock(st.mutex);
  ++st.jobs_running;
  auto shared_place = std::make_shared<JudgementQueue::Place>(std::move(*place));
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread thread([&st, job_id, request, shared_place, done] {
    st.Persist("UPDATE jobs SET status = 'running' WHERE id = ?", {job_id});
    JudgeResult result = st.queue.Run(std::move(*shared_place), request);
    st.Persist(
        "UPDATE jobs SET status = 'done', reward = ?, result = ?, finished_at = ? WHERE id = ?",
        {RewardOf(result).dump(), result.ToJson().dump(), UnixNow(), job_id});
    std::lock_guard<std::mutex> lock(st.mutex);
    --st.jobs_running;
    *done = true;
    st.idle.notify_all();
  });
  st.job_threads.push_back({std::move(thread), done});
  return Json{{"job_id", job_id}};
}

ApiResult<Json> Environment::Job(const std::string& job_id) {
  Result<std::vector<Row>> rows =
      state_->Query("SELECT status, reward, result FROM jobs WHERE id = ?", {job_id});
  if (!rows.ok()) return InternalError(rows.status().message());
  if (rows->empty()) return Unknown("no job '" + job_id + "'");
  const Row& r = rows.value()[0];
  Json out = {{"job_id", job_id}, {"status", Text(r[0])}};
  if (Text(r[0]) == "done") {
    out["reward"] = JsonColumn(r[1]);
    out["result"] = JsonColumn(r[2]);
  } else if (Text(r[0]) == "interrupted") {
    out["message"] = "the server stopped before this job finished; submit it again";
  }
  return out;
}

Json Environment::Health() const {
  State& st = *state_;
  size_t open = 0;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    for (const auto& [id, r] : st.live) open += r->IsOpen() ? 1 : 0;
  }
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
                 {"sessions_open", open},
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
  state_->queue.SetWorkers(device, workers);
}

Json Environment::StatusPage() const {
  State& st = *state_;
  Json sessions = Json::array();
  size_t calls_last_minute = 0;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    const double now = UnixNow();
    for (const auto& [id, r] : st.live) {
      if (!r->IsOpen()) continue;  // a graded session stays live until closed or expired
      sessions.push_back({{"session_id", id},
                          {"status", r->status},
                          {"task", r->task},
                          {"device", r->device},
                          {"calls", r->calls_used},
                          {"turn_limit", r->turn_limit},
                          {"busy", r->busy > 0},
                          {"expires_in_s", r->expires_at - now}});
    }
    for (double t : st.call_times) calls_last_minute += t >= now - 60 ? 1 : 0;
  }
  // Recent judgements: session grades and finished evaluations, with the task and the reason.
  Json grades = Json::array();
  Result<std::vector<Row>> rows = st.Query(
      "SELECT 'session_id', g.session_id, s.task, g.reward, CASE WHEN json_valid(g.result) THEN "
      "json_extract(g.result, '$.reason') END, g.at FROM grades g LEFT JOIN sessions s ON s.id = "
      "g.session_id UNION ALL SELECT 'job_id', id, task, reward, CASE WHEN json_valid(result) "
      "THEN json_extract(result, '$.reason') END, finished_at FROM jobs WHERE status = 'done' "
      "ORDER BY 6 DESC LIMIT ?",
      {static_cast<int64_t>(kRecentGrades)});
  if (rows.ok()) {
    for (const Row& r : rows.value()) {
      grades.push_back({{Text(r[0]), Text(r[1])},
                        {"task", TaskLabel(r[2])},
                        {"reward", JsonColumn(r[3])},
                        {"reason", Text(r[4])},
                        {"at", Real(r[5])}});
    }
  }
  // Throughput: judgements finished per 5 minutes over the last hour, oldest bucket first.
  constexpr double kBucketS = 300;
  constexpr int kBuckets = 12;
  const double now = UnixNow();
  Json counts = Json::array();
  std::vector<int64_t> buckets(kBuckets, 0);
  Result<std::vector<Row>> times = st.Query(
      "SELECT at FROM grades WHERE at >= ?1 UNION ALL SELECT finished_at FROM jobs WHERE status = "
      "'done' AND finished_at >= ?1",
      {now - kBucketS * kBuckets});
  if (times.ok()) {
    for (const Row& r : times.value()) {
      int index = kBuckets - 1 - static_cast<int>((now - Real(r[0])) / kBucketS);
      if (index >= 0 && index < kBuckets) ++buckets[index];
    }
  }
  for (int64_t n : buckets) counts.push_back(n);
  Json health = Health();
  return {{"health", health},
          {"now", now},
          {"sessions", sessions},
          {"recent_grades", grades},
          {"throughput", {{"bucket_s", kBucketS}, {"counts", counts}}},
          {"calls_last_minute", calls_last_minute},
          {"uptime_s", now - st.started_at}};
}

void Environment::ReapExpired() { state_->Reap(); }

void Environment::Shutdown(double grace_s) {
  State& st = *state_;
  std::vector<std::shared_ptr<Live>> records;
  {
    std::unique_lock<std::mutex> lock(st.mutex);
    if (st.shut_down) return;
    st.shut_down = true;
    st.stopping = true;
    st.reaper_wake.notify_all();
    st.idle.wait_for(lock, std::chrono::duration<double>(std::max(grace_s, 0.0)),
                     [&] { return st.busy_total == 0 && st.jobs_running == 0; });
    if (st.busy_total > 0 || st.jobs_running > 0) {
      LogWarn("serve: " + std::to_string(st.busy_total) + " calls and " +
              std::to_string(st.jobs_running) + " jobs still running after the grace period");
    }
    for (const auto& [id, r] : st.live) records.push_back(r);
  }
  if (st.reaper.joinable()) st.reaper.join();
  // Sessions close without a status change: their folders stay, the next server reopens them.
  for (const std::shared_ptr<Live>& record : records) {
    std::unique_lock<std::mutex> op(record->op, std::try_to_lock);
    if (op.owns_lock() && record->session) record->session->Close();
  }
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    // Jobs still judging past the grace period stay `running` in the store (interrupted at the
    // next start); their threads are left to the process's exit.
    for (State::JobThread& job : st.job_threads) {
      if (*job.done) {
        job.thread.join();
      } else {
        job.thread.detach();
      }
    }
    st.job_threads.clear();
  }
  st.Persist("PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace cuda_agent
