// bench.h — `cuda-agent bench`: for every task of a suite, get a candidate from the solver, judge
// it, and store the task's record in the results store as soon as it is known; then build the
// report from the store alone (so a run that was interrupted and resumed reports exactly what an
// uninterrupted one would). docs/bench.md describes records, report and metrics.
//
//   BenchRun run = {...};  run.run_id = BenchRunId(run);
//   Status s = RunBench(run, tasks, *solver, judge_fn, store, {run.run_id, jobs},
//   MakeProgressView(std::cerr)); Json report = BuildBenchReport(run, tasks,
//   store.Records(run.run_id).value());
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "eval/metrics.h"
#include "eval/progress.h"
#include "eval/solver.h"
#include "eval/suite_runner.h"
#include "judge/judge_result.h"
#include "store/results_store.h"
#include "task/task.h"

namespace cuda_agent {

inline constexpr int kBenchSchemaVersion = 1;

// JudgeFn judges a candidate folder for a task: Judge(env).Run(&task, dir, options) in the binary,
// a deterministic fake in tests. Called from several threads at once.
using JudgeFn = std::function<JudgeResult(const Task& task, const fs::path& candidate)>;

// BenchRun describes a run; suite, solver, policy and device make its id.
struct BenchRun {
  std::string run_id;
  std::string suite;   // absolute path
  std::string solver;  // Solver::Spec()
  std::string policy;
  std::string device;
  std::vector<int> levels;  // the levels asked for (--levels); empty: those the tasks have
  bool eager = true;        // which baselines the judge measures
  bool compile = true;
  // What the solver found in its folder (Solver::Inventory): its summary and the files it cannot
  // use, with reasons; shown in the report, not part of the run id.
  SolverInventory inventory;
};

std::string BenchRunId(const BenchRun& run);
Json BenchRunDescription(const BenchRun& run);

// BenchRecord turns a solution and its judgement (null when there was no candidate) into the stored
// record: status correct | failed | missing | task_error | internal_error, ok, summary, reward,
// stage, error_kind, reason, candidate {dir, hash}, measure, candidate_us, eager_us, compile_us,
// compile_error, speedup_vs_eager, speedup_vs_compile, env {gpu, torch_version}, judge_seconds,
// sample (which of several samples the candidate is; null when the solver had one).
Json BenchRecord(const Solution& solution, const JudgeResult* result);

// BestOfSamples makes a task's record from its samples' records (best of n): the best by reward
// (a verdict's -1 below a correct 1/2/3), then speedup vs eager, then the first listed; it gets
// "samples": [{sample, status, reward, speedup_vs_eager, summary}] and a summary saying "best of
// n". When a sample ended in an internal error the task's record is that one (not final: the task
// runs again on resume, as a single candidate's would).
Json BestOfSamples(const std::vector<Json>& sample_records);

// ScoreFromRecord is what the metrics take from a record. Where torch.compile failed, the compile
// time is the eager time (compile falls back to eager).
TaskScore ScoreFromRecord(const Json& record);

// RunBench runs the tasks without a final record (see suite_runner.h).
Status RunBench(const BenchRun& run, const std::vector<Task>& tasks, Solver& solver,
                const JudgeFn& judge, ResultsStore& store, const SuiteRunOptions& options,
                std::unique_ptr<ProgressView> view);

// BuildBenchReport assembles the report from stored records only: {"schema_version", "kind":
// "bench", "run", "generated_at", "complete", "counts", "env", "conventions", "metrics", "tasks"}.
Json BuildBenchReport(const BenchRun& run, const std::vector<Task>& tasks,
                      const std::map<std::string, Json>& records);

}  // namespace cuda_agent
