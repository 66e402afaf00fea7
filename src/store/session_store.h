// session_store.h — what `cuda-agent serve` keeps durable (state_dir/server.sqlite, WAL): its
// sessions, their answered calls and grades, and the one-shot evaluation jobs. The schema is
// versioned (store/migrations.h, schema "server"); a file written before versions existed is
// migrated in place. Writes of concurrent request threads share commits (store/group_commit.h)
// and return once they are durable; reads share the one connection. The server's rooms
// (server/environment, server/status_queries) read and write it only through this class.
//
//   Result<std::unique_ptr<SessionStore>> store = SessionStore::Open(state_dir / "server.sqlite");
//   (*store)->AddCall({.session_id = "s_1", .call_id = "c1", .seq = 1, .tool = "Read", ...});
//   std::optional<StoredCall> again = (*store)->Call("s_1", "c1");
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "store/database.h"
#include "store/group_commit.h"
#include "store/migrations.h"

namespace cuda_agent {

// SessionRow: a session as stored. `task` is the request's task as JSON text (a reference string
// or {"source", "name"?}); `task_spec` is what LoadTask takes (the inline task's file).
struct SessionRow {
  std::string id;
  std::string task;
  std::string task_spec;
  std::string device;
  std::string policy;
  int turn_limit = 0;
  double ttl_s = 0;
  double created_at = 0;
  double expires_at = 0;
  std::string status;  // open | graded | expired | interrupted | closed
  std::string dir;
  std::string task_dir;
  std::string reason;  // why it was interrupted
};

// CallRow: one answered tool call.
struct CallRow {
  std::string session_id;
  std::string call_id;
  int seq = 0;  // the call's number in its session, from 1
  std::string tool;
  std::string arguments;
  std::string text;  // the observation
  bool is_error = false;
  double at = 0;
};

// GradeRow / JobRow: JSON text columns (reward: a number or null; result: a JudgeResult).
struct GradeRow {
  std::string reward;
  std::string result;
};
struct JobRow {
  std::string status;  // queued | running | done | interrupted
  std::string reward;
  std::string result;
};

// JudgementRow: a grade or a finished job, for the status page's recent list.
struct JudgementRow {
  bool is_job = false;
  std::string id;      // session id or job id
  std::string task;    // the task's JSON text
  std::string reward;  // JSON text
  std::string reason;  // the result's reason, if any
  double at = 0;
};

class SessionStore {
 public:
  // Open opens (or creates) the file, migrates it, and sets WAL with synchronous=NORMAL and no
  // automatic checkpoint (the reaper checkpoints: CheckpointPassive).
  static Result<std::unique_ptr<SessionStore>> Open(const fs::path& path);
  // Migrations: the "server" schema's steps (version 1 is the schema of before versions).
  static const std::vector<Migration>& Migrations();
  static constexpr const char* kSchema = "server";

  // Writes: each returns once committed.
  Status AddSession(const SessionRow& row);
  Status SetSessionStatus(const std::string& id, const std::string& status);
  // EndSession sets the status and stamps expires_at (when the session ended).
  Status EndSession(const std::string& id, const std::string& status, double at);
  Status InterruptSession(const std::string& id, const std::string& reason, double at);
  Status AddCall(const CallRow& call);  // a call id answered before keeps its first answer
  Status PutGrade(const std::string& session_id, const std::string& reward,
                  const std::string& result, double at);
  Status AddJob(const std::string& id, const std::string& task, const std::string& device,
                const std::string& policy, double at);
  Status SetJobRunning(const std::string& id);
  Status RemoveJob(const std::string& id);  // a job that was never started nor answered
  Status FinishJob(const std::string& id, const std::string& reward, const std::string& result,
                   double at);
  // InterruptUnfinishedJobs marks queued and running jobs interrupted (at start: their server
  // stopped before they finished).
  Status InterruptUnfinishedJobs(double at);

  // Reads.
  Result<std::optional<SessionRow>> Session(const std::string& id);
  // Resumable: sessions open or graded when the last server stopped, with a folder.
  Result<std::vector<SessionRow>> Resumable();
  // Calls: the session's answered calls (ids and seq only; text and arguments left empty).
  Result<std::vector<CallRow>> CallIds(const std::string& session_id);
  std::optional<CallRow> Call(const std::string& session_id, const std::string& call_id);
  // CallsUsed: the highest seq of the session's calls (0 without any).
  int CallsUsed(const std::string& session_id);
  std::optional<GradeRow> Grade(const std::string& session_id);
  Result<std::optional<JobRow>> Job(const std::string& id);
  // RecentJudgements: grades and finished jobs, newest first.
  Result<std::vector<JudgementRow>> RecentJudgements(size_t limit);
  // JudgementTimes: when grades and finished jobs since `since` (Unix s) were made.
  Result<std::vector<double>> JudgementTimes(double since);

  // CheckpointPassive copies the WAL into the file on a connection of its own (not inside a
  // request's commit, whose fsync would otherwise hold every request behind it); from one thread.
  void CheckpointPassive();
  // CheckpointTruncate empties the WAL (at shutdown).
  Status CheckpointTruncate();
  const fs::path& path() const { return db_.path(); }

 private:
  explicit SessionStore(Database db) : db_(std::move(db)) {}
  Result<std::vector<Row>> Query(const std::string& sql, const std::vector<SqlValue>& params);

  Database db_;
  std::mutex db_mutex_;                 // one connection, shared by every request thread
  GroupCommit writer_{db_, db_mutex_};  // writes of concurrent requests share commits
  std::optional<Database> checkpointer_;
};

}  // namespace cuda_agent
