// suite_runner.cc — the worker threads of a suite run.
#include "eval/suite_runner.h"

#include <atomic>
#include <mutex>
#include <thread>

namespace cuda_agent {

bool IsFinalRecord(const Json& record) {
  return record.is_object() && record.value("status", std::string()) != "internal_error" &&
         !record.value("status", std::string()).empty();
}

Json TaskRef(const Task& task) {
  return {{"id", task.id}, {"name", task.name}, {"level", task.level}};
}

std::vector<Task> PendingTasks(const std::vector<Task>& tasks,
                               const std::map<std::string, Json>& records) {
  std::vector<Task> pending;
  for (const Task& t : tasks) {
    auto it = records.find(t.id);
    if (it == records.end() || !IsFinalRecord(it->second)) pending.push_back(t);
  }
  return pending;
}

Status RunSuite(const std::vector<Task>& tasks, ResultsStore& store, const SuiteRunOptions& options,
                const TaskWork& work, std::unique_ptr<ProgressView> view) {
  if (options.force) {
    if (Status s = store.ClearRun(options.run_id); !s.ok()) return s;
  }
  Result<std::map<std::string, Json>> records = store.Records(options.run_id);
  if (!records.ok()) return records.status();
  const std::vector<Task> pending = PendingTasks(tasks, records.value());
  Progress progress(static_cast<int>(tasks.size()), static_cast<int>(tasks.size() - pending.size()),
                    std::move(view));
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  Status first_error;
  auto worker = [&] {
    for (size_t i = next++; i < pending.size() && !stop; i = next++) {
      const Task& task = pending[i];
      Json record;
      try {
        record = work(task);
      } catch (const std::exception& e) {
        record = {{"status", "internal_error"},
                  {"ok", false},
                  {"summary", std::string("internal error: ") + e.what()}};
      }
      record["task"] = TaskRef(task);
      if (Status s = store.Put(options.run_id, task.id, record); !s.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = s;
        stop = true;
        return;
      }
      progress.TaskDone(task.name, record.value("summary", std::string()),
                        record.value("ok", false));
    }
  };
  const int threads = std::max(1, std::min<int>(options.jobs, static_cast<int>(pending.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  progress.Close();
  return first_error;
}

}  // namespace cuda_agent
