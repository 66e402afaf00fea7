// reference.cc — the reference job: the trusted process that runs the task's Model on inputs made
// from secret seeds (each check's floating inputs scaled and shifted), writes the init inputs and
// weights the candidate gets and the expected outputs it never sees, and (for a full judgement)
// the expected outputs of the spot-checked timed calls. It needs no build, so it runs while the
// candidate compiles. In a judgement of a candidate it is served (harness/served_job.h): it keeps
// the expected outputs in memory and answers the verification's and the spot checks' comparisons
// itself (ServedCompare), so that a judgement creates one CUDA context fewer per comparison and
// writes and reads no expected output it keeps in memory (jobs/reference.py). For a candidate's
// judgement its thread also gives verification's candidate job (PrepareCandidate) and the
// candidate's profile job (PrepareProfileBesideTheBuild) their first gos under the same lease, once
// the reference has answered.
#include <algorithm>
#include <cstdlib>
#include <functional>

#include "common/hash.h"
#include "common/log.h"
#include "judge/stages/stages.h"

namespace cuda_agent {
namespace {

// InputTransforms: each check's floating inputs become x * scale + shift (HACKS B7, B9). Checks 3,
// 4 and 5 use x * 8, x / 8 and x * -1 where the task allows (the reference falls back where not):
// other magnitudes, and every sign flipped — negative values for tasks whose own inputs are all
// non-negative. No shift: it would break the inputs' structure (the zeros of a triangular or masked
// matrix) and add cancellation that an exact fp32 kernel fails under an absolute tolerance
// (docs/decisions/verification-inputs.md).
std::pair<Json, Json> InputTransforms(int checks) {
  Json scales = Json::array(), shifts = Json::array();
  for (int i = 0; i < checks; ++i) {
    scales.push_back(i == 2 ? 8.0 : i == 3 ? 0.125 : i == 4 ? -1.0 : 1.0);
    shifts.push_back(0.0);
  }
  return {scales, shifts};
}

// LeasedReference runs the reference (`run_job`) under the shared device lease and times it.
ReferenceRun LeasedReference(Judgement& j, const std::function<void(ReferenceRun&)>& run_job) {
  ReferenceRun run;
  auto t = Clock::now();
  Result<DeviceLease> lease = j.Lease(LeaseMode::kShared, "reference");
  if (!lease.ok()) {
    run.job = lease.status();
    return run;
  }
  run_job(run);
  run.seconds = SecondsSince(t);
  return run;
}

// ServeKeptReference makes the judgement's served reference a round of a kept reference job of
// its task (harness/kept_jobs.h): one waiting in the fork server, claimed, or a new one. Null when
// none can be had — switched off (--keep-reference off), a sandbox of the caller's (a
// kept job outlives the judgement, and so would its use of it), no fork server that can run it —
// and the judgement then runs a reference job of its own. `first_go` gets the round's own fields
// (`spec` less what every round of the job shares), given with its first go.
ServedJob* ServeKeptReference(Judgement& j, const Json& spec,
                              const std::vector<std::string>& requests, double wait_s,
                              double lifetime_s, Json* first_go) {
  const JudgeOptions& opt = j.options();
  if (!opt.keep_reference || opt.sandbox != nullptr) return nullptr;
  Result<std::string> task = ReadFile(j.dirs().task_file);
  if (!task.ok()) return nullptr;
  const Json shared = {{"device", spec["device"]},
                       {"backend_flags", spec["backend_flags"]},
                       {"tolerance", opt.policy.Tolerance()}};
  KeptJobOptions o;
  o.first_request = requests.front();
  // The task's content, and the device it runs on (as the device lease names it).
  o.identity = Sha256Hex(task.value()) + "|" + LeaseKey(opt.device);
  o.in_files = {{"task_path", j.dirs().task_file}};
  o.idle_s = opt.keep_reference_idle_s;
  // Whatever their tasks, a device's waiting references share its memory: the least recently
  // used ends when another would make more than the maximum wait.
  o.group = "reference|" + LeaseKey(opt.device);
  o.group_max = opt.keep_reference_max;
  o.round_timeout_s = lifetime_s;
  Result<std::unique_ptr<KeptJob>> kept =
      KeptJob::Take(j.env(), StandbyJob{"reference", shared, j.ContainUntimed({}, {})},
                    j.cache_dir() / "kept", o);
  if (!kept.ok()) {
    // A fork server that cannot run it (no working jail, no CUDA in its children) is the host's
    // state, said where the fork server starts; anything else is worth a line.
    if (kept.status().code() != StatusCode::kFailedPrecondition)
      LogWarn("no kept reference job (" + kept.status().message() +
              "): the judgement runs its own");
    return nullptr;
  }
  if (!kept.value()) return nullptr;
  ServedJob& served = j.ServeKeptReference(std::move(kept).value(), requests);
  const KeptJob& k = *j.kept_reference();
  Json round = spec;
  for (const char* key : {"task_path", "device", "backend_flags"}) round.erase(key);
  round["data_dir"] = (k.RoundDir() / "shared").string();
  round["expected_dir"] = (k.RoundDir() / "private").string();
  round["serve"] = served.ServeSpec(wait_s);
  round["round_end_path"] = k.RoundEnd().string();
  *first_go = {{"round", round}};
  return &served;
}

}  // namespace

Status ShareRound(const KeptJob& kept, const fs::path& shared) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kept.RoundDir() / "shared", ec)) {
    if (Status s = LinkOrCopy(entry.path(), shared / entry.path().filename()); !s.ok()) return s;
  }
  if (ec) return Internal("cannot read the kept reference's shared files: " + ec.message());
  return OkStatus();
}

