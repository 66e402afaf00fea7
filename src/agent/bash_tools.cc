// bash_tools.cc — Bash (a `bash -c` command inside the project's sandbox: read-only root, the
// workspace writable, no network, a watchdog), background jobs, BashOutput and KillBash.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>

#include "agent/tools.h"
#include "common/fs.h"

namespace cuda_agent {
namespace {

Json Schema(Json properties, std::vector<std::string> required) {
  return Json{
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

std::string FormatSeconds(double seconds) {
  char text[32];
  snprintf(text, sizeof text, "%g", seconds);
  return text;
}

const Sandbox& SandboxOf(const ToolContext& context) {
  return context.sandbox != nullptr ? *context.sandbox : Sandbox::Default();
}

// CommandEnvironment: what a sandboxed command inherits — the judged-code allowlist (no API keys of
// the agent's model), a HOME it may write (the private /tmp), and the context's additions.
void SetCommandEnvironment(const ToolContext& context, RunOptions& run) {
  run.env_allow = JudgedEnvironment();
  run.env_allow.push_back("PATH");
  run.env_allow.push_back("LANG");
  run.env_set = {"HOME=/tmp", "TERM=dumb"};
  run.env_set.insert(run.env_set.end(), context.env_set.begin(), context.env_set.end());
}

SandboxPolicy CommandPolicy(const ToolContext& context) {
  SandboxPolicy policy = context.sandbox_policy;
  policy.writable.push_back(context.workspace);
  if (policy.limits.processes == 0) policy.limits.processes = 4096;
  if (policy.limits.open_files == 0) policy.limits.open_files = 4096;
  if (policy.limits.file_size_bytes == 0) policy.limits.file_size_bytes = 1ull << 30;
  return policy;
}

double TimeoutOf(const Json& args, const ToolContext& context) {
  double timeout =
      args.contains("timeout") ? args["timeout"].get<double>() : context.default_timeout_s;
  if (timeout <= 0) timeout = context.default_timeout_s;
  return std::min(timeout, context.max_timeout_s);
}

// Contents of the protected files before a command (they are small), to tell which it changed
// whatever the sandbox backend.
std::vector<std::string> Contents(const std::vector<fs::path>& files) {
  std::vector<std::string> contents;
  for (const fs::path& file : files) {
    Result<std::string> text = ReadFile(file);
    contents.push_back(text.ok() ? text.value() : std::string("\0missing", 8));
  }
  return contents;
}

std::vector<std::string> ChangedFiles(const std::vector<std::string>& before,
                                      const std::vector<fs::path>& files) {
  std::vector<std::string> after = Contents(files);
  std::vector<std::string> changed;
  for (size_t i = 0; i < files.size(); ++i) {
    if (after[i] != before[i]) changed.push_back(files[i].string());
  }
  return changed;
}

class BashTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {
        "Bash",
        "Run a shell command (bash -c) in the workspace, inside a sandbox: the workspace is "
        "writable, "
        "the rest of the file system read-only, no network. `timeout` in seconds (default 120, at "
        "most 600). With run_in_background the command runs on; its id is returned for BashOutput "
        "and KillBash. stdout and stderr are shown together.",
        Schema(
            {{"command", {{"type", "string"}}},
             {"timeout", {{"type", "number"}, {"description", "seconds (default 120, max 600)"}}},
             {"run_in_background", {{"type", "boolean"}}},
             {"description",
              {{"type", "string"}, {"description", "what the command does (optional)"}}}},
            {"command"})};
  }

  Observation Run(const Json& args, ToolContext& context) override {
    const std::string command = args["command"].get<std::string>();
    if (command.find_first_not_of(" \t\r\n") == std::string::npos)
      return ErrorObservation("Error: command is empty");
    double timeout = TimeoutOf(args, context);
    if (args.value("run_in_background", false)) {
      if (context.jobs == nullptr)
        return ErrorObservation("Error: background jobs are not available here");
      Result<std::string> id = context.jobs->Start(command, context.max_timeout_s, context);
      if (!id.ok()) return ErrorObservation("Error: " + id.status().message());
      return {"Started background job " + id.value() +
                  " (read its output with BashOutput, stop it with KillBash)",
              false};
    }
    RunOptions run;
    run.argv = {"/bin/bash", "-c", "exec 2>&1\n" + command};
    run.cwd = context.workspace.string();
    run.timeout_seconds = timeout;
    SetCommandEnvironment(context, run);
    std::vector<std::string> before = Contents(context.sandbox_policy.protected_files);
    Result<SandboxRun> result = SandboxOf(context).Run(CommandPolicy(context), run);
    if (!result.ok())
      return ErrorObservation("Error: the sandbox could not run the command: " +
                              result.status().message());
    const RunResult& p = result->process;
    std::string text = p.out;
    if (!p.err.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + p.err;
    std::vector<std::string> changed = ChangedFiles(before, context.sandbox_policy.protected_files);
    if (!changed.empty()) {
      std::string names;
      for (const std::string& file : changed) {
        names += " " + fs::path(file).lexically_relative(context.workspace).string();
        // Put the original back, so the workspace stays judgeable.
        auto index = std::find(context.sandbox_policy.protected_files.begin(),
                               context.sandbox_policy.protected_files.end(), fs::path(file));
        const std::string& original =
            before[static_cast<size_t>(index - context.sandbox_policy.protected_files.begin())];
        if (original != std::string("\0missing", 8)) (void)WriteFileAtomic(file, original);
      }
      return ErrorObservation(text + (text.empty() || text.back() == '\n' ? "" : "\n") +
                              "Error: the command changed protected workspace files:" + names +
                              "; they were restored. Do not change infrastructure files (a changed "
                              "one fails the judgement).");
    }
    if (p.timed_out) {
      return ErrorObservation(text + (text.empty() || text.back() == '\n' ? "" : "\n") +
                              "Error: the command timed out after " + FormatSeconds(timeout) +
                              " s and was killed (use run_in_background for long commands)");
    }
    if (p.term_signal != 0) {
      return ErrorObservation(text + (text.empty() || text.back() == '\n' ? "" : "\n") +
                              "[killed by " + SignalName(p.term_signal) +
                              (result->oom_killed ? ": out of memory" : "") + "]");
    }
    if (p.exit_code != 0) {
      return ErrorObservation(text + (text.empty() || text.back() == '\n' ? "" : "\n") +
                              "[exit status " + std::to_string(p.exit_code) + "]");
    }
    return {text.empty() ? "(no output)" : text, false};
  }
};

class BashOutputTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {
        "BashOutput",
        "Show the new output of a background job since the last look, and whether it still runs.",
        Schema({{"id", {{"type", "string"}}}}, {"id"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    if (context.jobs == nullptr)
      return ErrorObservation("Error: background jobs are not available here");
    Result<std::string> out = context.jobs->Output(args["id"].get<std::string>());
    if (!out.ok()) return ErrorObservation("Error: " + out.status().message());
    return {out.value(), false};
  }
};

class KillBashTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {"KillBash", "Stop a background job.", Schema({{"id", {{"type", "string"}}}}, {"id"})};
  }
  Observation Run(const Json& args, ToolContext& context) override {
    if (context.jobs == nullptr)
      return ErrorObservation("Error: background jobs are not available here");
    Result<std::string> out = context.jobs->Kill(args["id"].get<std::string>());
    if (!out.ok()) return ErrorObservation("Error: " + out.status().message());
    return {out.value(), false};
  }
};

// The supervisor inside the sandbox: runs the command in a process group of its own (job control
// on), output to the log; kills the group when the kill file appears; writes the exit status.
constexpr const char* kSupervisor = R"(set -m
bash -c "$1" > "$2" 2>&1 < /dev/null &
child=$!
while kill -0 "$child" 2>/dev/null; do
  if [ -e "$3" ]; then kill -KILL -- "-$child" 2>/dev/null || kill -KILL "$child" 2>/dev/null; fi
  sleep 0.2
done
wait "$child"
echo $? > "$4"
)";

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct BackgroundJobs::Job {
  std::string id;
  std::string command;
  fs::path log, kill_file, status_file;
  std::thread thread;
  std::atomic<bool> done{false};
  std::string end;  // how the sandbox run ended, when done
  uint64_t read_offset = 0;
  double started = 0;
  bool kill_requested = false;
};

BackgroundJobs::BackgroundJobs(fs::path dir) : dir_(std::move(dir)) {
  // A reopened session keeps the logs of its earlier jobs: new ids continue after them.
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("bash_", 0) != 0 || it->path().extension() != ".log") continue;
    const std::string digits = name.substr(5, name.size() - 5 - 4);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 9)
      continue;
    next_id_ = std::max(next_id_, std::stoi(digits));
  }
}
BackgroundJobs::~BackgroundJobs() { KillAll(); }

