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
// gives), before which it runs no candidate code. A job that also `checks` runs the candidate's
// checks after `then` (Check gives it and waits for the `checked` mark) and waits for a third go
// (`time`, which Run then gives) before it times the candidate: one process for both.
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
// marks nothing), whether it prepares before a second go (go.py, "then"), and whether after that
// go it checks the candidate before a third (go.py, "time"): then `out` is the folder its output
// files are in while it runs.
struct EarlyMarks {
  fs::path dir;
  bool prepares = false;
  bool checks = false;
  fs::path out{};
  fs::path Ready() const { return dir / "ready"; }
  fs::path Prepared() const { return dir / "prepared"; }
  fs::path Checked() const { return dir / "checked"; }
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
  // go (Run's or Prepare's fields), `then` its second go (none: it has one), `time` its third
  // (none: it checks nothing), `outcome` is its end, `pid` its process, `marks` where it marks its
  // progress.
  struct AdoptedJob {
    std::function<Status(const Json&)> go;
    std::function<Status()> then;
    std::function<Status()> time;
    std::future<Result<JobOutcome>> outcome;
    pid_t pid = 0;
    EarlyMarks marks;
  };
  // Adopt makes `adopted` the early job `name`; `spec`, `box` and `fresh_marks` are those a fresh
  // job gets if a go fails or the job gave up waiting.
  void Adopt(const std::string& name, const std::string& job, const Json& spec,
             const JobSandbox& box, double timeout_s, AdoptedJob adopted,
             const EarlyMarks& fresh_marks = {});
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
  // Check gives a job that checks before it is timed (EarlyMarks::checks) its gos up to its
  // checks — Prepare's, with `fields`, unless given, and `then` — and waits until it has marked
  // them done or has ended, at most its time limit. True when marked: Run then gives its last go.
  // False when it ended or ran out of time (killed): Run then answers its end. A job that ended
  // before its go, or whose go failed, is replaced by a fresh early job, which is checked instead.
  Result<bool> Check(const std::string& name, const Json& fields);
  // Outputs: the folder where the early job `name` has its output files while it runs (its marks'
  // `out`; empty for none).
  fs::path Outputs(const std::string& name) const;
  // Run gives the job `name` its go (unless Prepare gave it: `fields` then serve only a fresh
  // run), with the spec fields known only now (`fields`), and its second go if it has one — or,
  // after Check, its third — and waits for it: its time limit counts from the last go (a job
  // still running then is killed and reported as timed out). A job that gave up waiting
  // ("not_started") is replaced by a fresh run.
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
    EarlyMarks fresh_marks;        // what a fresh early job in its place marks
    std::function<Status()> time;  // an adopted job's third go; none: the time file
    bool gone = false;             // Prepare (or Check) gave its first go
    bool checking = false;         // Check gave its second go
    bool killed = false;           // Check killed it: it ran out of time
    bool replaced = false;         // a fresh job took an earlier one's place
  };

  fs::path GoFile(const std::string& name) const { return signals_ / ("go_" + name); }
  fs::path ThenFile(const std::string& name) const { return signals_ / ("then_" + name); }
  fs::path TimeFile(const std::string& name) const { return signals_ / ("time_" + name); }
  // GiveGo gives the job its first go (`fields`); GiveThen its second.
  Status GiveGo(const std::string& name, Job& early, const Json& fields) const;
  Status GiveThen(const std::string& name, Job& early) const;
  Status GiveTime(const std::string& name, Job& early) const;
  // Replace ends the job `name` and starts a fresh early job in its place (Check's).
  Job& Replace(const std::string& name);
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
