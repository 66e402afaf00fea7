// session_store.cc — the "server" schema and its statements.
#include "store/session_store.h"

namespace cuda_agent {
namespace {

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

constexpr const char* kSessionColumns =
    "id, task, task_spec, device, policy, turn_limit, ttl_s, created_at, expires_at, status, dir, "
    "task_dir, reason";

SessionRow SessionFrom(const Row& r) {
  SessionRow s;
  s.id = Text(r[0]);
  s.task = Text(r[1]);
  s.task_spec = Text(r[2]);
  s.device = Text(r[3]);
  s.policy = Text(r[4]);
  s.turn_limit = static_cast<int>(Integer(r[5]));
  s.ttl_s = Real(r[6]);
  s.created_at = Real(r[7]);
  s.expires_at = Real(r[8]);
  s.status = Text(r[9]);
  s.dir = Text(r[10]);
  s.task_dir = Text(r[11]);
  s.reason = Text(r[12]);
  return s;
}

}  // namespace

const std::vector<Migration>& SessionStore::Migrations() {
  static const std::vector<Migration> steps = {
      {1,
       "sessions, calls, grades, jobs (the tables of before versions: kept as they are)",
       {"CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, task TEXT, task_spec TEXT, "
        "device TEXT, policy TEXT, turn_limit INTEGER, ttl_s REAL, created_at REAL, expires_at "
        "REAL, status TEXT, dir TEXT, task_dir TEXT, reason TEXT)",
        "CREATE TABLE IF NOT EXISTS calls (session_id TEXT, call_id TEXT, seq INTEGER, tool TEXT, "
        "arguments TEXT, text TEXT, is_error INTEGER, at REAL, PRIMARY KEY (session_id, "
        "call_id))",
        "CREATE TABLE IF NOT EXISTS grades (session_id TEXT PRIMARY KEY, reward TEXT, result "
        "TEXT, at REAL)",
        "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, task TEXT, device TEXT, policy "
        "TEXT, status TEXT, reward TEXT, result TEXT, created_at REAL, finished_at REAL)"}},
      {2,
       "indexes for the status page's recent judgements and throughput",
       {"CREATE INDEX IF NOT EXISTS grades_by_time ON grades (at)",
        "CREATE INDEX IF NOT EXISTS jobs_by_status_time ON jobs (status, finished_at)"}},
  };
  return steps;
}

Result<std::unique_ptr<SessionStore>> SessionStore::Open(const fs::path& path) {
  Result<Database> db = Database::Open(path);
  if (!db.ok()) return db.status();
  // WAL with synchronous=NORMAL: a commit is in the log before the answer leaves, so it survives
  // the process being killed (kill -9); only a power loss may take the last commits.
  if (Status s = db->Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  if (Result<std::vector<Row>> r = db->Query("PRAGMA wal_autocheckpoint=0"); !r.ok()) {
    return r.status();
  }
  if (Status s = Migrate(db.value(), kSchema, Migrations()); !s.ok()) return s;
  return std::unique_ptr<SessionStore>(new SessionStore(std::move(db).value()));
}

Result<std::vector<Row>> SessionStore::Query(const std::string& sql,
                                             const std::vector<SqlValue>& params) {
  std::lock_guard<std::mutex> lock(db_mutex_);
  return db_.Query(sql, params);
}

Status SessionStore::AddSession(const SessionRow& s) {
  return writer_.Write(
      std::string("INSERT INTO sessions (") + kSessionColumns +
          ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {s.id, s.task, s.task_spec, s.device, s.policy, static_cast<int64_t>(s.turn_limit), s.ttl_s,
       s.created_at, s.expires_at, s.status, s.dir, s.task_dir, s.reason});
}

Status SessionStore::SetSessionStatus(const std::string& id, const std::string& status) {
  return writer_.Write("UPDATE sessions SET status = ? WHERE id = ?", {status, id});
}

Status SessionStore::EndSession(const std::string& id, const std::string& status, double at) {
  return writer_.Write("UPDATE sessions SET status = ?, expires_at = ? WHERE id = ?",
                       {status, at, id});
}

Status SessionStore::InterruptSession(const std::string& id, const std::string& reason, double at) {
  return writer_.Write(
      "UPDATE sessions SET status = 'interrupted', reason = ?, expires_at = ? WHERE id = ?",
      {reason, at, id});
}

Status SessionStore::AddCall(const CallRow& c) {
  return writer_.Write(
      "INSERT OR IGNORE INTO calls (session_id, call_id, seq, tool, arguments, text, is_error, at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      {c.session_id, c.call_id, static_cast<int64_t>(c.seq), c.tool, c.arguments, c.text,
       static_cast<int64_t>(c.is_error ? 1 : 0), c.at});
}

Status SessionStore::PutGrade(const std::string& session_id, const std::string& reward,
                              const std::string& result, double at) {
  return writer_.Write(
      "INSERT OR REPLACE INTO grades (session_id, reward, result, at) VALUES (?, ?, ?, ?)",
      {session_id, reward, result, at});
}

Status SessionStore::AddJob(const std::string& id, const std::string& task,
                            const std::string& device, const std::string& policy, double at) {
  return writer_.Write(
      "INSERT INTO jobs (id, task, device, policy, status, reward, result, created_at, "
      "finished_at) VALUES (?, ?, ?, ?, 'queued', 'null', 'null', ?, 0)",
      {id, task, device, policy, at});
}

Status SessionStore::SetJobRunning(const std::string& id) {
  return writer_.Write("UPDATE jobs SET status = 'running' WHERE id = ?", {id});
}

Status SessionStore::RemoveJob(const std::string& id) {
  return writer_.Write("DELETE FROM jobs WHERE id = ?", {id});
}

Status SessionStore::FinishJob(const std::string& id, const std::string& reward,
                               const std::string& result, double at) {
  return writer_.Write(
      "UPDATE jobs SET status = 'done', reward = ?, result = ?, finished_at = ? WHERE id = ?",
      {reward, result, at, id});
}

Status SessionStore::InterruptUnfinishedJobs(double at) {
  return writer_.Write(
      "UPDATE jobs SET status = 'interrupted', finished_at = ? WHERE status IN ('queued', "
      "'running')",
      {at});
}

Result<std::optional<SessionRow>> SessionStore::Session(const std::string& id) {
  Result<std::vector<Row>> rows =
      Query(std::string("SELECT ") + kSessionColumns + " FROM sessions WHERE id = ?", {id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<SessionRow>();
  return std::optional<SessionRow>(SessionFrom(rows->front()));
}

Result<std::vector<SessionRow>> SessionStore::Resumable() {
  Result<std::vector<Row>> rows =
      Query(std::string("SELECT ") + kSessionColumns +
                " FROM sessions WHERE status IN ('open', 'graded') AND dir != ''",
            {});
  if (!rows.ok()) return rows.status();
  std::vector<SessionRow> out;
  for (const Row& r : rows.value()) out.push_back(SessionFrom(r));
  return out;
}

Result<std::vector<CallRow>> SessionStore::CallIds(const std::string& session_id) {
  Result<std::vector<Row>> rows =
      Query("SELECT call_id, seq FROM calls WHERE session_id = ?", {session_id});
  if (!rows.ok()) return rows.status();
  std::vector<CallRow> out;
  for (const Row& r : rows.value()) {
    CallRow call;
    call.session_id = session_id;
    call.call_id = Text(r[0]);
    call.seq = static_cast<int>(Integer(r[1]));
    out.push_back(std::move(call));
  }
  return out;
}

std::optional<CallRow> SessionStore::Call(const std::string& session_id,
                                          const std::string& call_id) {
  Result<std::vector<Row>> rows = Query(
      "SELECT seq, tool, arguments, text, is_error, at FROM calls WHERE session_id = ? AND "
      "call_id = ?",
      {session_id, call_id});
  if (!rows.ok() || rows->empty()) return std::nullopt;
  const Row& r = rows->front();
  return CallRow{.session_id = session_id,
                 .call_id = call_id,
                 .seq = static_cast<int>(Integer(r[0])),
                 .tool = Text(r[1]),
                 .arguments = Text(r[2]),
                 .text = Text(r[3]),
                 .is_error = Integer(r[4]) != 0,
                 .at = Real(r[5])};
}

int SessionStore::CallsUsed(const std::string& session_id) {
  Result<std::vector<Row>> rows =
      Query("SELECT COALESCE(MAX(seq), 0) FROM calls WHERE session_id = ?", {session_id});
  return rows.ok() && !rows->empty() ? static_cast<int>(Integer(rows->front()[0])) : 0;
}

std::optional<GradeRow> SessionStore::Grade(const std::string& session_id) {
  Result<std::vector<Row>> rows =
      Query("SELECT reward, result FROM grades WHERE session_id = ?", {session_id});
  if (!rows.ok() || rows->empty()) return std::nullopt;
  return GradeRow{Text(rows->front()[0]), Text(rows->front()[1])};
}

Result<std::optional<JobRow>> SessionStore::Job(const std::string& id) {
  Result<std::vector<Row>> rows =
      Query("SELECT status, reward, result FROM jobs WHERE id = ?", {id});
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::optional<JobRow>();
  const Row& r = rows->front();
  return std::optional<JobRow>(JobRow{Text(r[0]), Text(r[1]), Text(r[2])});
}

Result<std::vector<JudgementRow>> SessionStore::RecentJudgements(size_t limit) {
  Result<std::vector<Row>> rows = Query(
      "SELECT 0, g.session_id, s.task, g.reward, CASE WHEN json_valid(g.result) THEN "
      "json_extract(g.result, '$.reason') END, g.at FROM grades g LEFT JOIN sessions s ON s.id = "
      "g.session_id UNION ALL SELECT 1, id, task, reward, CASE WHEN json_valid(result) THEN "
      "json_extract(result, '$.reason') END, finished_at FROM jobs WHERE status = 'done' ORDER BY "
      "6 DESC LIMIT ?",
      {static_cast<int64_t>(limit)});
  if (!rows.ok()) return rows.status();
  std::vector<JudgementRow> out;
  for (const Row& r : rows.value()) {
    out.push_back({Integer(r[0]) != 0, Text(r[1]), Text(r[2]), Text(r[3]), Text(r[4]), Real(r[5])});
  }
  return out;
}

Result<std::vector<double>> SessionStore::JudgementTimes(double since) {
  Result<std::vector<Row>> rows = Query(
      "SELECT at FROM grades WHERE at >= ?1 UNION ALL SELECT finished_at FROM jobs WHERE status = "
      "'done' AND finished_at >= ?1",
      {since});
  if (!rows.ok()) return rows.status();
  std::vector<double> out;
  for (const Row& r : rows.value()) out.push_back(Real(r[0]));
  return out;
}

void SessionStore::CheckpointPassive() {
  if (!checkpointer_) {
    Result<Database> db = Database::Open(db_.path());
    if (!db.ok()) return;
    checkpointer_.emplace(std::move(db).value());
  }
  (void)checkpointer_->Query("PRAGMA wal_checkpoint(PASSIVE)");
}

Status SessionStore::CheckpointTruncate() {
  return writer_.Write("PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace cuda_agent
