// served_job.cc — starting a served job, giving its gos, waiting for its answers, ending it.
#include "harness/served_job.h"

#include <signal.h>

#include <chrono>

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

// How often Await looks for the answer file (the job polls its go files as often: go.py).
constexpr std::chrono::milliseconds kPoll{2};
// How long a job told to stop now may take to see `stop` before it is killed.
constexpr std::chrono::milliseconds kStopGrace{100};
// How long a kept job's round may take to end after `stop` (its cleanup and a look at the device,
// on a loaded host) before the job is killed: killing it loses the process for later rounds.
constexpr std::chrono::milliseconds kRoundStopGrace{3000};

// Answered: the answer file `path` when it holds a JSON object (it is written by a rename: whole).
std::optional<JobOutcome> Answered(const fs::path& path) {
  JobOutcome answer;
  answer.ReadResult(path);
  if (!answer.has_result) return std::nullopt;
  return answer;
}

}  // namespace

ServedJob::ServedJob(fs::path answers, fs::path signals, std::vector<std::string> requests)
    : answers_(std::move(answers)), signals_(std::move(signals)), requests_(std::move(requests)) {}

Json ServedJob::ServeSpec(double wait_s) const {
  return {{"answers_dir", answers_.string()},
          {"go_dir", signals_.string()},
          {"stop", StopFile().string()},
          {"timeout_s", wait_s},
          {"requests", requests_}};
}

Json ServedJob::WaitForGo(double wait_s) const {
  return {{"go", GoFile(requests_.front()).string()},
          {"stop", StopFile().string()},
          {"timeout_s", wait_s},
          {"ready", ReadyMark().string()}};
}

double ServedJob::WaitReady(double max_s) const {
  if (ended_) return 0;
  return WaitForMark(ReadyMark(), outcome_, max_s);
}

void ServedJob::Start(std::function<Result<JobOutcome>(std::atomic<pid_t>*)> run) {
  asked_[requests_.front()] = Clock::now();
  outcome_ = std::async(std::launch::async, [run = std::move(run), pid = pid_]() {
               return run(pid.get());
             }).share();
}

void ServedJob::Attach(const SharedJobProcess& process, fs::path round_end) {
  asked_[requests_.front()] = Clock::now();
  outcome_ = process.outcome;
  pid_ = process.pid;
  round_end_ = std::move(round_end);
  round_isolation_ = process.isolation;
}

std::optional<JobOutcome> ServedJob::RoundEnded() const {
  if (round_end_.empty()) return std::nullopt;
  return Answered(round_end_);
}

bool ServedJob::Over(std::chrono::milliseconds wait) {
  if (ended_) return true;
  if (RoundEnded()) return true;
  return outcome_.wait_for(wait) == std::future_status::ready;
}

Status ServedJob::Go(const std::string& name, const Json& fields) {
  if (!outcome_.valid() && !ended_) return Internal("the served job was never started");
  asked_[name] = Clock::now();
  return WriteFileAtomic(GoFile(name), fields.dump() + "\n");
}

Result<JobOutcome> ServedJob::Await(const std::string& name, double timeout_s) {
  if (!outcome_.valid() && !ended_) return Internal("the served job was never started");
  auto asked = asked_.find(name);
  if (asked == asked_.end()) return Internal("the served job was never asked '" + name + "'");
  const auto deadline = asked->second + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(timeout_s));
  const fs::path file = AnswerFile(name);
  while (true) {
    if (std::optional<JobOutcome> answer = Answered(file)) return *answer;
    if (Over(kPoll)) {
      if (std::optional<JobOutcome> answer = Answered(file)) return *answer;  // its last act
      Result<JobOutcome> end = Ended();
      if (end.ok() && end->Ok()) {
        end->result["ok"] = false;
        end->result["error_kind"] = "internal";
        end->result["reason"] = "the served job ended without answering '" + name + "'";
      }
      return end;
    }
    if (Clock::now() >= deadline) {
      Kill();
      Result<JobOutcome> end = Ended();
      if (end.ok()) end->process.timed_out = true;
      return end;
    }
  }
}

Result<JobOutcome> ServedJob::End(bool now) {
  if (ended_) return *ended_;
  if (!outcome_.valid()) return Internal("the served job was never started");
  (void)WriteFileAtomic(StopFile(), "stop\n");  // a job that cannot see it is killed below
  if (now) {
    const auto grace = round_end_.empty() ? kStopGrace : kRoundStopGrace;
    const auto deadline = Clock::now() + grace;
    while (!Over(kPoll) && Clock::now() < deadline) {
    }
    if (!Over(std::chrono::milliseconds(0))) Kill();
  }
  return Ended();
}

const Result<JobOutcome>& ServedJob::Ended() {
  while (!ended_) {
    // The process's end is looked at first: a round end it wrote as its last act still counts.
    const bool process_ended = outcome_.wait_for(kPoll) == std::future_status::ready;
    if (std::optional<JobOutcome> end = RoundEnded()) {
      end->isolation = round_isolation_;
      ended_ = *end;
    } else if (process_ended) {
      ended_ = outcome_.get();
    }
  }
  return *ended_;
}

void ServedJob::Kill() {
  if (pid_->load() > 0) kill(pid_->load(), SIGKILL);
  outcome_.wait();
}

}  // namespace cuda_agent
