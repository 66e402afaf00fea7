// task_check.cc — `tasks check`: the job loop with restarts and the progress file; the report and
// its markdown form are in task_check_report.cc.
#include "judge/task_check.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <future>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "harness/job_policy.h"
#include "judge/judge.h"
#include "judge/precision.h"

namespace cuda_agent {
namespace {

constexpr double kJobStartSeconds = 300;  // the job's own start (torch import, CUDA init)
constexpr auto kPollInterval = std::chrono::milliseconds(250);

// ProgressReader returns the complete lines appended to a file since the last call.
class ProgressReader {
 public:
  explicit ProgressReader(fs::path path) : path_(std::move(path)) {}

  std::string NewLines() {
    std::ifstream f(path_, std::ios::binary);
    if (!f) return "";
    f.seekg(0, std::ios::end);
    std::streamoff size = f.tellg();
    if (size <= offset_) return "";
    f.seekg(offset_);
    std::string chunk(static_cast<size_t>(size - offset_), '\0');
    f.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    size_t last = chunk.rfind('\n');
    if (last == std::string::npos) return "";
    offset_ += static_cast<std::streamoff>(last + 1);
    return chunk.substr(0, last + 1);
  }

 private:
  fs::path path_;
  std::streamoff offset_ = 0;
};

// RemoveOnExit removes the work folder when the check ends.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path dir) : dir_(std::move(dir)) {}
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;
  ~RemoveOnExit() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  fs::path dir_;
};

// TaskFileName: where the job finds a task's code; the name appears in Python's error messages.
std::string TaskFileName(const Task& task, size_t index) {
  std::string stem = fs::path(task.name).filename().string();
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  }
  return std::to_string(index) + "_" + stem + ".py";
}

// Reusable: a record of an earlier run (--progress) answers for this task, device, seed and
// policies.
bool Reusable(const Json& record, const Task& task, const TaskCheckOptions& opt) {
  if (record.value("id", Json()) != Json(task.id) ||
      record.value("device", Json()) != Json(DeviceName(opt.device)) ||
      record.value("seed", Json()) != Json(opt.seed)) {
    return false;
  }
  if (!record.value("ok", false)) return true;
  const Json answers = record.value("answers", Json::object());
  for (const auto& [name, answer] : answers.items()) {
    if (!answer.is_object()) continue;
    for (const auto& p : opt.policies) {
      if (!answer.contains("pass") || !answer["pass"].contains(p)) return false;
    }
  }
  return true;
}

}  // namespace

const std::vector<std::string>& TrivialAnswers() {
  static const std::vector<std::string> answers = {"zeros", "constant", "noise", "input",
                                                   "independent"};
  return answers;
}

Result<std::vector<std::string>> TaskCheckPolicies(const std::string& flag) {
  if (flag == "all") return std::vector<std::string>{"strict", "tf32-fair", "paper"};
  Result<PrecisionPolicy> policy = MakePrecisionPolicy(flag);
  if (!policy.ok())
    return InvalidArgument("--policy expects all, strict, tf32-fair, paper or kernelbench, not '" +
                           flag + "'");
  return std::vector<std::string>{flag};
}

ProgressState ParseProgress(const std::string& text) {
  ProgressState state;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.empty()) continue;
    Result<Json> parsed = ParseJson(line, "progress line");
    if (!parsed.ok() || !parsed->is_object()) continue;
    const Json& entry = parsed.value();
    if (entry.contains("started") && entry["started"].is_string()) {
      state.started.push_back(entry["started"].get<std::string>());
    } else if (entry.contains("name") && entry["name"].is_string()) {
      state.records[entry["name"].get<std::string>()] = entry;
    }
  }
  return state;
}

