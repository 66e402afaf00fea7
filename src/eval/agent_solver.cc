// agent_solver.cc — `--solver agent:<model>`: runs this binary's `solve` command (the agent,
// docs/agent.md) once per task with an episode folder of its own (`--out DIR`: DIR/workspace,
// DIR/trajectory.jsonl, DIR/result.json) and hands the final workspace to the judge. An episode
// whose solve finished gets a marker next to it (DIR.solved), so a resumed benchmark judges it
// without solving again; the agent's output goes to DIR.agent.log.
#include <fstream>

#include "common/subprocess.h"
#include "eval/solver.h"

namespace cuda_agent {
namespace {

std::string Tail(const std::string& text, size_t max) {
  return text.size() <= max ? text : "..." + text.substr(text.size() - max);
}

class AgentSolver : public Solver {
 public:
  AgentSolver(std::string model, SolverContext context)
      : model_(std::move(model)), ctx_(std::move(context)) {}

  std::string Spec() const override { return "agent:" + model_; }

  // Check: a binary without `solve` answers "unknown command 'solve'".
  Status Check() const override {
    RunOptions probe;
    probe.argv = {ctx_.executable.string(), "solve"};
    probe.timeout_seconds = 60;
    Result<RunResult> r = RunProcess(probe);
    if (!r.ok()) return FailedPrecondition("agent solver unavailable: " + r.status().message());
    if (r->err.find("unknown command") != std::string::npos) {
      return FailedPrecondition("agent solver unavailable: " + ctx_.executable.string() +
                                " has no `solve` command yet (issue 6)");
    }
    return OkStatus();
  }

  Solution Solve(const Task& task) override {
    const fs::path episode = ctx_.work_dir / SafeRelativeName(task.name);
    const fs::path workspace = episode / "workspace";
    const fs::path marker = episode.string() + ".solved";
    if (fs::exists(marker) && fs::is_directory(workspace)) {
      return {workspace, "agent workspace (solved earlier)"};
    }
    std::error_code ec;
    fs::remove_all(episode, ec);  // an unfinished attempt starts over
    fs::create_directories(episode.parent_path(), ec);
    RunOptions run;
    run.argv = {ctx_.executable.string(),
                "solve",
                ctx_.suite.string() + "#" + task.name,
                "--model",
                model_,
                "--out",
                episode.string()};
    // Device and policy through the flags' environment mirrors.
    run.env_set = {"CUDA_AGENT_DEVICE=" + std::string(DeviceName(ctx_.device)),
                   "CUDA_AGENT_POLICY=" + ctx_.policy};
    run.timeout_seconds = ctx_.agent_timeout_s;
    Result<RunResult> r = RunProcess(run);
    if (!r.ok()) return {{}, "agent could not start: " + r.status().message()};
    std::ofstream(episode.string() + ".agent.log") << r->out << "\n--- stderr ---\n" << r->err;
    if (!fs::is_directory(workspace)) {
      return {{}, "agent left no workspace (" + r->Describe() + "): " + Tail(r->err, 300)};
    }
    // The final state of the workspace is the answer, whatever the exit status.
    std::ofstream(marker) << r->Describe() << "\n";
    return {workspace, "agent " + r->Describe()};
  }

 private:
  std::string model_;
  SolverContext ctx_;
};

}  // namespace

std::unique_ptr<Solver> MakeAgentSolver(const std::string& model, const SolverContext& context) {
  return std::make_unique<AgentSolver>(model, context);
}

}  // namespace cuda_agent
