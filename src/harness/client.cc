// client.cc — harness job runner.
#include "harness/client.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/host_environment.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "harness/fork_server.h"

namespace cuda_agent {

fs::path ExecutablePath() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

Result<HarnessEnv> HarnessEnv::Discover() {
  HarnessEnv env;
  auto holds_harness = [](const fs::path& dir) {
    std::error_code ec;
    return fs::exists(dir / "python" / "cuda_agent_harness" / "__main__.py", ec);
  };
  if (const std::string& home = HostValue(HostVar::kHarnessHome); !home.empty()) {
    env.home = home;
  } else if (fs::path exe = ExecutablePath();
             !exe.empty() && holds_harness(exe.parent_path().parent_path())) {
    env.home = exe.parent_path().parent_path();
  } else {
    env.home = CUDA_AGENT_SOURCE_DIR;
  }
  if (!holds_harness(env.home)) {
    return FailedPrecondition("cannot find the harness (python/cuda_agent_harness) under " +
                              env.home.string() + "; set CUDA_AGENT_HOME to the cuda-agent folder");
  }
  if (const std::string& py = HostValue(HostVar::kPython); !py.empty()) env.python = py;
  env.fork_server = !HostSwitchedOff(HostVar::kForkServer);
  if (const std::string& idle = HostValue(HostVar::kForkServerIdle); !idle.empty()) {
    char* end = nullptr;
    const double seconds = std::strtod(idle.c_str(), &end);
    if (*end != '\0' || !(seconds > 0)) {
      return InvalidArgument(
          "CUDA_AGENT_FORK_SERVER_IDLE must be a positive number of seconds, not '" + idle + "'");
    }
    env.fork_server_idle_s = seconds;
  }
  return env;
}

bool JobOutcome::Ok() const {
  return has_result && result.is_object() && result.value("ok", false);
}

std::string JobOutcome::ErrorKind() const {
  if (!has_result || !result.contains("error_kind") || !result["error_kind"].is_string()) return "";
  return result["error_kind"].get<std::string>();
}

std::string JobOutcome::Reason() const {
  if (!has_result || !result.contains("reason") || !result["reason"].is_string()) return "";
  return result["reason"].get<std::string>();
}

void JobOutcome::ReadResult(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  Result<Json> read = ReadJsonFile(path);
  if (read.ok() && read->is_object()) {
    has_result = true;
    result = std::move(read).value();
  }
}

std::string JobOutcome::StderrTail(int lines) const {
  const std::string& err = process.err;
  size_t pos = err.size();
  while (pos > 0 && (err[pos - 1] == '\n' || err[pos - 1] == ' ')) --pos;
  size_t end = pos;
  for (int n = 0; pos > 0 && n < lines; --pos) {
    if (err[pos - 1] == '\n' && ++n == lines) break;
  }
  return err.substr(pos, end - pos);
}

namespace {

// SharedForkServer: this process's client of the fork server, found or started on first use; null
// when it is switched off ($CUDA_AGENT_FORK_SERVER=0) or cannot start (then jobs are processes).
const ForkServer* SharedForkServer(const HarnessEnv& env) {
  static std::mutex mutex;
  static std::optional<ForkServer> server;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (tried) return server ? &*server : nullptr;
  tried = true;
  if (!env.fork_server) return nullptr;
  ForkServerOptions options;
  options.idle_seconds = env.fork_server_idle_s;
  Result<ForkServer> started = ForkServer::Ensure(env, options);
  if (!started.ok()) {
    LogWarn("fork server unavailable, every job starts its own interpreter: " +
            started.status().message());
    return nullptr;
  }
  server = std::move(started).value();
  if (server->Jail() != "ok") {
    LogWarn("fork server without a working jail (" + server->Jail() +
            "): contained jobs start their own interpreter under bubblewrap");
  }
  if (!server->CudaUsable()) {
    LogWarn(
        "the fork server's children cannot use CUDA (an import touched the driver): GPU jobs start "
        "their own interpreter");
  }
  return &*server;
}

// ViaForkServer runs the job as a child of the fork server, in the jail when `sandbox` contains.
Result<JobOutcome> ViaForkServer(const ForkServer& server, const std::string& job,
                                 const fs::path& job_dir, const fs::path& spec_path,
                                 const RunOptions& options, const JobSandbox* sandbox,
                                 const HarnessEnv& env, std::atomic<pid_t>* started_pid) {
  ForkServerJob request;
  request.started_pid = started_pid;
  request.job = job;
  request.spec_path = spec_path.string();
  request.cwd = job_dir.string();
  request.env = BuildEnvironment(options);
  request.stdout_path = (job_dir / "stdout.txt").string();
  request.stderr_path = (job_dir / "stderr.txt").string();
  request.max_output_bytes = options.max_output_bytes;
  JobOutcome outcome;
  JobContainment containment;
  if (sandbox && sandbox->sandbox && sandbox->sandbox->JailAllowed()) {
    SandboxPolicy policy = sandbox->policy;
    policy.writable.push_back(job_dir);
    policy.read_only.push_back(env.home / "python");
    Result<JobContainment> prepared = sandbox->sandbox->PrepareJail(policy, {}, job_dir.string());
    if (!prepared.ok())
      return FailedPrecondition("cannot contain the job: " + prepared.status().message());
    containment = std::move(prepared).value();
    request.jail = containment.jail;
    outcome.isolation = containment.isolation;
  }
  Result<RunResult> run = server.Run(request, options.timeout_seconds);
  if (!run.ok()) return run.status();
  outcome.process = std::move(run).value();
  SandboxRun settled;
  Sandbox::Settle(containment, &settled);
  outcome.oom_killed = settled.oom_killed;
  return outcome;
}

// The synth job is data synthesis, outside the trusted judging harness: a package of its own
// (python/cuda_agent_synth) run as `python3 -m cuda_agent_synth --spec SPEC`, always in an
// interpreter of its own (the fork server preloads and runs the harness's jobs only).
constexpr const char* kSynthJob = "synth";

}  // namespace

RunOptions HarnessRunOptions(const HarnessEnv& env, const std::string& job,
                             const fs::path& spec_path, const JobSandbox* sandbox) {
  RunOptions options;
  std::string python = sandbox && !sandbox->python.empty() ? sandbox->python : env.python;
  if (sandbox) options.argv = sandbox->wrapper;
  if (job == kSynthJob) {
    options.argv.insert(options.argv.end(),
                        {python, "-m", "cuda_agent_synth", "--spec", spec_path.string()});
  } else {
    options.argv.insert(options.argv.end(),
                        {python, "-m", "cuda_agent_harness", job, "--spec", spec_path.string()});
  }
  std::string pythonpath = (env.home / "python").string();
  if (const std::string& old = HostValue(HostVar::kPythonPath); !old.empty())
    pythonpath += ":" + old;
  options.env_set = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1",
                     "PYTHONHASHSEED=0"};
  options.env_allow = JudgedEnvironment();
  if (sandbox)
    options.env_set.insert(options.env_set.end(), sandbox->env_set.begin(), sandbox->env_set.end());
  if (sandbox && sandbox->sandbox)
    options.env_set.push_back("HOME=/tmp");  // caches go to the private /tmp
  return options;
}