std::vector<std::string> StageForKeptReference(const KeptJob& kept, const std::string& request,
                                               const std::vector<std::string>& paths) {
  const fs::path dir = kept.Signals() / request;
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::vector<std::string> staged;
  for (size_t i = 0; i < paths.size(); ++i) {
    fs::path to = dir / (std::to_string(i) + "_" + fs::path(paths[i]).filename().string());
    // A file the candidate did not write stays missing: the comparison says so, as before.
    if (fs::exists(paths[i], ec)) (void)LinkOrCopy(paths[i], to);
    staged.push_back(to.string());
  }
  return staged;
}

std::future<ReferenceRun> StartReference(Judgement& j, int checks, bool timing, bool serve,
                                         ReferenceFor purpose) {
  const JudgeOptions& opt = j.options();
  const WorkDirs& dirs = j.dirs();
  j.result().stage = Stage::kVerify;
  std::vector<int64_t> seeds = SecretSeeds(checks + 2);
  const int64_t sampled_seed = seeds.back();
  seeds.pop_back();
  int64_t init_seed = seeds.back();
  seeds.pop_back();
  j.facts().sampled_seed = sampled_seed;
  j.facts().check_seeds = seeds;
  auto [scales, shifts] = InputTransforms(checks);
  Json spec = {{"task_path", dirs.task_file.string()},
               {"device", j.result().device},
               {"data_dir", dirs.shared.string()},
               {"expected_dir", dirs.expected_dir.string()},
               {"init_seed", init_seed},
               {"check_seeds", seeds},
               {"input_scales", scales},
               {"input_shifts", shifts},
               {"backend_flags", opt.policy.reference.ToJson()}};
  if (timing) {
    const TimingSecrets& secrets = j.Secrets();
    spec["timing"] = {{"seed", secrets.seed},
                      {"warmup", opt.warmup},
                      {"iters", opt.iters},
                      {"spot_check_calls", secrets.spot_calls}};
  }
  // Only a judgement that verifies needs the fingerprints (sampled_checks.py); the timed calls'
  // sets first where the candidate's one process also times (it fingerprints its calls).
  if (opt.sampled_checks > 0 && checks > 0) {
    spec["sampled_checks"] = {{"seed", sampled_seed},
                              {"count", opt.sampled_checks},
                              {"min_total", std::min(opt.sampled_checks, opt.sampled_min)},
                              {"seconds", opt.sampled_checks_seconds},
                              {"timed", timing && OneCandidateProcess(j)}};
  }
  if (!serve) {
    spec["tolerance"] = opt.policy.Tolerance();  // the sampled checks' bounds
    JobSandbox box = j.ContainUntimed({dirs.task_file}, {dirs.shared, dirs.expected_dir});
    return std::async(std::launch::async, [&j, spec, box]() {
      return LeasedReference(j, [&](ReferenceRun& run) {
        run.job = j.RunJob("reference", "reference", spec, j.options().trusted_timeout_s, &box);
      });
    });
  }
  std::vector<std::string> requests = {"reference", "compare"};
  if (timing) requests.push_back("compare_spots");
  const double wait_s = j.EarlyWaitSeconds();
  // The process lives until its last answer: every go it waits for, and the work of each.
  const double lifetime_s = static_cast<double>(requests.size()) * (wait_s + opt.trusted_timeout_s);
  const double started = j.Elapsed();
  const bool candidate = purpose == ReferenceFor::kCandidate;
  Json first_go = Json::object();  // a kept job's round gets its own fields with its first go
  ServedJob* kept_round =
      candidate ? ServeKeptReference(j, spec, requests, wait_s, lifetime_s, &first_go) : nullptr;
  if (kept_round == nullptr) {
    ServedJob& served = j.ServeReference(requests);
    spec["serve"] = served.ServeSpec(wait_s);
    spec["tolerance"] = opt.policy.Tolerance();
    // It reads the candidate's outputs (as the compare job did); no folder candidate code writes
    // into is writable for it.
    JobSandbox box =
        j.ContainUntimed({dirs.task_file, dirs.served, dirs.outputs, dirs.spot_candidate},
                         {dirs.shared, dirs.expected_dir, dirs.answers});
    // An early job too: its process and CUDA context (seconds when a host's judgements queue for
    // context creation) come before the lease, which covers its work on the GPU from its go on:
    // the lease is taken once the job has marked itself ready.
    spec["wait_for"] = served.WaitForGo(wait_s);
    served.Start([&j, spec, box, lifetime_s](std::atomic<pid_t>* pid) {
      return RunHarnessJob(j.env(), "reference", spec, j.dirs().jobs, lifetime_s, &box, pid);
    });
  }
  ServedJob& served = *j.served_reference();
  // Started here, before the thread below exists: that thread gives it its first go.
  if (candidate && !OneCandidateProcess(j)) StartVerifyJobs(j);
  return std::async(std::launch::async, [&j, &served, started, candidate, first_go]() {
    // The shared lease covers the job's work from its go, not its start-up (1.5–2.8 s under load,
    // which would hold every other judgement's timing off the device).
    double ready_wait_s = served.WaitReady(j.options().trusted_timeout_s);
    // The candidate job, started with it, gets its first go under this lease (PrepareCandidate),
    // which must not wait for its start-up either.
    if (candidate) ready_wait_s += j.early().WaitReady("candidate");
    // Alone on the device, the candidate's profile job prepares under this lease too.
    const bool alone = candidate && DeviceIdle(LeaseKey(j.options().device));
    ReferenceRun leased = LeasedReference(j, [&](ReferenceRun& run) {
      if (Status go = served.Go("reference", first_go); !go.ok()) {
        run.job = go;
        return;
      }
      run.job = served.Await("reference", j.options().trusted_timeout_s);
      Json extra = {{"served", true}};
      if (KeptJob* kept = j.kept_reference()) {
        extra["kept_round"] = kept->round();
        extra["kept_waited_s"] = kept->WaitedSeconds();
        // What the candidate's jobs read (its init inputs and weights) goes to the judgement's
        // shared folder, where their sandboxes see it.
        if (run.job.ok() && run.job->Ok()) {
          if (Status s = ShareRound(*kept, j.dirs().shared); !s.ok()) run.job = s;
        }
      }
      j.RecordJob("reference", "reference", started, run.job, extra);
      // Still under the lease: the candidate job's trusted preparation and the candidate's
      // profile job's (whose first go comes first: it prepares longer), beside the build; with
      // one candidate process only the profile job's, whose go carries the check fields.
      if (candidate && run.job.ok() && run.job->Ok()) {
        const bool profile = PrepareProfileBesideTheBuild(j, run.job->result, alone);
        run.candidate_prepared_wait_s = PrepareCandidate(j, run.job->result);
        if (profile) run.profile_prepared_wait_s = j.early().WaitPrepared("profile_candidate");
      }
    });
    leased.ready_wait_s = ready_wait_s;  // on every path, the lease refused too
    return leased;
  });
}