Result<std::string> BackgroundJobs::Start(const std::string& command, double timeout_s,
                                          const ToolContext& context) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Internal("cannot create " + dir_.string() + ": " + ec.message());
  std::lock_guard<std::mutex> lock(mutex_);
  auto job = std::make_unique<Job>();
  job->id = "bash_" + std::to_string(++next_id_);
  job->command = command;
  job->log = fs::absolute(dir_ / (job->id + ".log"));
  job->kill_file = fs::absolute(dir_ / (job->id + ".kill"));
  job->status_file = fs::absolute(dir_ / (job->id + ".status"));
  job->started = Now();
  std::ofstream(job->log).close();  // exists before the first BashOutput
  RunOptions run;
  run.argv = {"/bin/bash",
              "-c",
              kSupervisor,
              "supervisor",
              command,
              job->log.string(),
              job->kill_file.string(),
              job->status_file.string()};
  run.cwd = context.workspace.string();
  run.timeout_seconds = timeout_s;
  SetCommandEnvironment(context, run);
  SandboxPolicy policy = CommandPolicy(context);
  policy.writable.push_back(fs::absolute(dir_));
  const Sandbox* sandbox = &SandboxOf(context);
  Job* raw = job.get();
  job->thread = std::thread([raw, sandbox, policy, run]() {
    Result<SandboxRun> result = sandbox->Run(policy, run);
    raw->end = !result.ok() ? "the sandbox could not run it: " + result.status().message()
               : result->process.timed_out
                   ? "timed out after " + FormatSeconds(run.timeout_seconds) + " s"
                   : result->process.Describe();
    raw->done = true;
  });
  std::string id = job->id;
  jobs_[id] = std::move(job);
  return id;
}

