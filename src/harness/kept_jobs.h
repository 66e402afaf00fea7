// kept_jobs.h — kept jobs: a served job (harness/served_job.h) whose process outlives the
// judgement that started it and serves the later judgements of the same key, one round each. It
// waits between rounds in the fork server as a standby (harness/standby.h) that each round's
// claimer hands back (ClaimedJob::SendRelease); the server ends one that waited `idle_s`
// unclaimed. The judge keeps its reference job so (stages/reference.cc): a host's CUDA process
// starts and ends queue host-wide in the driver (docs/benchmarks.md), and the judgements of one
// task — an RL step judges each task's samples together — then share reference processes instead
// of starting one each.
//
// A jailed job's binds are fixed at its fork, so a kept job works in folders of its own,
// <root>/kept-XXXX/: `in/` (read-only: what it was started with, e.g. the task), `rounds/<r>/`
// (writable: round r's answers — its `ready` mark, its answers, `round_end.json` — and what the
// round writes), `signals/<r>/` (read-only: round r's go and stop files, and the files a go names,
// linked there by the claimer), `signals/stop` (ends it between rounds), `signals/next_round`
// (written by the claimer that hands it back: the round the next claimer serves) and `job/` (its
// spec, result and output streams). The job makes rounds/<r+1>/ itself before it waits for that
// round; the claimer removes a round's folders after the round.
//
//   Result<std::unique_ptr<KeptJob>> k = KeptJob::Take(env, job, cache / "kept", options);
//   ServedJob served(k->Answers(), k->Signals(), {"reference", "compare"});
//   served.Attach(k->Process(), k->RoundEnd());      // instead of Start
//   served.Go("reference", {{"round", fields}}); ...  // the round's own spec fields
//   Result<JobOutcome> end = served.End(true);
//   k->Finish(end);                                  // handed back when the round says it may be
#pragma once

#include <sys/types.h>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"
#include "harness/fork_server.h"
#include "harness/served_job.h"
#include "harness/standby.h"

namespace cuda_agent {

struct KeptJobOptions {
  std::string first_request;  // the served job's first request (its go file: go_<name>)
  std::string identity;  // part of the key: what the spec only names by path (the task's content)
  // Files the job reads in every round: each is copied into in/ and the spec field named gets its
  // path there.
  std::vector<std::pair<std::string, fs::path>> in_files;
  double idle_s = 120;   // the fork server ends a kept job that waited this long unclaimed
  int max_rounds = 200;  // rounds one process serves before it ends
  int max_waiting = 16;  // kept jobs of one key that wait at once (more end after a round)
  // Kept jobs of any key that share what they hold (a GPU's memory): at most `group_max` of the
  // group wait at once; the longest-waiting ends when another starts to wait (empty: no group).
  std::string group;
  int group_max = 8;
  double round_timeout_s = 3600;  // one round's claim, from its claim to its end, at most
};

class KeptJob {
 public:
  // Take claims a kept job of `job`'s key (KeptJobKey with options.identity) waiting in the fork
  // server, or offers a new one there (folders under `root`, on the file system of the judgements'
  // folders) and claims it. `job.spec` holds the fields every round shares; `job.box` contains the
  // job without the kept job's folders. Null when no fork server can run it, or another client
  // claimed the new one first: the caller then runs a job of its own.
  static Result<std::unique_ptr<KeptJob>> Take(const HarnessEnv& env, const StandbyJob& job,
                                               const fs::path& root, const KeptJobOptions& options);
  // Not handed back (Finish not called, or the round said no): killed, its folders removed.
  ~KeptJob();
  KeptJob(const KeptJob&) = delete;
  KeptJob& operator=(const KeptJob&) = delete;

  int round() const { return round_; }
  // WaitedSeconds: how long it waited for this claim (0 for a job this claim started).
  double WaitedSeconds() const { return round_ == 0 ? 0 : claimed_.WaitedSeconds(); }
  fs::path RoundDir() const { return dir_ / "rounds" / std::to_string(round_); }
  fs::path Answers() const { return RoundDir() / "answers"; }
  fs::path RoundEnd() const { return Answers() / "round_end.json"; }
  fs::path Signals() const { return dir_ / "signals" / std::to_string(round_); }
  // Process: the job's process as this round sees it (ServedJob::Attach).
  SharedJobProcess Process() const { return process_; }
  // Finish ends this claim after the round's end `end` (ServedJob::End): the round's folders are
  // removed and, when the round says the job may serve another and it still runs, the job is
  // handed back to the fork server for the next claim; otherwise it ends. Returns whether it was
  // handed back.
  bool Finish(const Result<JobOutcome>& end);

 private:
  KeptJob(ClaimedJob claimed, fs::path dir, double round_timeout_s);
  void RemoveRound() const;

  ClaimedJob claimed_;
  fs::path dir_;
  int round_;
  JobContainment containment_;  // from the offer's record: the cgroup, removed when the job ends
  SharedJobProcess process_;
  std::thread waiter_;  // waits for the job's end or its release: process_.outcome
  std::shared_ptr<std::atomic<bool>> released_ = std::make_shared<std::atomic<bool>>(false);
  bool handed_back_ = false;
};

// KeptJobKey: what a kept job fixed at its start (as StandbyKey), under which later judgements
// find it; `identity` adds what the spec only names by path (the task's content).
std::string KeptJobKey(const HarnessEnv& env, const StandbyJob& job, const std::string& identity);

}  // namespace cuda_agent
