// group_commit.h — many threads' writes to one SQLite connection, committed together. Each Write
// blocks until its statement is committed (durable as the connection's synchronous setting says),
// but threads that arrive while a commit runs are gathered into the next one: one transaction per
// batch instead of one per statement, so writers from many request threads do not queue behind
// each other's commits (serve's calls table: docs/benchmarks.md, issue 19).
//
//   GroupCommit writer(db, db_mutex);
//   Status s = writer.Write("INSERT INTO t (k, v) VALUES (?, ?)", {"key", "value"});
//
// The first waiting thread commits the batch (no thread of its own); `db_mutex` is the connection's
// lock, held only while a batch runs, so readers of the same connection take it as before.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "store/database.h"

namespace cuda_agent {

class GroupCommit {
 public:
  GroupCommit(Database& db, std::mutex& db_mutex) : db_(db), db_mutex_(db_mutex) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Write runs `sql` in the next batch and returns once that batch committed: the statement's own
  // status, or the commit's error.
  Status Write(const std::string& sql, const std::vector<SqlValue>& params = {});

  // Batches committed so far and the statements in them (for tests and the status page).
  uint64_t batches() const;
  uint64_t statements() const;

 private:
  struct Pending {
    uint64_t ticket;
    std::string sql;
    std::vector<SqlValue> params;
  };
  // CommitBatch runs `batch` in one transaction; returns each statement's status.
  std::vector<Status> CommitBatch(const std::vector<Pending>& batch);

  Database& db_;
  std::mutex& db_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable committed_;
  std::deque<Pending> pending_;
  std::map<uint64_t, Status> outcomes_;  // tickets committed, not yet collected by their writer
  uint64_t next_ticket_ = 1;
  bool committing_ = false;
  uint64_t batches_ = 0;
  uint64_t statements_ = 0;
};

}  // namespace cuda_agent
