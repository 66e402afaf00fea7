// baselines_run.h — `cuda-agent baselines`: eager and torch.compile timings for every task of a
// suite, kept in the baseline store (store/baseline_store.h) for the judge, resumable: each task's
// outcome is a record in the results store under a run id made of GPU × torch × policy × settings,
// so re-running skips finished tasks, and tasks that cannot run are listed with their reason.
//
//   std::string run = BaselinesRunId(key_of_any_task, opt);
//   RunSuite(tasks, results, {run, jobs, force}, [&](const Task& t) {
//     if (auto stored = LookUp(t)) return *stored;          // already in the baseline store
//     return BaselinesRecord(Judge(env).Baselines(t, opt));
//   }, MakeProgressView(std::cerr));
//   Json summary = BaselinesSummary(tasks, results.Records(run).value());
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "judge/judge_result.h"
#include "store/baseline_store.h"
#include "task/task.h"

namespace cuda_agent {

// BaselinesRunId: "baselines-" + a hash of device, torch version, policy, warm-up, iterations and
// which baselines are measured (a key's task id and target are ignored).
std::string BaselinesRunId(const BaselineKey& key, bool eager, bool compile);

// BaselinesRecord turns a Judge::Baselines result into a record: status measured (the task runs;
// compile_error says when torch.compile failed), task_error (the task cannot run: reason) or
// internal_error (retried on resume); ok, summary, reason, measure, eager_us, compile_us,
// compile_seconds, compile_error, device, env, stage_seconds.
Json BaselinesRecord(const JudgeResult& result);

// StoredBaselinesRecord is the record of a task whose requested baselines are all in the store
// already (null for one not requested); nothing is measured.
Json StoredBaselinesRecord(const std::optional<StoredBaseline>& eager,
                           const std::optional<StoredBaseline>& compile);

// BaselinesSummary: {"tasks", "measured", "pending", "cannot_run": [{"task", "reason"}],
// "compile_failed": [{"task", "reason"}], "internal_errors": [{"task", "reason"}]} over the suite's
// tasks, in suite order; "pending" counts the tasks not run yet and those stopped by an internal
// error.
Json BaselinesSummary(const std::vector<Task>& tasks, const std::map<std::string, Json>& records);

// FormatBaselinesLine is one text line per task: "level1/19_ReLU: eager 12.3 us, compile 10.1 us".
std::string FormatBaselinesLine(const Json& record);

}  // namespace cuda_agent
