// solver.h — where a benchmark's candidates come from (`cuda-agent bench --solver ...`):
//   solutions:<dir>  a folder of ready candidates that mirrors the suite (solutions_solver.cc)
//   kernelbench:<dir> KernelBench's own outputs: a run folder of generate_samples.py
//                    (level_L_problem_P_sample_S_kernel.py), generate_and_eval_single_sample.py's
//                    generated_kernel_level_L_problem_P.py, or the public leaderboard's
//                    docs/assets/{raw_data.json,solutions/}; each file a single-file candidate
//                    (kernelbench_solver.cc, kernelbench_layout.h)
//   agent:<model>    runs an agent episode (agent/episode.h) per task in this process, in a folder
//                    of its own, and hands its final workspace to the judge (agent_solver.cc)
// A task without a candidate is a failed task, with the solver's reason.
//
//   Result<std::unique_ptr<Solver>> solver = MakeSolver("solutions:bench/candidates/kernelbench",
//   ctx); if (Status s = (*solver)->Check(); !s.ok()) Fail(s); Solution sol =
//   (*solver)->Solve(task);   // any thread if (sol.candidate_dir.empty()) RecordMissing(task,
//   sol.note);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/episode.h"
#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "task/task.h"

namespace cuda_agent {

// SolutionSample is one of several candidates of a task (a KernelBench sample, a leaderboard
// model).
struct SolutionSample {
  std::string label;  // "0", "3", "gpt-o1"
  fs::path candidate;
};

struct Solution {
  fs::path candidate_dir;  // a candidate folder or a single-file .py; empty: none (or `samples`)
  std::string note;        // why there is none, or what the solver did
  std::string sample;      // which sample candidate_dir is, when the solver chose one of several
  // Best of n: when not empty, every sample is judged and the task's record is the best one
  // (bench.h's BestOfSamples); candidate_dir is then empty.
  std::vector<SolutionSample> samples;
};

// SolverInventory is what a solver that reads a folder of files says about it before the run.
struct SolverInventory {
  std::vector<int> levels;      // the levels its files cover; empty: any (not a file solver)
  Json unused = Json::array();  // [{"file", "reason"}]: files it read but cannot use, and why
  Json summary;                 // null, or an object describing what it found (layout, counts)
};

class Solver {
 public:
  virtual ~Solver() = default;
  // Spec names the solver with absolute paths: part of the run id.
  virtual std::string Spec() const = 0;
  // Check says whether the solver can run at all (before any task is attempted).
  virtual Status Check() const = 0;
  // Solve returns the task's candidate; called from several threads at once.
  virtual Solution Solve(const Task& task) = 0;
  // Inventory: given the whole suite (before --levels/--select), which files cannot be used.
  virtual SolverInventory Inventory(const std::vector<Task>& /*suite*/) const { return {}; }
};

// SolverContext is what solvers may need beyond their spec.
struct SolverContext {
  fs::path suite;     // the SUITE argument: task references are SUITE#NAME
  fs::path work_dir;  // agent episodes go to <work_dir>/<task name>/
  // The agent solver's episodes: limits, LLM options, time limit, judge options (device, policy,
  // timeouts), harness and binary; each task fills in its task, folder and model.
  EpisodeSpec episode;
  // The kernelbench solver's --sample: a sample id ("0", KernelBench's fast_p convention; "" is
  // "0"), a leaderboard model name, or "best" (every sample judged, the best kept).
  std::string sample;
};

// MakeSolver parses "solutions:<dir>", "kernelbench:<dir>" or "agent:<model spec>".
Result<std::unique_ptr<Solver>> MakeSolver(const std::string& spec, const SolverContext& context);

// FindSolution looks for a task's candidate folder under a solutions folder: <dir>/<task name>/
// (for a KernelBench folder the name is level1/19_ReLU, for a folder of task files the file stem),
// then <dir>/<task id>/, then <dir>/<last part of the name>/. Empty when none exists.
fs::path FindSolution(const fs::path& dir, const Task& task);

// SafeRelativeName turns a task name into a relative path that stays inside a folder: characters
// other than [A-Za-z0-9._-/] become '_', and empty, "." and ".." parts are dropped.
fs::path SafeRelativeName(const std::string& name);

std::unique_ptr<Solver> MakeSolutionsSolver(const fs::path& dir);
std::unique_ptr<Solver> MakeKernelBenchSolver(const fs::path& dir, const std::string& sample);
std::unique_ptr<Solver> MakeAgentSolver(const std::string& model, const SolverContext& context);

}  // namespace cuda_agent
