// solve_command.cc — `cuda-agent solve TASK --model SPEC`: one agent episode (agent/episode.h).
// Flags → EpisodeSpec → RunEpisode with the model's client and the in-process judge; progress on
// stderr, result.json (or its path and the reward) on stdout, the exit status (docs/agent.md). The
// first SIGINT/SIGTERM ends the episode after the current turn, the second the process.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <set>

#include "agent/episode.h"
#include "cli/agent_flags.h"
#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "cli/options.h"
#include "eval/solver.h"
#include "harness/client.h"
#include "judge/judge_service.h"
#include "llm/llm_client.h"

namespace cuda_agent {
namespace {

std::atomic<bool> g_interrupted{false};

// OnSignal: the first SIGINT/SIGTERM stops the episode after the current turn (then the final
// judgement runs); a second one ends the process at once (the trajectory is already on disk).
void OnSignal(int signal_number) {
  if (g_interrupted.exchange(true)) {
    signal(signal_number, SIG_DFL);
    raise(signal_number);
  }
}

// SolveSpecs: solve's own flags, the agent's, and the judge's (device, policy, timeouts, cache,
// measurement) without those that name a candidate, a task or a stage.
const std::vector<OptionSpec>& SolveSpecs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> all = {
        {"model", true,
         "model spec: openai:URL#MODEL | anthropic:MODEL | replay:FILE (docs/llm.md)", ""},
        {"out", true,
         "episode folder: workspace/, trajectory.jsonl, result.json (default solve-<task>)", ""},
        {"json", false, "print result.json on stdout", ""},
    };
    all.insert(all.end(), AgentSpecs().begin(), AgentSpecs().end());
    const std::set<std::string> not_for_solve = {"task", "candidate", "until",
                                                 "out",  "json",      "keep-work"};
    for (const OptionSpec& s : JudgeSpecs()) {
      if (!not_for_solve.count(s.name)) all.push_back(s);
    }
    return all;
  }();
  return specs;
}

// Render prints the episode's progress on stderr.
void Render(const EpisodeProgress& p, const EpisodeSpec& spec, bool tty) {
  switch (p.phase) {
    case EpisodeProgress::Phase::kStarted:
      std::cerr << "solve " << spec.task.name << " with " << p.client << " ("
                << DeviceName(spec.judge.device) << ", at most " << spec.max_turns << " turns) in "
                << fs::absolute(spec.out).string() << "\n";
      break;
    case EpisodeProgress::Phase::kTurn: {
      const TurnProgress& t = p.turn;
      std::cerr << (tty ? "\r\033[K" : "") << "turn " << t.turn << "/" << t.max_turns << "  "
                << (t.last_tool.empty() ? "(no tool call)" : t.last_tool)
                << (t.tool_calls > 1 ? " (+" + std::to_string(t.tool_calls - 1) + " more)" : "")
                << (t.tool_errors > 0 ? "  [" + std::to_string(t.tool_errors) + " error]" : "")
                << "  best: " << BestInLoopText(p.best_in_loop) << "\n";
      break;
    }
    case EpisodeProgress::Phase::kGrading:
      std::cerr << "stopped: " << p.stop_reason << "; judging the final workspace...\n";
      break;
  }
}

}  // namespace

int SolveCommand(const Args& args) {
  const auto& specs = SolveSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("solve", a.status().message(), specs);
  if (a->positional().size() != 1) return UsageError("solve", "expected one TASK", specs);
  if (a->Get("model").empty()) return UsageError("solve", "--model is required", specs);
  EpisodeSpec spec;
  Result<JudgeOptions> judge_options = OptionsFromArgs(a.value());
  if (!judge_options.ok()) return UsageError("solve", judge_options.status().message(), specs);
  spec.judge = std::move(judge_options).value();
  if (Status s = AgentOptionsFromArgs(a.value(), &spec); !s.ok())
    return UsageError("solve", s.message(), specs);
  spec.task_spec = a->positional()[0];
  Result<Task> task = LoadTask(spec.task_spec);
  if (!task.ok()) {
    std::cerr << "cuda-agent solve: " << task.status().message() << "\n";
    return kExitTaskError;
  }
  spec.task = std::move(task).value();
  spec.model_spec = a->Get("model");
  spec.out = fs::absolute(a->Get("out").empty()
                              ? fs::path("solve-" + SafeRelativeName(spec.task.name).string())
                              : fs::path(a->Get("out")));
  spec.binary = ExecutablePath();

  // What fails before the episode starts is still recorded in OUT/result.json.
  auto not_run = [&](const std::string& reason, int status) {
    EpisodeResult r = EpisodeNotRun(spec, reason);
    if (r.status.code() == StatusCode::kFailedPrecondition)
      return UsageError("solve", r.status.message(), specs);
    std::cerr << "cuda-agent solve: " << reason << "\n";
    return status;
  };
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) return not_run("internal_error: " + env.status().message(), kExitInternal);
  spec.env = env.value();
  Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(spec.model_spec, spec.llm);
  if (!client.ok()) {
    return not_run(
        "llm_error: " + client.status().message(),
        client.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitLlmUnreachable);
  }
  InProcessJudge judge(spec.env);

  const bool tty = isatty(STDERR_FILENO) != 0;
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  EpisodeResult result = RunEpisode(
      spec, *client.value(), judge, [&](const EpisodeProgress& p) { Render(p, spec, tty); },
      &g_interrupted);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (result.status.code() == StatusCode::kFailedPrecondition)
    return UsageError("solve", result.status.message(), specs);
  if (!result.status.ok()) {
    std::cerr << "cuda-agent solve: " << result.status.message() << "\n";
    return kExitInternal;
  }

  const Json& record = result.record;
  const LoopSummary& summary = result.loop;
  const std::string reward = record["reward"].is_null() ? "none" : record["reward"].dump();
  std::cerr << "episode done: " << summary.turns << " turns, " << summary.tool_calls
            << " tool calls (" << summary.tool_errors << " errors), tokens in/out "
            << summary.tokens_in << "/" << summary.tokens_out << ", "
            << std::lround(record.value("wall_s", 0.0)) << " s; stop: " << summary.stop_reason
            << "; reward " << reward
            << (result.judgement ? " (" + result.judgement->reason + ")" : "") << "\n";
  if (a->Has("json")) {
    std::cout << record.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "reward: " << reward << "\nresult: " << (spec.out / "result.json").string()
              << "\n";
  }
  if (summary.turns == 0 && summary.stop_reason.rfind("llm_error", 0) == 0)
    return kExitLlmUnreachable;
  if (!result.judgement) return kExitInternal;
  return 0;
}

}  // namespace cuda_agent
