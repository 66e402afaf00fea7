// metrics.h — the benchmark metrics of the paper (PAPER.md §5) as pure functions over per-task
// scores: pass rate; faster-than-eager and faster-than-compile rates (the share of *all* tasks that
// are correct and more than 5% faster, (t0 − t)/t0 > 0.05 strictly, exactly as the reward decides);
// geometric-mean speedups vs eager and vs torch.compile; fast_p (share of all tasks correct with a
// speedup > p). Per level, and overall weighted by tasks per level. docs/bench.md states the rules.
//
// Failed tasks enter the geometric mean in two conventions, both reported: `geomean_all` counts a
// failed task as 1.0× (the original program keeps running), over every task; `geomean_correct`
// takes correct tasks only.
//
//   std::vector<TaskScore> scores = {{"level1/19_ReLU", 1, true, 10.0, 20.0, 15.0}};
//   SuiteMetrics m = ComputeMetrics(scores, {1, 2, 3}, {});
//   double pass = *m.overall.pass_rate;
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace cuda_agent {

// TaskScore is what the metrics need of one task's result.
struct TaskScore {
  std::string name;
  int level = 0;         // 0: the suite has no levels
  bool correct = false;  // verified correct and timed
  std::optional<double> candidate_us;
  std::optional<double> eager_us;
  std::optional<double> compile_us;  // the caller substitutes eager when torch.compile failed
};

enum class Baseline { kEager, kCompile };

// FastPThresholds are the p of fast_p, ascending: 0, 0.5, 0.8, 1, 1.5, 2.
const std::vector<double>& FastPThresholds();

// FastPKey is the key of threshold p in the JSON's "fast_p" object: "0", "0.5", "1", ...
std::string FastPKey(double p);

// Speedup is baseline time / candidate time for a correct task with both times, else nothing.
std::optional<double> Speedup(const TaskScore& score, Baseline baseline);

// VersusMetrics compare the candidates with one baseline; rates are shares of all the group's
// tasks.
struct VersusMetrics {
  int with_speedup = 0;  // correct tasks with a speedup against this baseline
  int faster = 0;        // correct and more than 5% faster
  double faster_rate = 0;
  std::optional<double> geomean_all;      // failed = 1.0×
  std::optional<double> geomean_correct;  // correct tasks only; absent when none is correct
  std::vector<double> fast_p;             // one per FastPThresholds()
};

// GroupMetrics are one level's metrics, or the overall ones.
struct GroupMetrics {
  int level = 0;
  int tasks = 0;
  int correct = 0;
  std::optional<double> pass_rate;     // absent for an empty level
  std::optional<VersusMetrics> eager;  // absent for an empty level, or a baseline not measured
  std::optional<VersusMetrics> compile;
};

struct SuiteMetrics {
  std::vector<GroupMetrics> levels;  // ascending; every level asked for, even when empty
  GroupMetrics overall;              // each level weighted by its number of tasks
};

// MetricsOptions say which baselines the run measured.
struct MetricsOptions {
  bool eager = true;
  bool compile = true;
};

// ComputeMetrics groups `scores` by level (plus every level in `levels`, so an empty level shows)
// and combines the levels into the overall metrics, weighting each by its number of tasks.
SuiteMetrics ComputeMetrics(const std::vector<TaskScore>& scores, const std::vector<int>& levels,
                            const MetricsOptions& options);

// MetricsToJson: {"fast_p_thresholds", "overall": group, "levels": [group, ...]}; a group is
// {"level", "tasks", "correct", "pass_rate", "eager": versus, "compile": versus}, absent values
// null.
Json MetricsToJson(const SuiteMetrics& metrics);

}  // namespace cuda_agent
