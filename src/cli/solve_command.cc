// solve_command.cc — `cuda-agent solve TASK --model SPEC`: one agent episode. Makes OUT/workspace
// for the task, starts the judge gateway, runs the ReAct loop (agent/agent_loop.h) with the tools
// in the sandbox, then judges the final workspace (the full pipeline, as `judge --json`); writes
// OUT/trajectory.jsonl as it goes and OUT/result.json at the end (docs/agent.md).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "agent/agent_loop.h"
#include "agent/judge_gateway.h"
#include "agent/tools.h"
#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "cli/options.h"
#include "common/subprocess.h"
#include "eval/solver.h"
#include "harness/client.h"
#include "judge/judge.h"
#include "llm/llm_client.h"
#include "workspace/workspace.h"

namespace cuda_agent {
namespace {

constexpr int kResultVersion = 1;

std::atomic<bool> g_interrupted{false};

// OnSignal: the first SIGINT/SIGTERM stops the episode after the current turn (then the final
// judgement runs); a second one ends the process at once (the trajectory is already on disk).
void OnSignal(int signal_number) {
  if (g_interrupted.exchange(true)) {
    signal(signal_number, SIG_DFL);
    raise(signal_number);
  }
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const std::vector<OptionSpec>& SolveSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"model", true, "model spec: openai:URL#MODEL | anthropic:MODEL | replay:FILE (docs/llm.md)",
       ""},
      {"device", true, "cuda or cpu", "cuda"},
      {"max-turns", true, "assistant turns at most", "200"},
      {"out", true,
       "episode folder: workspace/, trajectory.jsonl, result.json (default solve-<task>)", ""},
      {"context-tokens", true, "context budget in tokens", "131072"},
      {"max-output-tokens", true, "output tokens per reply (reserved from the context budget)",
       "8192"},
      {"temperature", true, "sampling temperature (empty: the provider's default)", ""},
      {"policy", true, "precision policy: strict | tf32-fair | paper (docs/precision.md)",
       "strict"},
      {"json", false, "print result.json on stdout", ""},
      {"llm-timeout", true, "seconds for one HTTP attempt to the model, streaming included", "600"},
      {"llm-connect-timeout", true, "seconds to connect to the model's server", "20"},
      {"llm-stall-timeout", true, "seconds without a byte before an attempt fails", "120"},
      {"llm-max-attempts", true,
       "attempts per model request (retries on 429, 5xx, timeouts, broken streams)", "6"},
      {"llm-backoff", true, "first wait between attempts in seconds, doubled each retry", "1"},
      {"llm-backoff-max", true, "longest wait between attempts in seconds", "60"},
      {"no-stream", false, "ask the model for whole answers instead of streaming (SSE)", ""},
  };
  return specs;
}

// BestText renders the best in-loop verdict for progress lines.
std::string BestText(const JudgeGateway* gateway) {
  if (gateway == nullptr) return "none";
  std::optional<GatewayVerdict> best = gateway->Best();
  if (!best) return "none";
  if (!best->reward) return best->until + (best->correct ? ": correct" : ": failed");
  char text[64];
  snprintf(text, sizeof text, "%s: reward %g", best->until.c_str(), *best->reward);
  return text;
}

Json BestJson(const JudgeGateway* gateway) {
  if (gateway == nullptr || !gateway->Best()) return nullptr;
  GatewayVerdict best = *gateway->Best();
  return {{"until", best.until},
          {"reward", best.reward ? Json(*best.reward) : Json(nullptr)},
          {"correct", best.correct},
          {"reason", best.reason}};
}

// ShortSocketDir: OUT/gateway when its socket path fits a sockaddr_un, else a fresh folder in /tmp.
Result<fs::path> SocketDir(const fs::path& out) {
  fs::path preferred = fs::absolute(out / "gateway");
  if ((preferred / "judge.sock").string().size() < 100) return preferred;
  return MakeTempDir("/tmp", "cuda-agent-gw");
}

struct Episode {
  fs::path out;
  std::string task_spec;
  std::string model_spec;
  std::string device;
  std::string policy;
  Json result = Json::object();

  void WriteResult() {
    result["version"] = kResultVersion;
    (void)WriteJsonFile(out / "result.json", result);
  }
};

