// early_jobs.cc — starting harness jobs ahead of their go, giving the go, calling them off.
#include "harness/early_jobs.h"

#include <signal.h>

#include <chrono>

namespace cuda_agent {
namespace {

// How long a job called off may take to see `stop` before it is killed.
constexpr std::chrono::milliseconds kStopGrace{100};

}  // namespace

EarlyJobs::EarlyJobs(fs::path signals, double wait_s, JobRunner run)
    : signals_(std::move(signals)), wait_s_(wait_s), run_(std::move(run)) {}

void EarlyJobs::Start(const std::string& name, const std::string& job, const Json& spec,
                      const JobSandbox& box, double timeout_s) {
  if (jobs_.count(name)) return;
  Json waiting = spec;
  waiting["wait_for"] = {{"go", GoFile(name).string()},
                         {"stop", (signals_ / "stop").string()},
                         {"timeout_s", wait_s_}};
  JobSandbox waiting_box = box;
  waiting_box.policy.read_only.push_back(signals_);
  Job& early = Fresh(name, job, spec, box, timeout_s);
  early.outcome = std::async(
      std::launch::async, [this, name, job, waiting, waiting_box, timeout_s, pid = early.pid]() {
        return run_(name, job, waiting, wait_s_ + timeout_s, &waiting_box, pid.get());
      });
}

EarlyJobs::Job& EarlyJobs::Fresh(const std::string& name, const std::string& job, const Json& spec,
                                 const JobSandbox& box, double timeout_s) {
  Job& early = jobs_[name];
  early = Job();
  early.job = job;
  early.spec = spec;
  early.box = box;
  early.timeout_s = timeout_s;
  return early;
}

void EarlyJobs::Adopt(const std::string& name, const std::string& job, const Json& spec,
                      const JobSandbox& box, double timeout_s,
                      std::function<Status(const Json&)> go,
                      std::future<Result<JobOutcome>> outcome, pid_t pid) {
  CallOff(name);
  Job& early = Fresh(name, job, spec, box, timeout_s);
  early.outcome = std::move(outcome);
  early.pid->store(pid);
  early.go = std::move(go);
}

Result<JobOutcome> EarlyJobs::Run(const std::string& name, const Json& fields) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return Internal("no early job '" + name + "' was started");
  Job early = std::move(it->second);
  jobs_.erase(it);
  Status given_go = OkStatus();
  if (early.go) {
    given_go = early.go(fields);
  } else {
    given_go = WriteFileAtomic(GoFile(name), fields.empty() ? "go\n" : fields.dump() + "\n");
  }
  if (!given_go.ok()) {
    if (!early.go) return given_go;
    // An adopted job that could not be given its go is ended; a fresh run takes its place.
    if (early.pid->load() > 0) kill(early.pid->load(), SIGKILL);
    early.outcome.wait();
    Json spec = early.spec;
    spec.update(fields);
    return run_(name, early.job, spec, early.timeout_s, &early.box, nullptr);
  }
  auto given = std::chrono::steady_clock::now();
  bool killed = false;
  if (early.timeout_s > 0 &&
      early.outcome.wait_for(std::chrono::duration<double>(early.timeout_s)) !=
          std::future_status::ready &&
      early.pid->load() > 0) {
    killed = kill(early.pid->load(), SIGKILL) == 0;
  }
  Result<JobOutcome> out = early.outcome.get();
  if (killed && out.ok()) {
    out->process.timed_out = true;
    out->process.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - given).count();
  }
  if (!out.ok() || out->ErrorKind() != "not_started") return out;
  Json spec = early.spec;
  spec.update(fields);
  return run_(name, early.job, spec, early.timeout_s, &early.box, nullptr);
}

void EarlyJobs::CallOff() {
  if (jobs_.empty()) return;
  (void)WriteFileAtomic(signals_ / "stop", "stop\n");
  for (auto& [name, early] : jobs_) End(early);
  jobs_.clear();
}

void EarlyJobs::CallOff(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  End(it->second);
  jobs_.erase(it);
}

void EarlyJobs::End(Job& early) {
  if (!early.outcome.valid()) return;
  if (early.outcome.wait_for(kStopGrace) != std::future_status::ready && early.pid->load() > 0) {
    kill(early.pid->load(), SIGKILL);
  }
  early.outcome.wait();
}

}  // namespace cuda_agent
