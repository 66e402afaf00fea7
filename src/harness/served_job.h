// served_job.h — a harness job that answers more than once (python/cuda_agent_harness/serving.py;
// docs/harness-protocol.md "Served jobs"). It runs on a thread of its own; it writes its first
// answer when its main work is done, and one answer per later request after the go the caller gives
// it, into `answers/<request>.json`; `stop` ends it. The judge's reference job is one: it answers
// "reference", then the verification's and the spot checks' comparisons, with the expected outputs
// still in its memory.
//
//   ServedJob served(work / "answers", work / "served", {"reference", "compare"});
//   spec["serve"] = served.ServeSpec(600);
//   served.Start([&](std::atomic<pid_t>* pid) { return RunHarnessJob(..., pid); });
//   Result<JobOutcome> ref = served.Await("reference", 300);   // the answer, or the job's end
//   served.Go("compare", {{"expected_keys", keys}, {"actual_paths", paths}});
//   Result<JobOutcome> cmp = served.Await("compare", 300);
//   Result<JobOutcome> end = served.End();
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"
#include "harness/early_jobs.h"

namespace cuda_agent {

// SharedJobProcess: a served job's process as the rounds of a kept job see it
// (harness/kept_jobs.h): its end and its pid.
struct SharedJobProcess {
  std::shared_future<Result<JobOutcome>> outcome;
  std::shared_ptr<std::atomic<pid_t>> pid = std::make_shared<std::atomic<pid_t>>(0);
  Isolation isolation = Isolation::kNone;  // how the process is contained
};

class ServedJob {
 public:
  // `answers`: where the job writes its answers (writable for it, for no other job); `signals`:
  // a folder of its own where its go files and its stop file are written (readable for it);
  // `requests`: the names it answers, in order.
  ServedJob(fs::path answers, fs::path signals, std::vector<std::string> requests);
  ~ServedJob() { (void)End(/*now=*/true); }
  ServedJob(const ServedJob&) = delete;
  ServedJob& operator=(const ServedJob&) = delete;

  // ServeSpec: the spec's "serve" section; `wait_s` is how long the job waits for each go.
  Json ServeSpec(double wait_s) const;
  // WaitForGo: the spec's "wait_for" section (go.py) for a job that also waits for a go before its
  // main work (an early job): the first request's go file, the stop file and its ready mark.
  Json WaitForGo(double wait_s) const;
  // WaitReady waits until such a job has done its set-up (its ready mark exists) or has ended, at
  // most `max_s`: a caller that holds a device lease for the job's work takes it only then.
  // Returns the seconds waited.
  double WaitReady(double max_s) const;
  // Start runs the job on a thread of its own: `run` runs it to its end, its pid into `pid`. The
  // first request counts as asked from now (or from its Go, for a job that waits for a go before
  // its main work: an early job, harness/early_jobs.h).
  void Start(std::function<Result<JobOutcome>(std::atomic<pid_t>* pid)> run);
  // Attach, instead of Start, makes this a round of a kept job (harness/kept_jobs.h) whose process
  // runs already: the round ends when the job writes `round_end` (End returns it) or when the
  // process ends.
  void Attach(const SharedJobProcess& process, fs::path round_end);
  // Go asks the request `name` (its go file holds `fields`, spec fields of the request).
  Status Go(const std::string& name, const Json& fields);
  // Await waits for the answer to `name`, at most `timeout_s` from when it was asked. The answer
  // (has_result, `result` the answer object); or the job's end when it ended first (its final
  // result marked failed when it says ok: it did not answer); or, after the timeout, the job
  // killed (process.timed_out).
  Result<JobOutcome> Await(const std::string& name, double timeout_s);
  // End: no more requests; waits for the job's end (with `now`, killing it after a short grace)
  // and returns it. An error Status when it never started.
  Result<JobOutcome> End(bool now = false);

 private:
  fs::path AnswerFile(const std::string& name) const { return answers_ / (name + ".json"); }
  fs::path GoFile(const std::string& name) const { return signals_ / ("go_" + name); }
  fs::path StopFile() const { return signals_ / "stop"; }
  fs::path ReadyMark() const { return EarlyMarks{answers_}.Ready(); }
  // Ended: the job's end (a round's: its round end), collected once (the job, or the round,
  // must have ended).
  const Result<JobOutcome>& Ended();
  // Over: the job (a round: the round or its process) has ended.
  bool Over(std::chrono::milliseconds wait);
  std::optional<JobOutcome> RoundEnded() const;
  // Kill ends the job at once and waits for it.
  void Kill();

  fs::path answers_, signals_;
  std::vector<std::string> requests_;
  std::map<std::string, std::chrono::steady_clock::time_point> asked_;
  std::shared_future<Result<JobOutcome>> outcome_;
  std::optional<Result<JobOutcome>> ended_;
  std::shared_ptr<std::atomic<pid_t>> pid_ = std::make_shared<std::atomic<pid_t>>(0);
  fs::path round_end_;  // a kept job's round: where it writes the round's end
  Isolation round_isolation_ = Isolation::kNone;
};

}  // namespace cuda_agent
