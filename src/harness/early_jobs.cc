// early_jobs.cc — starting harness jobs ahead of their go, giving the go, calling them off.
#include "harness/early_jobs.h"

#include <signal.h>

#include <chrono>

#include "common/log.h"

namespace cuda_agent {
namespace {

// How long a job called off may take to see `stop` before it is killed.
constexpr std::chrono::milliseconds kStopGrace{100};
// How often WaitForMark looks for a mark (the job polls its go file as often: go.py).
constexpr std::chrono::milliseconds kMarkPoll{2};

template <class Future>
double WaitForMarkOf(const fs::path& mark, const Future& outcome, double max_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(max_s));
  std::error_code ec;
  while (outcome.valid() && !fs::exists(mark, ec) && Clock::now() < deadline) {
    if (outcome.wait_for(kMarkPoll) == std::future_status::ready) break;
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

double WaitForMark(const fs::path& mark, const std::future<Result<JobOutcome>>& outcome,
                   double max_s) {
  return WaitForMarkOf(mark, outcome, max_s);
}

double WaitForMark(const fs::path& mark, const std::shared_future<Result<JobOutcome>>& outcome,
                   double max_s) {
  return WaitForMarkOf(mark, outcome, max_s);
}

EarlyJobs::EarlyJobs(fs::path signals, double wait_s, JobRunner run)
    : signals_(std::move(signals)), wait_s_(wait_s), run_(std::move(run)) {}

void EarlyJobs::Start(const std::string& name, const std::string& job, const Json& spec,
                      const JobSandbox& box, double timeout_s, const EarlyMarks& marks) {
  if (jobs_.count(name)) return;
  Json waiting = spec;
  waiting["wait_for"] = {{"go", GoFile(name).string()},
                         {"stop", (signals_ / "stop").string()},
                         {"timeout_s", wait_s_}};
  if (!marks.dir.empty()) {
    waiting["wait_for"]["ready"] = marks.Ready().string();
    if (marks.prepares) {
      waiting["wait_for"]["then"] = ThenFile(name).string();
      waiting["wait_for"]["prepared"] = marks.Prepared().string();
    }
    if (marks.checks) {
      waiting["wait_for"]["time"] = TimeFile(name).string();
      waiting["wait_for"]["checked"] = marks.Checked().string();
    }
  }
  JobSandbox waiting_box = box;
  waiting_box.policy.read_only.push_back(signals_);
  Job& early = Fresh(name, job, spec, box, timeout_s);
  early.marks = marks;
  early.fresh_marks = marks;
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
                      const JobSandbox& box, double timeout_s, AdoptedJob adopted,
                      const EarlyMarks& fresh_marks) {
  CallOff(name);
  Job& early = Fresh(name, job, spec, box, timeout_s);
  early.outcome = std::move(adopted.outcome);
  early.pid->store(adopted.pid);
  early.go = std::move(adopted.go);
  early.then = std::move(adopted.then);
  early.time = std::move(adopted.time);
  early.marks = adopted.marks;
  early.marks.prepares = static_cast<bool>(early.then);
  early.marks.checks = static_cast<bool>(early.time);
  early.fresh_marks = fresh_marks;
}

bool EarlyJobs::Ready(const std::string& name) const {
  auto it = jobs_.find(name);
  std::error_code ec;
  return it != jobs_.end() && !it->second.marks.dir.empty() &&
         fs::exists(it->second.marks.Ready(), ec);
}

double EarlyJobs::WaitReady(const std::string& name) const {
  auto it = jobs_.find(name);
  if (it == jobs_.end() || it->second.marks.dir.empty()) return 0;
  return WaitForMark(it->second.marks.Ready(), it->second.outcome, it->second.timeout_s);
}

bool EarlyJobs::Prepare(const std::string& name, const Json& fields) {
  auto it = jobs_.find(name);
  if (it == jobs_.end() || it->second.gone || !it->second.marks.prepares || !Ready(name))
    return false;
  if (Status given = GiveGo(name, it->second, fields); !given.ok()) {
    LogWarn("the early job '" + name + "' could not be given its go: " + given.message());
    return false;  // Run gives it again (or, for an adopted job, replaces it)
  }
  it->second.gone = true;
  return true;
}

double EarlyJobs::WaitPrepared(const std::string& name) const {
  auto it = jobs_.find(name);
  if (it == jobs_.end() || !it->second.gone) return 0;
  return WaitForMark(it->second.marks.Prepared(), it->second.outcome, it->second.timeout_s);
}

Status EarlyJobs::GiveGo(const std::string& name, Job& early, const Json& fields) const {
  if (early.go) return early.go(fields);
  return WriteFileAtomic(GoFile(name), fields.empty() ? "go\n" : fields.dump() + "\n");
}

Status EarlyJobs::GiveThen(const std::string& name, Job& early) const {
  if (!early.marks.prepares) return OkStatus();
  if (early.then) return early.then();
  return WriteFileAtomic(ThenFile(name), "then\n");
}

Status EarlyJobs::GiveTime(const std::string& name, Job& early) const {
  if (early.time) return early.time();
  return WriteFileAtomic(TimeFile(name), "time\n");
}

fs::path EarlyJobs::Outputs(const std::string& name) const {
  auto it = jobs_.find(name);
  return it == jobs_.end() ? fs::path() : it->second.marks.out;
}

EarlyJobs::Job& EarlyJobs::Replace(const std::string& name) {
  Job old = std::move(jobs_.at(name));
  jobs_.erase(name);
  End(old);
  Start(name, old.job, old.spec, old.box, old.timeout_s, old.fresh_marks);
  Job& fresh = jobs_.at(name);
  fresh.replaced = true;
  return fresh;
}

Result<bool> EarlyJobs::Check(const std::string& name, const Json& fields) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return Internal("no early job '" + name + "' was started");
  if (!it->second.marks.checks || it->second.checking)
    return Internal("the early job '" + name + "' has no checks to be given");
  Job* early = &it->second;
  // A fresh early job in its place (once), checked instead, set up before its go.
  auto check_a_fresh_one = [this, &name, &fields]() {
    Job& fresh = Replace(name);
    WaitForMark(fresh.marks.Ready(), fresh.outcome, fresh.timeout_s);
    return Check(name, fields);
  };
  Status given = early->gone ? OkStatus() : GiveGo(name, *early, fields);
  if (given.ok()) given = GiveThen(name, *early);
  if (!given.ok()) {
    if (!early->go || early->replaced || !early->fresh_marks.checks) return given;
    LogWarn("the early job '" + name + "' could not be given its go: " + given.message());
    return check_a_fresh_one();  // an adopted job
  }
  early->gone = early->checking = true;
  std::error_code ec;
  WaitForMark(early->marks.Checked(), early->outcome, early->timeout_s);
  if (fs::exists(early->marks.Checked(), ec)) return true;
  if (early->outcome.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    early->killed = early->pid->load() > 0 && kill(early->pid->load(), SIGKILL) == 0;
    return false;
  }
  // It ended before its checks: one that gave up waiting before its go (a standby that idled out)
  // is replaced by a fresh early job; any other answers its end through Run.
  early->outcome.wait();
  if (early->replaced || !early->fresh_marks.checks) return false;
  // Its end is read here (a future answers once) and kept for Run.
  Result<JobOutcome> end = early->outcome.get();
  if (!end.ok() || end->ErrorKind() != "not_started") {
    std::promise<Result<JobOutcome>> kept;
    kept.set_value(std::move(end));
    early->outcome = kept.get_future();
    return false;
  }
  return check_a_fresh_one();
}

Result<JobOutcome> EarlyJobs::Run(const std::string& name, const Json& fields) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return Internal("no early job '" + name + "' was started");
  Job early = std::move(it->second);
  jobs_.erase(it);
  Status given_go;
  if (early.checking) {
    given_go = early.killed ? OkStatus() : GiveTime(name, early);
  } else {
    given_go = early.gone ? OkStatus() : GiveGo(name, early, fields);
    if (given_go.ok()) given_go = GiveThen(name, early);
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
  bool killed = early.killed;
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
