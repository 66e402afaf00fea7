// suite_runner.h — runs one piece of work per task of a suite, `jobs` tasks at a time, and stores
// each task's record in the results store the moment it is done, so an interrupted run resumes:
// tasks whose stored record is final are not run again. Shared by `bench` and `baselines`.
//
// A record is a JSON object with at least "status" (a word; "internal_error" is not final: our own
// machinery failed, so the task runs again on resume), "ok" (bool) and "summary" (one line for
// progress). The runner adds "task": {"id", "name", "level"}.
//
//   SuiteRunOptions opt{run_id, /*jobs=*/4};
//   Status s = RunSuite(tasks, store, opt, [&](const Task& t) { return JudgeRecord(t); },
//                       MakeProgressView(std::cerr));
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "eval/progress.h"
#include "store/results_store.h"
#include "task/task.h"

namespace cuda_agent {

struct SuiteRunOptions {
  std::string run_id;
  int jobs = 1;
  bool force = false;  // forget the run's stored records first: every task runs again
};

// TaskWork computes one task's record; it is called from `jobs` threads at once and must not throw
// (an exception becomes an internal_error record).
using TaskWork = std::function<Json(const Task&)>;

// IsFinalRecord: a stored record that needs no re-run.
bool IsFinalRecord(const Json& record);

// TaskRef is the "task" member of a record.
Json TaskRef(const Task& task);

// PendingTasks are the tasks without a final record in `records`, in suite order.
std::vector<Task> PendingTasks(const std::vector<Task>& tasks,
                               const std::map<std::string, Json>& records);

// RunSuite runs the pending tasks. An error Status: the store failed (the run stops at the first
// task whose record could not be stored) or the run's records could not be read.
Status RunSuite(const std::vector<Task>& tasks, ResultsStore& store, const SuiteRunOptions& options,
                const TaskWork& work, std::unique_ptr<ProgressView> view);

}  // namespace cuda_agent
