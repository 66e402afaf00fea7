// task_check.h — `cuda-agent tasks check`: which tasks of a suite a trivial answer passes (zeros, a
// constant, mean/std noise, the input itself) or whose output does not depend on its input, under
// each precision policy (HACKS B6; docs/precision.md). A task that such an answer passes cannot
// tell a real kernel from a degenerate one; the report names them.
//
// One sandboxed harness job (`task_check`, docs/harness-protocol.md) checks task after task and
// appends one JSON line per finished task to a progress file. When the job dies (crash, the
// per-task watchdog, out of memory), the task it had started is recorded as failed and a new job
// takes the rest.
//
//   TaskCheckOptions opt;
//   opt.device = Device::kCpu;
//   Result<Json> report = RunTaskCheck(env, "examples", SelectTasks(suite, "", 0), opt);
//   if (report.ok()) std::cout << FormatTaskCheckMarkdown(report.value());
//
// The command itself (`cuda-agent tasks check`) is cli/task_check_command.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"
#include "harness/toolchain.h"
#include "sandbox/sandbox.h"
#include "task/task.h"

namespace cuda_agent {

// TrivialAnswers are the keys of a record's "answers", in report order: zeros, constant, noise,
// input, independent (the output for another input set).
const std::vector<std::string>& TrivialAnswers();

struct TaskCheckOptions {
  Device device = Device::kCuda;
  std::vector<std::string> policies = {"strict", "tf32-fair", "paper"};
  int64_t seed = 1234;          // weights, input sets A (seed + 1) and B (seed + 2), noise
  double task_timeout_s = 600;  // per task (the job's watchdog); <= 0: none
  fs::path cache_dir;           // toolchain cache and work folder; empty: DefaultCacheDir()
  fs::path progress_file;       // optional JSONL kept across runs: tasks in it are not run again
  const Sandbox* sandbox = nullptr;  // null: Sandbox::Default()
  uint64_t job_memory_bytes = 0;     // cgroup memory limit of the job; 0: 3/4 of the machine's
  // on_record is called once per task as its record arrives, with the report so far.
  std::function<void(const Json& record, const Json& report)> on_record;
};

// TaskCheckPolicies parses --policy: all (strict, tf32-fair, paper) or one policy name.
Result<std::vector<std::string>> TaskCheckPolicies(const std::string& flag);

// RunTaskCheck checks `tasks` and returns the report: {"suite", "device", "policies", "seed",
// "env", "complete", "counts", "summary", "tasks": [record, ...]} (docs/cli.md). An error Status
// means the check could not run at all (no harness, no toolchain, the job failing before any task).
Result<Json> RunTaskCheck(const HarnessEnv& env, const std::string& suite,
                          const std::vector<Task>& tasks, const TaskCheckOptions& options);

// --- Pure parts, tested on their own ---

// ProgressState is what a progress file holds: the finished records by name and the order in which
// tasks were started.
struct ProgressState {
  std::map<std::string, Json> records;
  std::vector<std::string> started;
};

// ParseProgress reads progress lines ({"started": NAME} or a record with "name"); lines that are
// not JSON objects (one cut short by a crash) are skipped.
ProgressState ParseProgress(const std::string& text);

// IsFlagged: a checked record that some trivial answer passes under at least one policy.
bool IsFlagged(const Json& record);

// BlameRecord is the record of a task in which a job ended without finishing it.
Json BlameRecord(const Task& task, const JobOutcome& job, double task_timeout_s);

// MakeTaskCheckReport assembles the report from the records (in task order; tasks without a record
// are counted as pending and the report is not complete).
Json MakeTaskCheckReport(const std::string& suite, const std::vector<Task>& tasks,
                         const std::map<std::string, Json>& records,
                         const TaskCheckOptions& options, const Json& env);

// FormatTaskCheckMarkdown renders a report: a summary (tasks checked, failed, per policy how many
// tasks each trivial answer passes), then a table of only the flagged tasks, then the failures.
std::string FormatTaskCheckMarkdown(const Json& report);

// DescribeRecord is one line about a record, for progress output: "flagged: zeros (paper)", "ok",
// ...
std::string DescribeRecord(const Json& record);

}  // namespace cuda_agent
