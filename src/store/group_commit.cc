// group_commit.cc — batches of writers' statements in one transaction each (group_commit.h).
#include "store/group_commit.h"

namespace cuda_agent {

Status GroupCommit::Write(const std::string& sql, const std::vector<SqlValue>& params) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  pending_.push_back({ticket, sql, params});
  for (;;) {
    if (auto done = outcomes_.find(ticket); done != outcomes_.end()) {
      Status status = std::move(done->second);
      outcomes_.erase(done);
      return status;
    }
    if (!committing_) {
      // Leader: take everything that waits (this thread's statement included) and commit it.
      committing_ = true;
      std::vector<Pending> batch(std::make_move_iterator(pending_.begin()),
                                 std::make_move_iterator(pending_.end()));
      pending_.clear();
      lock.unlock();
      std::vector<Status> statuses = CommitBatch(batch);
      lock.lock();
      for (size_t i = 0; i < batch.size(); ++i) outcomes_[batch[i].ticket] = std::move(statuses[i]);
      ++batches_;
      statements_ += batch.size();
      committing_ = false;
      committed_.notify_all();
      continue;
    }
    committed_.wait(lock);
  }
}

std::vector<Status> GroupCommit::CommitBatch(const std::vector<Pending>& batch) {
  std::lock_guard<std::mutex> db_lock(db_mutex_);
  std::vector<Status> statuses;
  statuses.reserve(batch.size());
  if (batch.size() == 1) {  // no transaction around a single statement: its own autocommit
    statuses.push_back(db_.Exec(batch[0].sql, batch[0].params));
    return statuses;
  }
  if (Status begin = db_.Exec("BEGIN IMMEDIATE"); !begin.ok()) {
    return std::vector<Status>(batch.size(), begin);
  }
  // A failing statement fails alone (its changes are undone by SQLite); the others still commit.
  for (const Pending& p : batch) statuses.push_back(db_.Exec(p.sql, p.params));
  if (Status commit = db_.Exec("COMMIT"); !commit.ok()) {
    (void)db_.Exec("ROLLBACK");
    return std::vector<Status>(batch.size(), commit);
  }
  return statuses;
}

uint64_t GroupCommit::batches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return batches_;
}

uint64_t GroupCommit::statements() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return statements_;
}

}  // namespace cuda_agent