Next FinishReference(Judgement& j, std::future<ReferenceRun>& pending) {
  ReferenceRun run = pending.get();
  j.result().stage_seconds["reference"] = run.seconds;
  j.result().stage_seconds["reference_ready_wait"] = run.ready_wait_s;
  if (run.candidate_prepared_wait_s)
    j.result().stage_seconds["candidate_prepared_wait"] = *run.candidate_prepared_wait_s;
  if (run.profile_prepared_wait_s)
    j.result().stage_seconds["profile_prepared_early_wait"] = *run.profile_prepared_wait_s;
  if (!run.job.ok()) return j.Internal(run.job.status().message());
  const JobOutcome& ref = run.job.value();
  j.Track(ref);
  if (!ref.Ok()) {
    if (ref.has_result && ref.ErrorKind() == "task") return j.TaskError(ref.Reason());
    if (ref.has_result) return j.Internal("reference job: " + ref.Reason());
    return j.TaskError("the reference run ended with " + ref.process.Describe() + ": " +
                       ref.StderrTail(5));
  }
  JudgementFacts& facts = j.facts();
  const Json& signature = ref.result.value("output_signature", Json());
  facts.output_signature =
      signature.is_string() ? signature.get<std::string>() : "";  // null: no checks ran
  facts.input_scales = ref.result.value("input_scales", Json::array());
  facts.input_shifts = ref.result.value("input_shifts", Json::array());
  for (const auto& d : ref.result.value("float_dtypes", Json::array()))
    facts.float_dtypes.push_back(d);
  facts.spot_expected = ref.result.value("spot_expected", Json::array());
  facts.min_bytes = ref.result.value("min_bytes", Json());
  facts.sampled_expected = ref.result.value("sampled_checks", Json());
  return Next::kContinue;
}

}  // namespace cuda_agent