Json BlameRecord(const Task& task, const JobOutcome& job, double task_timeout_s) {
  const RunResult& p = job.process;
  std::string kind = "crash", reason;
  if (job.oom_killed) {
    kind = "oom";
    reason = "ran out of memory (the job's memory limit)";
  } else if (p.timed_out) {
    kind = "timeout";
    reason = "the job " + p.Describe();
  } else if (p.term_signal == 0 && p.exit_code == 1 &&
             p.err.find("Timeout (") != std::string::npos) {
    kind = "timeout";
    char buf[96];
    std::snprintf(buf, sizeof(buf), "took longer than %g s (--task-timeout)", task_timeout_s);
    reason = buf;
  } else {
    std::string tail = job.StderrTail(3);
    reason = (p.term_signal != 0 ? "crashed: " : "the job process ended with ") + p.Describe() +
             (tail.empty() ? "" : ": " + tail);
  }
  return {{"name", task.name},  {"id", task.id},    {"ok", false},
          {"error_kind", kind}, {"reason", reason}, {"seconds", Json()}};
}

Result<Json> RunTaskCheck(const HarnessEnv& env, const std::string& suite,
                          const std::vector<Task>& tasks, const TaskCheckOptions& opt) {
  const Sandbox& sandbox = opt.sandbox ? *opt.sandbox : Sandbox::Default();
  const fs::path cache_dir = opt.cache_dir.empty() ? DefaultCacheDir() : opt.cache_dir;
  Result<fs::path> work = MakeTempDir(cache_dir / "work", "taskcheck");
  if (!work.ok()) return work.status();
  // Traversable, so that the job may run as uid 65534 on the host (as the judge's work folders).
  fs::permissions(work.value(),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  RemoveOnExit cleanup(work.value());
  const fs::path tasks_dir = work.value() / "tasks", progress_dir = work.value() / "progress",
                 jobs_dir = work.value() / "jobs";
  for (const auto& d : {tasks_dir, progress_dir, jobs_dir}) fs::create_directories(d);

  std::map<std::string, Json> records;
  Json env_info = {{"sandbox", IsolationName(sandbox.Level())}};
  if (!opt.progress_file.empty() && fs::exists(opt.progress_file)) {
    Result<std::string> text = ReadFile(opt.progress_file);
    if (!text.ok()) return text.status();
    ProgressState earlier = ParseProgress(text.value());
    for (const Task& t : tasks) {
      auto it = earlier.records.find(t.name);
      if (it != earlier.records.end() && Reusable(it->second, t, opt)) records[t.name] = it->second;
    }
  }
  std::ofstream progress_out;
  if (!opt.progress_file.empty()) {
    progress_out.open(opt.progress_file, std::ios::app);
    if (!progress_out)
      return InvalidArgument("cannot write the progress file " + opt.progress_file.string());
  }
  auto accept = [&](Json record) {
    record["status"] = record.value("status", record.value("ok", false) ? "checked" : "failed");
    record["device"] = DeviceName(opt.device);
    record["seed"] = opt.seed;
    const std::string name = record["name"];
    records[name] = record;
    if (progress_out.is_open() && record["status"] != "malformed")
      progress_out << record.dump() << std::endl;
    if (opt.on_record)
      opt.on_record(record, MakeTaskCheckReport(suite, tasks, records, opt, env_info));
  };

  std::vector<size_t> pending;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (records.count(tasks[i].name)) continue;
    if (Status shape = CheckTaskShape(tasks[i]); !shape.ok()) {
      std::string reason = shape.message();
      if (reason.rfind(tasks[i].name + ": ", 0) == 0) reason.erase(0, tasks[i].name.size() + 2);
      accept({{"name", tasks[i].name},
              {"id", tasks[i].id},
              {"ok", false},
              {"status", "malformed"},
              {"error_kind", "task"},
              {"reason", reason}});
      continue;
    }
    Status written = WriteFileAtomic(tasks_dir / TaskFileName(tasks[i], i), tasks[i].code);
    if (!written.ok()) return written;
    pending.push_back(i);
  }
  if (pending.empty()) return MakeTaskCheckReport(suite, tasks, records, opt, env_info);

  Result<Toolchain> toolchain = DiscoverToolchain(env, opt.device, cache_dir, jobs_dir);
  if (!toolchain.ok()) return toolchain.status();
  env_info["torch_version"] = toolchain->torch_version;
  env_info["gpu"] = toolchain->gpu ? Json(toolchain->gpu->name) : Json();
  JobSandbox box{&sandbox,
                 BaseJobPolicy(toolchain.value(), {opt.device, cache_dir, opt.job_memory_bytes,
                                                   4096, std::max(opt.task_timeout_s, 60.0)}),
                 PythonInside(toolchain.value()),
                 {},
                 {}};
  box.policy.read_only.push_back(tasks_dir);
  box.policy.writable.push_back(progress_dir);
  Json tolerances = Json::object();
  for (const auto& name : opt.policies) {
    Result<PrecisionPolicy> policy = MakePrecisionPolicy(name);
    if (!policy.ok()) return policy.status();
    tolerances[name] = policy->Tolerance();
  }
  Isolation weakest = Isolation::kFull;

  for (int run = 0; !pending.empty(); ++run) {
    const fs::path progress_path = progress_dir / ("run-" + std::to_string(run) + ".jsonl");
    Json spec_tasks = Json::array();
    std::set<std::string> pending_names;
    for (size_t i : pending) {
      spec_tasks.push_back({{"name", tasks[i].name},
                            {"id", tasks[i].id},
                            {"path", (tasks_dir / TaskFileName(tasks[i], i)).string()}});
      pending_names.insert(tasks[i].name);
    }
    Json spec = {{"device", DeviceName(opt.device)},
                 {"tasks", spec_tasks},
                 {"tolerances", tolerances},
                 {"backend_flags", MakePrecisionPolicy("strict")->reference.ToJson()},
                 {"seed", opt.seed},
                 {"progress_path", progress_path.string()},
                 {"task_timeout_s", opt.task_timeout_s > 0 ? opt.task_timeout_s : 0.0}};
    // The job's own watchdog is a backstop: the per-task one in the job fires first.
    double timeout =
        opt.task_timeout_s > 0 ? kJobStartSeconds + opt.task_timeout_s * pending.size() : 0;
    auto job = std::async(std::launch::async, [&] {
      return RunHarnessJob(env, "task_check", spec, jobs_dir, timeout, &box);
    });
    ProgressReader reader(progress_path);
    std::vector<std::string> started;
    auto take = [&] {
      ProgressState s = ParseProgress(reader.NewLines());
      started.insert(started.end(), s.started.begin(), s.started.end());
      for (auto& [name, record] : s.records) {
        if (pending_names.count(name) && !records.count(name)) accept(record);
      }
    };
    while (job.wait_for(kPollInterval) != std::future_status::ready) take();
    Result<JobOutcome> outcome = job.get();
    take();
    if (!outcome.ok()) return outcome.status();
    if (static_cast<int>(outcome->isolation) > static_cast<int>(weakest))
      weakest = outcome->isolation;
    env_info["sandbox"] = IsolationName(weakest);

    std::vector<size_t> remaining;
    for (size_t i : pending) {
      if (!records.count(tasks[i].name)) remaining.push_back(i);
    }
    const bool progressed = remaining.size() < pending.size();
    const std::string kind = outcome->ErrorKind();
    if (outcome->Ok() && !remaining.empty()) {
      return Internal("the task_check job ended without checking " + tasks[remaining.front()].name);
    }
    if (outcome->Ok() || (kind == "restart" && progressed)) {
      pending = remaining;
      continue;
    }
    if (outcome->has_result && kind != "restart")
      return Internal("task_check job: " + outcome->Reason());
    if (started.empty()) {
      return Internal("the task_check job ended before its first task: " +
                      outcome->process.Describe() + ": " + outcome->StderrTail(5));
    }
    // The job died in the task it started last: that task fails, the others get a new job.
    auto culprit = std::find_if(remaining.begin(), remaining.end(),
                                [&](size_t i) { return tasks[i].name == started.back(); });
    if (culprit != remaining.end()) {
      accept(BlameRecord(tasks[*culprit], outcome.value(), opt.task_timeout_s));
      remaining.erase(culprit);
    } else if (!progressed) {
      return Internal("the task_check job ended without progress: " + outcome->process.Describe() +
                      ": " + outcome->StderrTail(5));
    }
    pending = remaining;
  }
  return MakeTaskCheckReport(suite, tasks, records, opt, env_info);
}

}  // namespace cuda_agent
