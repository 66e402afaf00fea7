// episode.cc — one agent episode (episode.h): the session, the loop, the records, the grade.
#include "agent/episode.h"

#include <chrono>

namespace cuda_agent {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool HoldsEpisode(const fs::path& out) {
  std::error_code ec;
  const fs::path workspace = out / "workspace";
  return fs::exists(workspace, ec) && !fs::is_empty(workspace, ec);
}

Status HoldsEpisodeError(const fs::path& out) {
  return FailedPrecondition((out / "workspace").string() +
                            " exists already (one episode per --out folder)");
}

Json BestJson(const std::optional<GatewayVerdict>& best) {
  if (!best) return nullptr;
  return {{"until", best->until},
          {"reward", best->reward ? Json(*best->reward) : Json(nullptr)},
          {"correct", best->correct},
          {"reason", best->reason}};
}

// Header: the fields result.json has from its first write.
Json Header(const EpisodeSpec& spec, const fs::path& out) {
  return {{"task", spec.task_spec},
          {"task_id", spec.task.id},
          {"task_name", spec.task.name},
          {"model", spec.model_spec},
          {"device", DeviceName(spec.judge.device)},
          {"policy", spec.judge.policy.name},
          {"workspace", (out / "workspace").string()},
          {"stop_reason", "running"},
          {"reward", nullptr}};
}

// Recorder keeps result.json: every Write rewrites the whole file.
struct Recorder {
  fs::path out;
  Json record;
  double started = Now();

  void Write() {
    record["version"] = kEpisodeResultVersion;
    record["wall_s"] = Now() - started;
    (void)WriteJsonFile(out / "result.json", record);
  }
  EpisodeResult Fail(Status status, const std::string& stop_reason) {
    record["stop_reason"] = stop_reason;
    Write();
    EpisodeResult result;
    result.status = std::move(status);
    result.record = record;
    result.loop.stop_reason = stop_reason;
    return result;
  }
};

Json ToolSpecsJson(const std::vector<ToolSpec>& specs) {
  Json out = Json::array();
  for (const ToolSpec& spec : specs) {
    out.push_back(
        {{"name", spec.name}, {"description", spec.description}, {"parameters", spec.parameters}});
  }
  return out;
}

}  // namespace

std::string BestInLoopText(const std::optional<GatewayVerdict>& best) {
  if (!best) return "none";
  if (!best->reward) return best->until + (best->correct ? ": correct" : ": failed");
  char text[64];
  snprintf(text, sizeof text, "%s: reward %g", best->until.c_str(), *best->reward);
  return text;
}