std::string BackgroundJobs::StateText(const Job& job) const {
  if (!job.done) {
    return "running (" + std::to_string(static_cast<long>(Now() - job.started)) + " s)";
  }
  Result<std::string> status = ReadFile(job.status_file);
  if (job.kill_requested) return "killed";
  if (status.ok() && !status->empty()) {
    std::string code = status.value();
    while (!code.empty() && (code.back() == '\n' || code.back() == ' ')) code.pop_back();
    return "exited with status " + code;
  }
  return "ended: " + job.end;
}

Result<std::string> BackgroundJobs::Output(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFound("no background job '" + id + "'");
  Job& job = *it->second;
  bool finished = job.done;  // read before the log, so no output written before the end is missed
  std::ifstream in(job.log, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(job.read_offset));
  std::string fresh((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  job.read_offset += fresh.size();
  std::string state =
      finished ? StateText(job)
               : "running (" + std::to_string(static_cast<long>(Now() - job.started)) + " s)";
  return "[" + id + ": " + state + "]\n" + (fresh.empty() ? "(no new output)\n" : fresh);
}

Result<std::string> BackgroundJobs::Kill(const std::string& id) {
  Job* job = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound("no background job '" + id + "'");
    job = it->second.get();
    if (job->done) return "[" + id + ": already " + StateText(*job) + "]";
    job->kill_requested = true;
    std::ofstream(job->kill_file).close();
  }
  for (int i = 0; i < 100 && !job->done; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return job->done ? "[" + id + ": killed]" : "[" + id + ": kill requested; still stopping]";
}

void BackgroundJobs::KillAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, job] : jobs_) {
    if (!job->done) {
      job->kill_requested = true;
      std::ofstream(job->kill_file).close();
    }
  }
  for (auto& [id, job] : jobs_) {
    if (job->thread.joinable()) job->thread.join();
  }
}

size_t BackgroundJobs::Running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t running = 0;
  for (const auto& [id, job] : jobs_) running += job->done ? 0 : 1;
  return running;
}

std::unique_ptr<Tool> MakeBashTool() { return std::make_unique<BashTool>(); }
std::unique_ptr<Tool> MakeBashOutputTool() { return std::make_unique<BashOutputTool>(); }
std::unique_ptr<Tool> MakeKillBashTool() { return std::make_unique<KillBashTool>(); }

}  // namespace cuda_agent
