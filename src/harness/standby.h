// standby.h — standby jobs: an early job (harness/early_jobs.h) started for a *later* judgement and
// kept by the fork server until a judgement whose job has the same key claims it. What makes a
// profile job slow to start — a CUDA context and seconds of kineto/CUPTI set-up in every fresh
// process — is then done before the judgement that needs it has begun.
//
// A jailed job's binds are fixed at its fork, so a standby is jailed over folders of its own
// (<root>/standby-XXXX/): `in/` (read-only; at the go the claimer hard-links the judgement's inputs
// there, or copies them), `out/` (writable; its files are moved to the judgement's folder after the
// job), `job/` (writable: spec, result, output streams, the ready mark and the go file — the go
// carries the judgement's secrets, so the job deletes it once read, before any candidate code runs)
// and `signals/` (read-only: `stop`). The judge that offers a standby makes its cgroup; the one
// that claims it settles and removes it; one never claimed is removed by the fork server when it
// gives up waiting.
//
//   StandbyJob job{"profile", pre_go_spec, box};          // box: without per-judgement folders
//   Result<std::shared_ptr<Standby>> s = Standby::Claim(env, job);   // null: none waited
//   (void)OfferStandby(env, job, cache_dir / "standby", 300, 4);     // for a later judgement
//   s->Go(spec, {src, build, shared, task_file}, spot_dir, {src, build});  ...  s->Then();
//   s->Wait(600);
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"
#include "harness/early_jobs.h"
#include "harness/fork_server.h"
#include "sandbox/sandbox.h"

namespace cuda_agent {

// StandbyJob: what a standby fixes at its fork. `spec` holds only the fields the job reads before
// its go; `box` the sandbox without the judgement's own folders.
struct StandbyJob {
  std::string job;
  Json spec;
  JobSandbox box;
};

// StandbyKey: a hash of everything a standby fixed at its fork (job, spec, environment, sandbox
// policy, interpreter); a judgement claims only a standby of an equal key.
std::string StandbyKey(const HarnessEnv& env, const StandbyJob& job);

// OfferStandby starts `job` as a standby in a folder of its own under `root` (on the same file
// system as the judgements' folders, so that inputs are hard-linked): it waits up to `wait_s` for a
// claim. True when it waits; false when the fork server declined (`max_waiting` wait under the key
// already); an error when there is no fork server that can run it.
Result<bool> OfferStandby(const HarnessEnv& env, const StandbyJob& job, const fs::path& root,
                          double wait_s, int max_waiting);

// OfferContained offers `request` (whose spec, at `spec_path`, makes the job wait for a go; its
// output files named) as a standby under `offer`, jailed by `policy` (the job's own folders
// added; working folder `cwd`) when `job.box` contains: the cgroup's folders join offer.cleanup,
// and offer.record says how the job is contained (ContainmentFromRecord reads it back). False when
// the server declined; an error when no fork server can run it.
Result<bool> OfferContained(const HarnessEnv& env, const StandbyJob& job,
                            const SandboxPolicy& policy, const fs::path& spec_path,
                            const fs::path& cwd, ForkServerJob request, StandbyOffer offer);

// ContainmentFromRecord: the containment (isolation, cgroup) an offer's record describes, for the
// client that claimed the job: it settles and removes the cgroup.
JobContainment ContainmentFromRecord(const Json& record);

// Standby: a standby this judgement claimed. Destroying it kills the job if it still runs, settles
// its cgroup and removes its folder.
class Standby {
 public:
  // Claim takes the oldest standby waiting for `job`'s key; null when none waits (or there is no
  // fork server).
  static Result<std::shared_ptr<Standby>> Claim(const HarnessEnv& env, const StandbyJob& job);
  ~Standby();
  Standby(const Standby&) = delete;
  Standby& operator=(const Standby&) = delete;

  pid_t pid() const { return claimed_.pid(); }
  // WaitedSeconds: how long it waited for its claim.
  double WaitedSeconds() const { return claimed_.WaitedSeconds(); }
  // Marks: where the job marks its set-up done (a standby claimed early may still be starting its
  // profiler) and, after its go, its trusted preparation (go.py, "then").
  EarlyMarks Marks() const;

  // Go hard-links (or copies) each of `readable` (folders or files) into in/, rewrites every path
  // of `spec` under them — and under `writable` — to its place in the standby's folders, and gives
  // the go with that spec (without wait_for and result_path). Those of `readable` also in
  // `at_then` are linked by Then instead: what the job reads only after its second go (the
  // candidate's sources and build), which may still be being written at the first.
  Status Go(const Json& spec, const std::vector<fs::path>& readable, const fs::path& writable,
            const std::vector<fs::path>& at_then = {});
  // Then links Go's `at_then` folders and gives the second go: after it the job loads the
  // candidate's code.
  Status Then();
  // Time gives the third go of a job that checked the candidate after Then (go.py, "time"): it
  // times it now. In the standby's signals folder, which the job cannot write.
  Status Time();
  // Wait waits for the job's end (at most `timeout_s`, then kills it), moves out/'s files into
  // the go's `writable` folder and rewrites the result's paths to match. A job that ended without
  // reading its go reports error_kind "not_started" (nothing of the judgement ran in it).
  Result<JobOutcome> Wait(double timeout_s);

 private:
  Standby(ClaimedJob claimed, const StandbyJob& job);

  ClaimedJob claimed_;
  fs::path dir_;
  bool jailed_ = false;
  JobContainment containment_;  // the cgroup and the protected files' fingerprints
  fs::path writable_;           // the go's writable folder (out/ maps to it)
  std::vector<std::pair<fs::path, fs::path>> at_then_;  // Go's `at_then`: from, to (in in/)
};

}  // namespace cuda_agent
