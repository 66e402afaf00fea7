// solver.h — where a benchmark's candidates come from (`cuda-agent bench --solver ...`):
//   solutions:<dir>  a folder of ready candidates that mirrors the suite (solutions_solver.cc)
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

#include "agent/episode.h"
#include "common/fs.h"
#include "common/status.h"
#include "task/task.h"

namespace cuda_agent {

struct Solution {
  fs::path candidate_dir;  // empty: no candidate for this task
  std::string note;        // why there is none, or what the solver did
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
};

// SolverContext is what solvers may need beyond their spec.
struct SolverContext {
  fs::path suite;     // the SUITE argument: task references are SUITE#NAME
  fs::path work_dir;  // agent episodes go to <work_dir>/<task name>/
  // The agent solver's episodes: limits, LLM options, time limit, judge options (device, policy,
  // timeouts), harness and binary; each task fills in its task, folder and model.
  EpisodeSpec episode;
};

// MakeSolver parses "solutions:<dir>" or "agent:<model spec>".
Result<std::unique_ptr<Solver>> MakeSolver(const std::string& spec, const SolverContext& context);

// FindSolution looks for a task's candidate folder under a solutions folder: <dir>/<task name>/
// (for a KernelBench folder the name is level1/19_ReLU, for a folder of task files the file stem),
// then <dir>/<task id>/, then <dir>/<last part of the name>/. Empty when none exists.
fs::path FindSolution(const fs::path& dir, const Task& task);

// SafeRelativeName turns a task name into a relative path that stays inside a folder: characters
// other than [A-Za-z0-9._-/] become '_', and empty, "." and ".." parts are dropped.
fs::path SafeRelativeName(const std::string& name);

std::unique_ptr<Solver> MakeSolutionsSolver(const fs::path& dir);
std::unique_ptr<Solver> MakeAgentSolver(const std::string& model, const SolverContext& context);

}  // namespace cuda_agent