const ForkServer* HarnessForkServer(const HarnessEnv& env) { return SharedForkServer(env); }

Result<JobOutcome> RunHarnessJob(const HarnessEnv& env, const std::string& job, Json spec,
                                 const fs::path& jobs_dir, double timeout_seconds,
                                 const JobSandbox* sandbox, std::atomic<pid_t>* started_pid) {
  static std::atomic<int> counter{0};
  fs::path job_dir = jobs_dir / (job + "-" + std::to_string(counter++));
  std::error_code ec;
  fs::create_directories(job_dir, ec);
  if (ec) return Internal("cannot create " + job_dir.string() + ": " + ec.message());
  fs::path spec_path = job_dir / "spec.json";
  fs::path result_path = job_dir / "result.json";
  spec["result_path"] = result_path.string();
  Status written = WriteJsonFile(spec_path, spec);
  if (!written.ok()) return written;

  RunOptions options = HarnessRunOptions(env, job, spec_path, sandbox);
  options.cwd = job_dir.string();
  options.timeout_seconds = timeout_seconds;
  std::string python = options.argv.at(sandbox ? sandbox->wrapper.size() : 0);

  JobOutcome outcome;
  // A wrapped job (compute-sanitizer) needs an exec of its own; a contained job uses the fork
  // server only where its children can enter the jail.
  bool wrapped = sandbox && !sandbox->wrapper.empty();
  bool contained = sandbox && sandbox->sandbox && sandbox->sandbox->JailAllowed();
  bool gpu = (sandbox && sandbox->policy.gpu) || spec.value("device", std::string()) == "cuda";
  const ForkServer* server = wrapped || job == kSynthJob ? nullptr : SharedForkServer(env);
  if (server && (!contained || server->Jail() == "ok") && (!gpu || server->CudaUsable())) {
    Result<JobOutcome> via =
        ViaForkServer(*server, job, job_dir, spec_path, options, sandbox, env, started_pid);
    if (!via.ok()) return via.status();
    outcome = std::move(via).value();
  } else if (sandbox && sandbox->sandbox) {
    SandboxPolicy policy = sandbox->policy;
    policy.writable.push_back(job_dir);
    policy.read_only.push_back(env.home / "python");
    Result<SandboxRun> run = sandbox->sandbox->Run(policy, options);
    if (!run.ok())
      return FailedPrecondition("cannot start the sandboxed harness: " + run.status().message());
    outcome.process = std::move(run->process);
    outcome.isolation = run->isolation;
    outcome.oom_killed = run->oom_killed;
  } else {
    Result<RunResult> run = RunProcess(options);
    if (!run.ok()) {
      return FailedPrecondition("cannot start the harness with '" + python +
                                "': " + run.status().message() + " (set CUDA_AGENT_PYTHON)");
    }
    outcome.process = std::move(run).value();
  }
  outcome.ReadResult(result_path);
  return outcome;
}

}  // namespace cuda_agent