EpisodeResult EpisodeNotRun(const EpisodeSpec& spec, const std::string& stop_reason) {
  const fs::path out = fs::absolute(spec.out);
  EpisodeResult result;
  if (HoldsEpisode(out)) {
    result.status = HoldsEpisodeError(out);
    return result;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  Recorder recorder{out, Header(spec, out)};
  return recorder.Fail(
      ec ? Internal("cannot create " + out.string() + ": " + ec.message()) : OkStatus(),
      stop_reason);
}

EpisodeResult RunEpisode(const EpisodeSpec& spec, LlmClient& client, JudgeService& judge,
                         const EpisodeProgressFn& on_progress,
                         const std::atomic<bool>* interrupted) {
  const fs::path out = fs::absolute(spec.out);
  EpisodeResult result;
  if (HoldsEpisode(out)) {
    result.status = HoldsEpisodeError(out);
    return result;
  }
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    result.status = Internal("cannot create " + out.string() + ": " + ec.message());
    return result;
  }
  Recorder recorder{out, Header(spec, out)};
  recorder.Write();

  SessionSpec session_spec{.task_spec = spec.task_spec,
                           .task = spec.task,
                           .dir = out,
                           .judge = spec.judge,
                           .binary = spec.binary,
                           .env = spec.env,
                           .reopen = false,
                           .sandbox = spec.sandbox};
  Result<std::unique_ptr<Session>> opened = Session::Open(std::move(session_spec), judge);
  if (!opened.ok()) {
    const Status& s = opened.status();
    return recorder.Fail(Internal(s.message()), "internal_error: " + s.message());
  }
  Session& session = *opened.value();

  TrajectoryWriter trajectory;
  if (Status s = trajectory.Open(out / "trajectory.jsonl"); !s.ok())
    return recorder.Fail(s, "internal_error: " + s.message());

  LoopConfig config;
  config.system_prompt = session.SystemPrompt();
  config.task_message = session.TaskMessage();
  config.max_turns = spec.max_turns;
  config.budget.context_tokens = spec.context_tokens;
  config.budget.max_output_tokens = spec.max_output_tokens;
  config.temperature = spec.temperature;
  config.interrupted = interrupted;
  config.time_limit_s = spec.time_limit_s;
  const std::vector<ToolSpec> tools = session.ToolSpecs();
  const Sandbox& sandbox = spec.sandbox != nullptr ? *spec.sandbox : Sandbox::Default();
  trajectory.Write("episode", {{"task", spec.task_spec},
                               {"task_id", spec.task.id},
                               {"model", spec.model_spec},
                               {"client", client.Describe()},
                               {"device", DeviceName(spec.judge.device)},
                               {"policy", spec.judge.policy.name},
                               {"workspace", session.Workspace().string()},
                               {"max_turns", config.max_turns},
                               {"context_tokens", config.budget.context_tokens},
                               {"max_output_tokens", config.budget.max_output_tokens},
                               {"sandbox", sandbox.Describe()},
                               {"system", config.system_prompt},
                               {"task_message", config.task_message},
                               {"tools", ToolSpecsJson(tools)}});
  EpisodeProgress progress;
  progress.client = client.Describe();
  if (on_progress) on_progress(progress);

  auto on_turn = [&](const TurnProgress& turn) {
    if (!on_progress) return;
    progress.phase = EpisodeProgress::Phase::kTurn;
    progress.turn = turn;
    progress.best_in_loop = session.BestInLoop();
    on_progress(progress);
  };
  auto call_tool = [&](const std::string& tool, const std::string& arguments) {
    return session.Call(tool, arguments);
  };
  LoopSummary& summary = result.loop;
  try {
    summary = RunReactLoop(client, tools, call_tool, config, trajectory, on_turn);
  } catch (const std::exception& e) {
    // A bug of ours must not lose the episode: what was written stays, the workspace is still
    // graded.
    summary.stop_reason = std::string("internal_error: ") + e.what();
    trajectory.Write("internal_error", {{"message", e.what()}});
  }
  session.Close();  // background jobs stop before the workspace is graded

  Json& record = recorder.record;
  record["stop_reason"] = summary.stop_reason;
  record["turns"] = summary.turns;
  record["tokens_in"] = summary.tokens_in;
  record["tokens_out"] = summary.tokens_out;
  record["tokens_estimated"] = summary.tokens_estimated;
  record["llm_seconds"] = summary.llm_s;
  record["llm_attempts"] = summary.llm_attempts;
  record["tool_calls"] = summary.tool_calls;
  record["tool_errors"] = summary.tool_errors;
  record["elided_observations"] = summary.elided_observations;
  record["best_in_loop"] = BestJson(session.BestInLoop());
  record["judge"] = nullptr;
  recorder.Write();  // the loop's outcome is safe before the (long) grade

  if (spec.grade) {
    progress.phase = EpisodeProgress::Phase::kGrading;
    progress.stop_reason = summary.stop_reason;
    progress.best_in_loop = session.BestInLoop();
    if (on_progress) on_progress(progress);
    std::string error;
    Json judgement = nullptr;
    try {
      result.judgement = session.Grade();
      judgement = result.judgement->ToJson();
    } catch (const std::exception& e) {
      error = std::string("the grade failed: ") + e.what();
    }
    trajectory.Write("final_judgement", {{"result", judgement}, {"error", error}});
    record["judge"] = judgement;
    if (!error.empty()) record["judge_error"] = error;
    record["reward"] =
        judgement.is_object() && judgement.contains("reward") ? judgement["reward"] : Json(nullptr);
    recorder.Write();
  }
  result.record = record;
  return result;
}

}  // namespace cuda_agent
