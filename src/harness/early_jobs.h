// early_jobs.h — harness jobs started before their inputs exist. An early job
// (python/cuda_agent_harness/go.py) forks, enters its jail and initialises CUDA (a profile job also
// starts its profiler: seconds of kineto/CUPTI start-up; a compile baseline imports dynamo and
// inductor), then waits for its go file, so that all of this overlaps other work (the judge's
// build). Run gives the go with the spec fields known only then; a caller that stops earlier calls
// the rest off (CallOff, also on destruction): `stop` ends the jobs that wait, and one still
// setting up is killed, so that the caller answers at once.
//
//   EarlyJobs early(work / "signals", 600, run_job);
//   early.Start("candidate", "candidate", spec, box, 180);
//   ...                                   // the build
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

class EarlyJobs {
 public:
  // `signals` holds the go and stop files (bound read-only into every early job's sandbox);
  // `wait_s` is how long a job waits for its go before it gives up ("not_started").
  EarlyJobs(fs::path signals, double wait_s, JobRunner run);
  ~EarlyJobs() { CallOff(); }
  EarlyJobs(const EarlyJobs&) = delete;
  EarlyJobs& operator=(const EarlyJobs&) = delete;

  // Start starts the early job `name` unless one of that name waits already. `timeout_s` limits
  // the work after the go.
  void Start(const std::string& name, const std::string& job, const Json& spec,
             const JobSandbox& box, double timeout_s);
  // Adopt makes a job started elsewhere (a claimed standby, harness/standby.h) the early job
  // `name`: `go` gives it its go (Run's fields), `outcome` is its end, `pid` its process. `spec`
  // and `box` are those a fresh run gets if the go fails or the job gave up waiting.
  void Adopt(const std::string& name, const std::string& job, const Json& spec,
             const JobSandbox& box, double timeout_s, std::function<Status(const Json&)> go,
             std::future<Result<JobOutcome>> outcome, pid_t pid);
  // Started: a job of that name waits for its go.
  bool Started(const std::string& name) const { return jobs_.count(name) > 0; }
  // Run gives the job `name` its go, with the spec fields known only now (`fields`), and waits for
  // it: its time limit counts from the go (a job still running then is killed and reported as
  // timed out). A job that gave up waiting ("not_started") is replaced by a fresh run.
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
  };

  fs::path GoFile(const std::string& name) const { return signals_ / ("go_" + name); }
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
  std::map<std::string, Job> jobs_;  // by name: started, not yet given their go
};

}  // namespace cuda_agent