// FinalJudgement runs the real judge (full pipeline) on the final workspace; its JSON or an error.
Json FinalJudgement(const Episode& episode, const fs::path& workspace, std::string* error) {
  RunOptions run;
  run.argv = {ExecutablePath().string(),
              "judge",
              "--task",
              episode.task_spec,
              "--candidate",
              workspace.string(),
              "--device",
              episode.device,
              "--policy",
              episode.policy,
              "--json"};
  run.env_unset = {kJudgeGatewayEnv};
  run.timeout_seconds = 3600;
  run.max_output_bytes = 16 << 20;
  Result<RunResult> r = RunProcess(run);
  if (!r.ok()) {
    *error = r.status().message();
    return nullptr;
  }
  Result<Json> parsed = ParseJson(r->out, "final judgement");
  if (!parsed.ok() || !parsed->is_object()) {
    *error = "the judge gave no result (" + r->Describe() + "): " + r->err.substr(0, 2000);
    return nullptr;
  }
  return parsed.value();
}

}  // namespace

int SolveCommand(const Args& args) {
  const auto& specs = SolveSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("solve", a.status().message(), specs);
  if (a->positional().size() != 1) return UsageError("solve", "expected one TASK", specs);
  if (a->Get("model").empty()) return UsageError("solve", "--model is required", specs);
  Result<Device> device = ParseDevice(a->Get("device"));
  if (!device.ok()) return UsageError("solve", device.status().message(), specs);
  Result<int> max_turns = ParseIntFlag(a.value(), "max-turns");
  Result<int> context_tokens = ParseIntFlag(a.value(), "context-tokens");
  Result<int> max_output = ParseIntFlag(a.value(), "max-output-tokens");
  for (const Status& s : {max_turns.status(), context_tokens.status(), max_output.status()}) {
    if (!s.ok()) return UsageError("solve", s.message(), specs);
  }
  if (max_turns.value() < 1) return UsageError("solve", "--max-turns must be at least 1", specs);
  if (max_output.value() < 1 || context_tokens.value() <= max_output.value()) {
    return UsageError("solve", "--context-tokens must exceed --max-output-tokens", specs);
  }
  double temperature = -1;
  if (!a->Get("temperature").empty()) {
    Result<double> t = ParseDoubleFlag(a.value(), "temperature", true);
    if (!t.ok()) return UsageError("solve", t.status().message(), specs);
    temperature = t.value();
  }
  Result<int> llm_attempts = ParseIntFlag(a.value(), "llm-max-attempts");
  if (!llm_attempts.ok() || llm_attempts.value() < 1) {
    return UsageError("solve", "--llm-max-attempts expects a positive integer", specs);
  }
  std::vector<double> llm_timeouts;
  for (const char* name : {"llm-timeout", "llm-connect-timeout", "llm-stall-timeout", "llm-backoff",
                           "llm-backoff-max"}) {
    Result<double> v =
        ParseDoubleFlag(a.value(), name, std::string(name).find("backoff") != std::string::npos);
    if (!v.ok()) return UsageError("solve", v.status().message(), specs);
    llm_timeouts.push_back(v.value());
  }
  if (Result<PrecisionPolicy> p = MakePrecisionPolicy(a->Get("policy")); !p.ok()) {
    return UsageError("solve", p.status().message(), specs);
  }
  const std::string task_spec = a->positional()[0];
  Result<Task> task = LoadTask(task_spec);
  if (!task.ok()) {
    std::cerr << "cuda-agent solve: " << task.status().message() << "\n";
    return kExitTaskError;
  }
  Episode episode;
  episode.task_spec = task_spec;
  episode.model_spec = a->Get("model");
  episode.device = DeviceName(device.value());
  episode.policy = a->Get("policy");
  episode.out = a->Get("out").empty() ? fs::path("solve-" + SafeRelativeName(task->name).string())
                                      : fs::path(a->Get("out"));
  episode.out = fs::absolute(episode.out);
  const fs::path workspace = episode.out / "workspace";
  std::error_code ec;
  if (fs::exists(workspace, ec) && !fs::is_empty(workspace, ec)) {
    return UsageError("solve",
                      workspace.string() + " exists already (one episode per --out folder)", specs);
  }
  fs::create_directories(episode.out, ec);
  if (ec) {
    std::cerr << "cuda-agent solve: cannot create " << episode.out << ": " << ec.message() << "\n";
    return kExitInternal;
  }
  const double started = Now();
  episode.result = {{"task", task_spec},
                    {"task_id", task->id},
                    {"task_name", task->name},
                    {"model", episode.model_spec},
                    {"device", episode.device},
                    {"policy", episode.policy},
                    {"workspace", workspace.string()},
                    {"stop_reason", "running"},
                    {"reward", nullptr}};
  episode.WriteResult();
  auto fail = [&](const std::string& reason, int status) {
    episode.result["stop_reason"] = reason;
    episode.result["wall_s"] = Now() - started;
    episode.WriteResult();
    std::cerr << "cuda-agent solve: " << reason << "\n";
    return status;
  };

  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) return fail("internal_error: " + env.status().message(), kExitInternal);
  WorkspaceSpec ws{task.value(), workspace, device.value(), env.value(), ExecutablePath()};
  if (Status s = InitWorkspace(ws); !s.ok())
    return fail("internal_error: workspace init: " + s.message(), kExitInternal);
  const fs::path real_workspace = fs::canonical(workspace, ec);

  LlmOptions llm_options;
  llm_options.max_attempts = llm_attempts.value();
  llm_options.request_timeout_s = llm_timeouts[0];
  llm_options.connect_timeout_s = llm_timeouts[1];
  llm_options.stall_timeout_s = llm_timeouts[2];
  llm_options.backoff_initial_s = llm_timeouts[3];
  llm_options.backoff_max_s = llm_timeouts[4];
  llm_options.stream = !a->Has("no-stream");
  const bool tty = isatty(STDERR_FILENO) != 0;
  Result<std::unique_ptr<LlmClient>> made_client = MakeLlmClient(episode.model_spec, llm_options);
  if (!made_client.ok()) {
    int status = made_client.status().code() == StatusCode::kInvalidArgument ? kExitUsage
                                                                             : kExitLlmUnreachable;
    return fail("llm_error: " + made_client.status().message(), status);
  }
  std::unique_ptr<LlmClient> client = std::move(made_client).value();

  Result<fs::path> socket_dir = SocketDir(episode.out);
  if (!socket_dir.ok())
    return fail("internal_error: " + socket_dir.status().message(), kExitInternal);
  JudgeGatewayConfig gateway_config{.socket_dir = socket_dir.value(),
                                    .workspace = real_workspace,
                                    .task_spec = task_spec,
                                    .device = device.value(),
                                    .policy = episode.policy,
                                    .binary = ExecutablePath(),
                                    .extra_args = {}};
  Result<std::unique_ptr<JudgeGateway>> started_gateway = JudgeGateway::Start(gateway_config);
  if (!started_gateway.ok())
    return fail("internal_error: " + started_gateway.status().message(), kExitInternal);
  std::unique_ptr<JudgeGateway> gateway = std::move(started_gateway).value();

  TrajectoryWriter trajectory;
  if (Status s = trajectory.Open(episode.out / "trajectory.jsonl"); !s.ok())
    return fail("internal_error: " + s.message(), kExitInternal);

  ToolRegistry tools = DefaultToolRegistry();
  BackgroundJobs jobs(episode.out / "jobs");
  ToolContext context;
  context.workspace = real_workspace;
  context.jobs = &jobs;
  context.env_set = {std::string(kJudgeGatewayEnv) + "=" + gateway->SocketPath().string(),
                     "CUDA_AGENT_BIN=" + ExecutablePath().string()};
  context.sandbox_policy.writable = {socket_dir.value()};
  context.sandbox_policy.hidden = {DefaultCacheDir()};
  // This binary answers `cuda-agent build|judge` inside (by forwarding them): bound back in case it
  // lives under a hidden folder (a home).
  context.sandbox_policy.read_only = {ExecutablePath()};
  // Protected files bound read-only (where the sandbox can), and checked after every command.
  for (const std::string& rel : ProtectedFiles(real_workspace))
    context.sandbox_policy.protected_files.push_back(real_workspace / rel);
  context.sandbox_policy.protected_files.push_back(real_workspace / ".cuda-agent" /
                                                   "workspace.json");
  context.sandbox_policy.memory_bytes = 16ull << 30;
  context.sandbox_policy.max_pids = 1024;

  Result<std::string> skill = ReadFile(real_workspace / "SKILL.md");
  Result<std::string> model_py = ReadFile(real_workspace / "model.py");
  EpisodeConfig config;
  config.system_prompt = skill.ok() ? skill.value() : "";
  config.task_message = TaskMessage(model_py.ok() ? model_py.value() : task->code, episode.device,
                                    real_workspace.string());
  config.max_turns = max_turns.value();
  config.budget.context_tokens = context_tokens.value();
  config.budget.max_output_tokens = max_output.value();
  config.temperature = temperature;
  config.interrupted = &g_interrupted;
  Json tool_specs = Json::array();
  for (const ToolSpec& spec : tools.Specs()) {
    tool_specs.push_back(
        {{"name", spec.name}, {"description", spec.description}, {"parameters", spec.parameters}});
  }
  trajectory.Write("episode", {{"task", task_spec},
                               {"task_id", task->id},
                               {"model", episode.model_spec},
                               {"client", client->Describe()},
                               {"device", episode.device},
                               {"policy", episode.policy},
                               {"workspace", real_workspace.string()},
                               {"max_turns", config.max_turns},
                               {"context_tokens", config.budget.context_tokens},
                               {"max_output_tokens", config.budget.max_output_tokens},
                               {"sandbox", Sandbox::Default().Describe()},
                               {"system", config.system_prompt},
                               {"task_message", config.task_message},
                               {"tools", tool_specs}});
  std::cerr << "solve " << task->name << " with " << client->Describe() << " (" << episode.device
            << ", at most " << config.max_turns << " turns) in " << episode.out.string() << "\n";

  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  JudgeGateway* gateway_raw = gateway.get();
  auto on_turn = [&](const TurnProgress& p) {
    std::cerr << (tty ? "\r\033[K" : "") << "turn " << p.turn << "/" << p.max_turns << "  "
              << (p.last_tool.empty() ? "(no tool call)" : p.last_tool)
              << (p.tool_calls > 1 ? " (+" + std::to_string(p.tool_calls - 1) + " more)" : "")
              << (p.tool_errors > 0 ? "  [" + std::to_string(p.tool_errors) + " error]" : "")
              << "  best: " << BestText(gateway_raw) << "\n";
  };
  EpisodeSummary summary;
  try {
    summary = RunEpisode(*client, tools, context, config, trajectory, on_turn);
  } catch (const std::exception& e) {
    // A bug of ours must not lose the episode: what was written stays, the workspace is still
    // judged.
    summary.stop_reason = std::string("internal_error: ") + e.what();
    trajectory.Write("internal_error", {{"message", e.what()}});
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  jobs.KillAll();
  Json best = BestJson(gateway_raw);
  gateway->Stop();
  if (socket_dir.value() != fs::absolute(episode.out / "gateway"))
    fs::remove_all(socket_dir.value(), ec);

  episode.result["stop_reason"] = summary.stop_reason;
  episode.result["turns"] = summary.turns;
  episode.result["tokens_in"] = summary.tokens_in;
  episode.result["tokens_out"] = summary.tokens_out;
  episode.result["tokens_estimated"] = summary.tokens_estimated;
  episode.result["llm_seconds"] = summary.llm_s;
  episode.result["llm_attempts"] = summary.llm_attempts;
  episode.result["tool_calls"] = summary.tool_calls;
  episode.result["tool_errors"] = summary.tool_errors;
  episode.result["elided_observations"] = summary.elided_observations;
  episode.result["best_in_loop"] = best;
  episode.result["stop_reason"] = summary.stop_reason;
  episode.result["judge"] = nullptr;
  episode.result["wall_s"] = Now() - started;
  episode.WriteResult();  // the loop's outcome is safe before the (long) final judgement

  std::cerr << "stopped: " << summary.stop_reason << "; judging the final workspace...\n";
  std::string judge_error;
  Json judgement = FinalJudgement(episode, real_workspace, &judge_error);
  trajectory.Write("final_judgement", {{"result", judgement}, {"error", judge_error}});
  episode.result["judge"] = judgement;
  if (!judge_error.empty()) episode.result["judge_error"] = judge_error;
  episode.result["reward"] =
      judgement.is_object() && judgement.contains("reward") ? judgement["reward"] : Json(nullptr);
  episode.result["wall_s"] = Now() - started;
  episode.WriteResult();

  std::string reward =
      episode.result["reward"].is_null() ? "none" : episode.result["reward"].dump();
  std::cerr << "episode done: " << summary.turns << " turns, " << summary.tool_calls
            << " tool calls (" << summary.tool_errors << " errors), tokens in/out "
            << summary.tokens_in << "/" << summary.tokens_out << ", "
            << std::lround(Now() - started) << " s; stop: " << summary.stop_reason << "; reward "
            << reward
            << (judgement.is_object() ? " (" + judgement.value("reason", std::string()) + ")" : "")
            << "\n";
  if (a->Has("json")) {
    std::cout << episode.result.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "reward: " << reward << "\nresult: " << (episode.out / "result.json").string()
              << "\n";
  }
  if (summary.turns == 0 && summary.stop_reason.rfind("llm_error", 0) == 0)
    return kExitLlmUnreachable;
  if (!judgement.is_object()) return kExitInternal;
  return 0;
}

}  // namespace cuda_agent
