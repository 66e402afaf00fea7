// session.cc — one environment session (session.h): the workspace made or reopened, the judge
// gateway, the background jobs, the tools' context and sandbox policy, and the in-process grade.
#include "agent/session.h"

#include <atomic>

#include "agent/agent_loop.h"
#include "common/log.h"
#include "workspace/workspace.h"

namespace cuda_agent {
namespace {

// SocketDir: DIR/gateway when its socket path fits a sockaddr_un, else a fresh folder in /tmp.
Result<fs::path> SocketDir(const fs::path& dir, bool* temporary) {
  fs::path preferred = dir / "gateway";
  *temporary = (preferred / "judge.sock").string().size() >= 100;
  if (!*temporary) return preferred;
  return MakeTempDir("/tmp", "cuda-agent-gw");
}

bool HoldsFiles(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir, ec) && !fs::is_empty(dir, ec);
}

}  // namespace

struct Session::State {
  SessionSpec spec;
  JudgeService* judge = nullptr;
  fs::path workspace;  // canonical
  fs::path socket_dir;
  bool temporary_socket_dir = false;
  std::unique_ptr<JudgeGateway> gateway;
  std::unique_ptr<BackgroundJobs> jobs;
  ToolRegistry tools = DefaultToolRegistry();
  ToolContext context;
  std::string system_prompt;
  std::string task_message;
  std::mutex call_mutex;  // one tool call (or grade) at a time
  std::mutex close_mutex;
  std::atomic<bool> closed{false};
};

Result<std::unique_ptr<Session>> Session::Open(SessionSpec spec, JudgeService& judge) {
  if (spec.dir.empty()) return InvalidArgument("session: no folder given");
  if (spec.binary.empty()) return InvalidArgument("session: no cuda-agent binary given");
  auto state = std::make_unique<State>();
  state->judge = &judge;
  spec.dir = fs::absolute(spec.dir).lexically_normal();
  const fs::path workspace = spec.dir / "workspace";
  std::error_code ec;
  if (spec.reopen) {
    if (!fs::is_regular_file(workspace / ".cuda-agent" / "workspace.json", ec)) {
      return NotFound("session: no workspace to reopen in " + spec.dir.string() +
                      " (workspace/.cuda-agent/workspace.json is missing)");
    }
  } else {
    if (HoldsFiles(workspace)) {
      return FailedPrecondition(workspace.string() + " exists already (one episode per folder)");
    }
    fs::create_directories(spec.dir, ec);
    if (ec) return Internal("session: cannot create " + spec.dir.string() + ": " + ec.message());
    WorkspaceSpec ws{spec.task, workspace, spec.judge.device, spec.env, spec.binary};
    if (Status s = InitWorkspace(ws); !s.ok()) return Internal("workspace init: " + s.message());
  }
  state->workspace = fs::canonical(workspace, ec);
  if (ec) return Internal("session: " + workspace.string() + ": " + ec.message());

  Result<fs::path> socket_dir = SocketDir(spec.dir, &state->temporary_socket_dir);
  if (!socket_dir.ok()) return socket_dir.status();
  state->socket_dir = socket_dir.value();
  JudgeGatewayConfig gateway_config{.socket_dir = state->socket_dir,
                                    .workspace = state->workspace,
                                    .task_spec = spec.task_spec,
                                    .judge = spec.judge,
                                    .binary = spec.binary};
  // The in-loop commands judge up to a stage of their own choosing and export nothing.
  gateway_config.judge.until = Stage::kDone;
  gateway_config.judge.keep_work = false;
  gateway_config.judge.export_library.clear();
  Result<std::unique_ptr<JudgeGateway>> gateway = JudgeGateway::Start(gateway_config);
  if (!gateway.ok()) {
    if (state->temporary_socket_dir) fs::remove_all(state->socket_dir, ec);
    return gateway.status();
  }
  state->gateway = std::move(gateway).value();
  state->jobs = std::make_unique<BackgroundJobs>(spec.dir / "jobs");

  ToolContext& context = state->context;
  context.workspace = state->workspace;
  context.sandbox = spec.sandbox;
  context.jobs = state->jobs.get();
  context.env_set = {std::string(kJudgeGatewayEnv) + "=" + state->gateway->SocketPath().string(),
                     "CUDA_AGENT_BIN=" + spec.binary.string()};
  context.sandbox_policy.writable = {state->socket_dir};
  context.sandbox_policy.hidden = {DefaultCacheDir()};
  if (!spec.judge.cache_dir.empty())
    context.sandbox_policy.hidden.push_back(fs::absolute(spec.judge.cache_dir));
  // This binary answers `cuda-agent build|judge` inside (by forwarding them): bound back in case it
  // lives under a hidden folder (a home).
  context.sandbox_policy.read_only = {spec.binary};
  // Protected files bound read-only (where the sandbox can), and checked after every command.
  for (const std::string& rel : ProtectedFiles(state->workspace))
    context.sandbox_policy.protected_files.push_back(state->workspace / rel);
  context.sandbox_policy.protected_files.push_back(state->workspace / ".cuda-agent" /
                                                   "workspace.json");
  context.sandbox_policy.memory_bytes = 16ull << 30;
  context.sandbox_policy.max_pids = 1024;

  Result<std::string> skill = ReadFile(state->workspace / "SKILL.md");
  Result<std::string> model_py = ReadFile(state->workspace / "model.py");
  state->system_prompt = skill.ok() ? skill.value() : "";
  state->task_message =
      cuda_agent::TaskMessage(model_py.ok() ? model_py.value() : spec.task.code,
                              DeviceName(spec.judge.device), state->workspace.string());
  state->spec = std::move(spec);
  return std::unique_ptr<Session>(new Session(std::move(state)));
}

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}

