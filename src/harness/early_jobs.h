// early_jobs.h — harness jobs started before their inputs exist. An early job
// (python/cuda_agent_harness/go.py) forks, enters its jail and initialises CUDA (a profile job also
// starts its profiler: seconds of kineto/CUPTI start-up; a compile baseline imports dynamo and
// inductor), then waits for its go file, so that all of this overlaps other work (the judge's
// build). Run gives the go with the spec fields known only then; a caller that stops earlier calls
// the rest off (CallOff, also on destruction): `stop` ends the jobs that wait, and one still
// setting up is killed, so that the caller answers at once.
//
// A job given a folder for its marks (one it may write) creates `ready` there when its set-up is
// done: WaitReady lets the caller take the device lease for the job's work only then, not while
// the job still forks and starts CUDA. A job that `prepares` has two gos: after the first (Prepare)
// it does its trusted preparation, creates `prepared` and waits for the second (`then`, which Run
// gives), before which it runs no candidate code.
//
//   EarlyJobs early(work / "signals", 600, run_job);
//   early.Start("candidate", "candidate", spec, box, 180, {work / "outputs"});
//   ...                                   // the build
//   early.WaitReady("candidate");         // then the lease
//   Result<JobOutcome> out = early.Run("candidate", {{"input_scales", scales}});
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"

namespace cuda_agent {

// JobRunner runs one harness job to its end (RunHarnessJob, plus whatever the caller records about
// it): `name` labels the run, `job` is the harness job; `pid`, when given, receives the job's pid
// while it runs.
using JobRunner = std::function<Result<JobOutcome>(const std::string& name, const std::string& job,
                                                   const Json& spec, double timeout_s,
                                                   const JobSandbox* box, std::atomic<pid_t>* pid)>;

// WaitForMark waits until the file `mark` exists or the job whose end is `outcome` has ended (an
// invalid future: at once), at most `max_s`; returns the seconds waited.
double WaitForMark(const fs::path& mark, const std::future<Result<JobOutcome>>& outcome,
                   double max_s);
double WaitForMark(const fs::path& mark, const std::shared_future<Result<JobOutcome>>& outcome,
                   double max_s);

// EarlyMarks: where an early job marks its progress (`dir`, a folder it may write; empty: it
// marks nothing), and whether it prepares before a second go (go.py, "then").
struct EarlyMarks {
  fs::path dir;
  bool prepares = false;
  fs::path Ready() const { return dir / "ready"; }
  fs::path Prepared() const { return dir / "prepared"; }
};

class EarlyJobs {
 public:
  // `signals` holds the go and stop files (bound read-only into every early job's sandbox);
  // `wait_s` is how long a job waits for its go before it gives up ("not_started").
  EarlyJobs(fs::path signals, double wait_s, JobRunner run);
  ~EarlyJobs() { CallOff(); }
  EarlyJobs(const EarlyJobs&) = delete;
  EarlyJobs& operator=(const EarlyJobs&) = delete;

  // Start starts the early job `name` unless one of that name waits already. `timeout_s` limits
  // the work after the (last) go.
  void Start(const std::string& name, const std::string& job, const Json& spec,
             const JobSandbox& box, double timeout_s, const EarlyMarks& marks = {});
  // AdoptedJob: a job started elsewhere (a claimed standby, harness/standby.h). `go` gives it its
  // go (Run's or Prepare's fields), `then` its second go (none: it has one), `outcome` is its end,
  // `pid` its process, `marks` where it marks its progress.
  struct AdoptedJob {
    std::function<Status(const Json&)> go;
    std::function<Status()> then;
    std::future<Result<JobOutcome>> outcome;
    pid_t pid = 0;
    EarlyMarks marks;
  };
  // Adopt makes `adopted` the early job `name`; `spec` and `box` are those a fresh run gets if a
  // go fails or the job gave up waiting.
  void Adopt(const std::string& name, const std::string& job, const Json& spec,
             const JobSandbox& box, double timeout_s, AdoptedJob adopted);
  // Started: a job of that name waits for its (last) go.
  bool Started(const std::string& name) const { return jobs_.count(name) > 0; }
  // Ready: the job `name` has marked its set-up done (false for one that marks nothing).
  bool Ready(const std::string& name) const;
  // WaitReady waits until the job `name` has done its set-up (its `ready` mark exists) or has
  // ended, at most its time limit (a set-up that slow is a timeout once it has its go); at once
  // for a job that marks nothing, or none of that name. Returns the seconds waited.
  double WaitReady(const std::string& name) const;
  // Prepare gives a job that prepares, and is ready, its first go (with `fields`); Run gives the
  // second. False (and nothing given) for any other job: Run then gives both gos at once.
  bool Prepare(const std::string& name, const Json& fields = Json::object());
  // WaitPrepared waits until a job given Prepare's go has marked its preparation done, or has
  // ended, at most its time limit; at once for any other. Returns the seconds waited.
  double WaitPrepared(const std::string& name) const;
  // Run gives the job `name` its go (unless Prepare gave it: `fields` then serve only a fresh
  // run), with the spec fields known only now (`fields`), and its second go if it has one, and
  // waits for it: its time limit counts from the last go (a job still running then is killed and
  // reported as timed out). A job that gave up waiting ("not_started") is replaced by a fresh run.
  Result<JobOutcome> Run(const std::string& name, const Json& fields = Json::object());
  // CallOff ends every job that has not had its go.
  void CallOff();

 private:
  struct Job {
    std::string job;
    Json spec;         // without "wait_for": what a fresh run gets
    JobSandbox box;    // without the signals folder
    double timeout_s;  // of the work after the go
    std::future<Result<JobOutcome>> outcome;
    std::shared_ptr<std::atomic<pid_t>> pid = std::make_shared<std::atomic<pid_t>>(0);
    std::function<Status(const Json&)> go;  // an adopted job's go; none: the go file
    std::function<Status()> then;           // an adopted job's second go; none: the then file
    EarlyMarks marks;
    bool gone = false;  // Prepare gave its first go
  };

  fs::path GoFile(const std::string& name) const { return signals_ / ("go_" + name); }
  fs::path ThenFile(const std::string& name) const { return signals_ / ("then_" + name); }
  // GiveGo gives the job its first go (`fields`); GiveThen its second.
  Status GiveGo(const std::string& name, Job& early, const Json& fields) const;
  Status GiveThen(const std::string& name, Job& early) const;
  // Fresh: the record of the job `name`, new (no outcome yet).
  Job& Fresh(const std::string& name, const std::string& job, const Json& spec,
             const JobSandbox& box, double timeout_s);
  // CallOff(name) ends the job `name` if one waits; End ends one job (its stop file already
  // written, or none: killed after a short grace).
  void CallOff(const std::string& name);
  static void End(Job& early);

  fs::path signals_;
  double wait_s_;
  JobRunner run_;
  std::map<std::string, Job> jobs_;  // by name: started, not yet given their last go
};

}  // namespace cuda_agent
