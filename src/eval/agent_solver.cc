// agent_solver.cc — `--solver agent:<model>`: one agent episode per task (agent/episode.h), run in
// this process on the benchmark's thread, in a folder of its own (DIR/workspace,
// DIR/trajectory.jsonl, DIR/result.json); its final workspace is the candidate the benchmark
// judges (so the episode itself does not grade). An episode that finished gets a marker next to
// it (DIR.solved), so a resumed benchmark judges it without solving again; its progress lines go
// to DIR.agent.log.
#include <fstream>

#include "eval/solver.h"

namespace cuda_agent {
namespace {

class AgentSolver : public Solver {
 public:
  AgentSolver(std::string model, SolverContext context)
      : model_(std::move(model)), ctx_(std::move(context)), judge_(ctx_.episode.env) {}

  std::string Spec() const override { return "agent:" + model_; }

  // Check: the harness is there (workspaces are made from its template) and the model spec makes
  // a client.
  Status Check() const override {
    if (ctx_.episode.env.home.empty())
      return FailedPrecondition("agent solver unavailable: no harness (templates, python)");
    Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(model_, ctx_.episode.llm);
    if (!client.ok()) {
      const Status& s = client.status();
      return s.code() == StatusCode::kInvalidArgument
                 ? InvalidArgument("agent:" + model_ + ": " + s.message())
                 : FailedPrecondition("agent solver unavailable: " + s.message());
    }
    return OkStatus();
  }

  Solution Solve(const Task& task) override {
    const fs::path episode = ctx_.work_dir / SafeRelativeName(task.name);
    const fs::path workspace = episode / "workspace";
    const fs::path marker = episode.string() + ".solved";
    if (fs::exists(marker) && fs::is_directory(workspace)) {
      return {workspace, "agent workspace (solved earlier)", "", {}};
    }
    std::error_code ec;
    fs::remove_all(episode, ec);  // an unfinished attempt starts over
    fs::create_directories(episode.parent_path(), ec);
    std::ofstream log(episode.string() + ".agent.log");
    Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(model_, ctx_.episode.llm);
    if (!client.ok()) {
      log << "no model client: " << client.status().message() << "\n";
      return {{}, "agent could not start: " + client.status().message(), "", {}};
    }
    EpisodeSpec spec = ctx_.episode;
    spec.task_spec = ctx_.suite.string() + "#" + task.name;
    spec.task = task;
    spec.model_spec = model_;
    spec.out = episode;
    spec.grade = false;  // the benchmark judges the final workspace itself
    auto on_progress = [&](const EpisodeProgress& p) {
      if (p.phase == EpisodeProgress::Phase::kStarted) {
        log << "episode " << task.name << " with " << p.client << "\n" << std::flush;
      } else if (p.phase == EpisodeProgress::Phase::kTurn) {
        log << "turn " << p.turn.turn << "/" << p.turn.max_turns << "  " << p.turn.last_tool
            << "  best: " << BestInLoopText(p.best_in_loop) << "\n"
            << std::flush;
      }
    };
    EpisodeResult r = RunEpisode(spec, *client.value(), judge_, on_progress);
    if (!r.status.ok()) {
      log << "not run: " << r.status.message() << "\n";
      return {{}, "agent could not start: " + r.status.message(), "", {}};
    }
    const std::string stop = r.loop.stop_reason;
    log << "stopped: " << stop << " after " << r.loop.turns << " turns\n";
    if (!fs::is_directory(workspace)) return {{}, "agent left no workspace (" + stop + ")", "", {}};
    // The final state of the workspace is the answer, whatever the stop reason.
    std::ofstream(marker) << stop << "\n";
    return {workspace, "agent: " + stop + ", " + std::to_string(r.loop.turns) + " turns", "", {}};
  }

 private:
  std::string model_;
  SolverContext ctx_;
  InProcessJudge judge_;  // the sessions' service (the episodes themselves do not grade)
};

}  // namespace

std::unique_ptr<Solver> MakeAgentSolver(const std::string& model, const SolverContext& context) {
  return std::make_unique<AgentSolver>(model, context);
}

}  // namespace cuda_agent