Session::~Session() { Close(); }

const fs::path& Session::Workspace() const { return state_->workspace; }

const SessionSpec& Session::Spec() const { return state_->spec; }

std::string Session::SystemPrompt() const { return state_->system_prompt; }

std::string Session::TaskMessage() const { return state_->task_message; }

std::vector<ToolSpec> Session::ToolSpecs() const { return state_->tools.Specs(); }

Observation Session::Call(const std::string& tool, const std::string& arguments_text) {
  std::lock_guard<std::mutex> lock(state_->call_mutex);
  if (state_->closed) return ErrorObservation("the session is closed");
  try {
    return state_->tools.Call(tool, arguments_text, state_->context);
  } catch (const std::exception& e) {
    // A bug of ours in one tool must not end the session: the model sees it as a failed call.
    LogWarn(std::string("session: tool ") + tool + " threw: " + e.what());
    return ErrorObservation(std::string("internal error in tool ") + tool + ": " + e.what());
  }
}

JudgeResult Session::Grade() {
  std::lock_guard<std::mutex> lock(state_->call_mutex);
  JudgeRequest request;
  request.task = state_->spec.task;
  request.options = state_->spec.judge;
  request.options.until = Stage::kDone;
  request.workspace = state_->workspace;
  // The candidate's files as data too, so a judge elsewhere gets the whole request; the in-process
  // judge reads the workspace itself (and checks its protected files there).
  if (Result<Candidate> candidate = Candidate::FromFolder(state_->workspace); candidate.ok()) {
    request.candidate = std::move(candidate).value();
  }
  return state_->judge->Evaluate(request);
}

std::optional<GatewayVerdict> Session::BestInLoop() const {
  return state_->gateway ? state_->gateway->Best() : std::nullopt;
}

void Session::Close() {
  if (!state_) return;
  std::lock_guard<std::mutex> lock(state_->close_mutex);
  if (state_->closed.exchange(true)) return;
  state_->jobs->KillAll();
  state_->gateway->Stop();
  if (state_->temporary_socket_dir) {
    std::error_code ec;
    fs::remove_all(state_->socket_dir, ec);
  }
}

}  // namespace cuda_agent
