// solutions_solver.cc — `--solver solutions:<dir>`: candidates that already exist, in a folder that
// mirrors the suite; and the solver factory.
#include "eval/solver.h"

namespace cuda_agent {
namespace {

class SolutionsSolver : public Solver {
 public:
  explicit SolutionsSolver(fs::path dir) : dir_(std::move(dir)) {}
  std::string Spec() const override { return "solutions:" + dir_.string(); }
  Status Check() const override {
    if (!fs::is_directory(dir_)) return NotFound("solutions folder not found: " + dir_.string());
    return OkStatus();
  }
  Solution Solve(const Task& task) override {
    fs::path found = FindSolution(dir_, task);
    if (found.empty()) {
      return {{},
              "no candidate: " + (dir_ / SafeRelativeName(task.name)).string() + "/ does not exist",
              "",
              {}};
    }
    return {found, "solutions folder", "", {}};
  }

 private:
  fs::path dir_;
};

}  // namespace

fs::path SafeRelativeName(const std::string& name) {
  fs::path out;
  for (const fs::path& part : fs::path(name)) {
    std::string p = part.string();
    if (p.empty() || p == "." || p == ".." || p == "/") continue;
    for (char& c : p) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    }
    out /= p;
  }
  return out.empty() ? fs::path("_") : out;
}

fs::path FindSolution(const fs::path& dir, const Task& task) {
  for (const fs::path& rel : {SafeRelativeName(task.name), SafeRelativeName(task.id),
                              SafeRelativeName(task.name).filename()}) {
    std::error_code ec;
    if (fs::is_directory(dir / rel, ec)) return dir / rel;
  }
  return {};
}

std::unique_ptr<Solver> MakeSolutionsSolver(const fs::path& dir) {
  return std::make_unique<SolutionsSolver>(fs::weakly_canonical(fs::absolute(dir)));
}

Result<std::unique_ptr<Solver>> MakeSolver(const std::string& spec, const SolverContext& context) {
  const std::string solutions = "solutions:", agent = "agent:", kernelbench = "kernelbench:";
  if (spec.rfind(solutions, 0) == 0 && spec.size() > solutions.size()) {
    return MakeSolutionsSolver(spec.substr(solutions.size()));
  }
  if (spec.rfind(kernelbench, 0) == 0 && spec.size() > kernelbench.size()) {
    return MakeKernelBenchSolver(spec.substr(kernelbench.size()), context.sample);
  }
  if (spec.rfind(agent, 0) == 0 && spec.size() > agent.size()) {
    return MakeAgentSolver(spec.substr(agent.size()), context);
  }
  return InvalidArgument(
      "--solver expects solutions:<dir>, kernelbench:<dir> or agent:<model spec>, got '" + spec +
      "'");
}

}  // namespace cuda_agent
