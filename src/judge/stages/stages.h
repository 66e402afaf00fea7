// stages.h — the stages of a judgement, in the order judge.cc runs them; one file each. Every stage
// is a function of the Judgement (judgement.h) that fills the result and says whether to go on; a
// stage that overlaps others comes as a Start… that returns at once and a Finish… that collects it.
//
//   task.cc          CheckTask            the task's shape; its source into the work folder
//   static_checks.cc StaticChecks         workspace integrity, the C++ scan, model_new.py's rules
//   build.cc         WriteSnapshot, Build the candidate value + our binding files, compiled
//   reference.cc     Start/FinishReference the trusted reference job (during the build)
//   inspect.cc       InspectDeviceCode,   the extension's machine code (each .cu's during the
//                    Start/FinishInspect  build, the library's joined during verification)
//   verify.cc        OneCandidateProcess, StartVerifyJobs, Verify (the checks in the profile job
//                    or a candidate job; + the compute-sanitizer run)
//   profile.cc       StartCandidateProfile, ProfileMarks, ProfilePreparation,
//                    PrepareProfileBesideTheBuild, ProfileCandidate (+ kernel audit),
//                    CheckTimedCalls
//   baselines.cc     StartBaselineProfiles, ProfileBaselines (from the store or measured)
//   reward.cc        Reward               the schedule applied to the times
#pragma once

#include <future>
#include <optional>

#include "judge/reward.h"
#include "judge/stages/judgement.h"
#include "task/task.h"
#include "workspace/candidate.h"

namespace cuda_agent {

// --- task ---------------------------------------------------------------------------------------

// CheckTask names the task in the result, checks its shape and writes its source to the work
// folder.
Next CheckTask(Judgement& j, const Task& task);

// --- static -------------------------------------------------------------------------------------

// StaticChecks: an agent workspace's protected files (when `workspace` is one), the C++/CUDA scan
// of the candidate's sources (which also names the CUDA libraries they use: facts().libraries,
// what Build links), then (unless only building) the harness's checks of model_new.py in the
// snapshot.
Next StaticChecks(Judgement& j, const Candidate& candidate, const fs::path& workspace);

// --- build --------------------------------------------------------------------------------------

// WriteSnapshot writes the candidate's files and our binding files into the work folder's src/:
// what the harness checks and runs (model_new.py) is exactly the candidate that was hashed.
Next WriteSnapshot(Judgement& j, const Candidate& candidate);
// Build compiles the candidate value itself (the builder writes its sources into build/, never
// reading them back) and links the libraries the static scan found. With options.until == kBuild
// it is the last stage.
Next Build(Judgement& j, const Candidate& candidate);

// --- reference ----------------------------------------------------------------------------------

// ReferenceRun is what the reference job's thread hands back.
struct ReferenceRun {
  Result<JobOutcome> job = Internal("the reference job did not run");
  double seconds = 0;
  // How long its lease waited for the job's set-up (its ready mark), and the candidate job's when
  // it is to be prepared under the same lease.
  double ready_wait_s = 0;
  // How long its lease waited, after the reference's answer, for the candidate job's preparation
  // (PrepareCandidate); absent when the candidate was not prepared then.
  std::optional<double> candidate_prepared_wait_s;
  // The same for the candidate's profile job, when it prepared then (PrepareProfileBesideTheBuild).
  std::optional<double> profile_prepared_wait_s;
};

// How StartReference starts: the reference alone (baselines), or for a candidate's verification
// (its `candidate` job started beside the reference and prepared under the reference's lease).
enum class ReferenceFor { kBaselines, kCandidate };

// StartReference launches the reference job (trusted: secret seeds; scaled/shifted checks; with
// `timing`, the expected outputs of the candidate profile's spot-checked calls) on a thread of its
// own: it needs no build, so it runs while the candidate compiles. With `serve` it stays to answer
// the comparisons (ServedCompare). For kCandidate (served) it also starts verification's candidate
// job (StartVerifyJobs, which needs the seeds chosen here) and, once the reference has answered and
// under its lease, gives that job its first go (PrepareCandidate). FinishReference collects its
// result into the facts.
std::future<ReferenceRun> StartReference(Judgement& j, int checks, bool timing, bool serve,
                                         ReferenceFor purpose = ReferenceFor::kBaselines);
Next FinishReference(Judgement& j, std::future<ReferenceRun>& pending);
// A candidate's judgement keeps its reference job for the next judgements of its task where it
// can (a kept job, harness/kept_jobs.h; --keep-reference off switches it off): such a
// job sees only folders of its own. ShareRound links what its round wrote for the candidate's jobs
// (init inputs, weights) into the judgement's `shared` folder; StageForKeptReference links the
// files a comparison reads (the candidate's outputs) into the round's signals folder and returns
// their paths there.
Status ShareRound(const KeptJob& kept, const fs::path& shared);
std::vector<std::string> StageForKeptReference(const KeptJob& kept, const std::string& request,
                                               const std::vector<std::string>& paths);

// --- inspect ------------------------------------------------------------------------------------

// StartInspect reads the built extension's kernels and their machine code (CUDA only) on a thread,
// while the candidate is verified. FinishInspect applies what it found; its verdict comes before
// verification's.
std::future<BinaryInspection> StartInspect(Judgement& j);
// InspectDeviceCode reads one .cu file's fat binary on a thread while the build goes on
// (BuildRequest::on_device_code): stored in the cache, it spares StartInspect's reading the
// library, which waits for it (builder/binary_inspector.h InspectFatbinCached).
void InspectDeviceCode(Judgement& j, const fs::path& fatbin);
Next FinishInspect(Judgement& j, std::future<BinaryInspection>& pending);

// --- verify -------------------------------------------------------------------------------------

// OneCandidateProcess: the candidate's checks run in its profile job, which times it next, instead
// of a `candidate` job of their own (one CUDA process for the candidate per judgement, not two:
// docs/decisions/processes.md): in a full judgement; `--until verify` runs the `candidate` job.
bool OneCandidateProcess(const Judgement& j);
// CheckFields: the go fields that make a job check the candidate (the check seeds, the reference's
// input transforms, the repeat of check 1, and the sampled checks: their seed and as many as the
// reference's answer `sampled` holds, SampledCheckFields).
Json CheckFields(const Judgement& j, const Json& input_scales, const Json& input_shifts,
                 const Json& sampled);
Json SampledCheckFields(const Judgement& j, const Json& sampled);
// StartVerifyJobs starts verification's `candidate` job as an early job: its fork, jail and CUDA
// context overlap the build. Needs the check seeds (StartReference).
void StartVerifyJobs(Judgement& j);
// PrepareCandidate gives that job its first go, with the input transforms of the reference's
// `answer`, and waits until it has marked its trusted preparation done (the task, the reference
// weights on the device, torch's threads, its CUDA context; no candidate code: go.py "then"), so
// that this runs during the build and not on verification's path. Called on the reference's
// thread under the reference's shared lease, which was taken once both jobs were set up; a job
// not set up then is not given it (the lease never waits for a start-up). Returns the seconds
// waited, or nothing when no go was given: Verify then gives both gos.
std::optional<double> PrepareCandidate(Judgement& j, const Json& answer);
// Verify: the candidate's outputs (untrusted process: its profile job with OneCandidateProcess,
// else the `candidate` job), their comparison (the served reference), then the compute-sanitizer
// run when asked. With options.until == kVerify it is the last stage.
Next Verify(Judgement& j);
// ServedCompare asks the served reference job (StartReference) to compare the expected outputs it
// kept under `keys` with the candidate's output files `actual` (the policy's tolerance; on the GPU
// for CUDA judgements) and records the answer in the result's jobs as `name`.
Result<JobOutcome> ServedCompare(Judgement& j, const std::string& name,
                                 const std::vector<std::string>& keys,
                                 const std::vector<std::string>& actual);
// RecordWeights: how the candidate's process loaded the reference weights, from its job's result
// or its weights file (`loaded`: "weights": "by_name" or "by_position", by position also
// "weights_renamed", reference name -> ModelNew name; under PolicyRules::weights_by_position also
// "weights_own", ModelNew's entries that kept its own initialisation, and "weights_not_loaded", the
// reference's BatchNorm counters ModelNew lacks), into the result's verify section. Anything else
// in `loaded` is ignored.
void RecordWeights(JudgeResult& r, const Json& loaded);
// kWeightsFile: that record in the output folder of a profile job that verifies
// (OneCandidateProcess).
inline constexpr const char* kWeightsFile = "weights.json";
// DescribeCandidateFailure: the error kind and the reason of a failed job that ran candidate code
// during `phase`.
std::pair<std::string, std::string> DescribeCandidateFailure(const JobOutcome& job,
                                                             const std::string& phase);

// --- profile ------------------------------------------------------------------------------------

// StartTiming opens the result's timing section.
void StartTiming(Judgement& j);
// StartCandidateProfile: the candidate's profile job as an early job, started before the build; it
// waits for ProfileCandidate's go, under the exclusive lease (with OneCandidateProcess, after
// Verify's go of its checks under the shared one).
void StartCandidateProfile(Judgement& j);
// ProfileMarks: where the candidate's profile job marks its progress, and whether it checks.
EarlyMarks ProfileMarks(const Judgement& j);
// ProfilePreparation, made under verification's shared lease (and destroyed before it is
// released), gives the candidate's profile job its first go when the job is ready: it makes its
// input sets, pristine copies and weights beside the verification (no candidate code runs before
// its second go, which ProfileCandidate gives under the exclusive lease). Its destruction waits
// until the job has marked that done, so that none of it runs outside a lease.
class ProfilePreparation {
 public:
  explicit ProfilePreparation(Judgement& j);
  ~ProfilePreparation();
  ProfilePreparation(const ProfilePreparation&) = delete;
  ProfilePreparation& operator=(const ProfilePreparation&) = delete;

 private:
  Judgement& j_;
  bool given_ = false;
};
// PrepareProfileBesideTheBuild gives the same first go earlier: under the reference's shared
// lease, beside the verification's candidate job (the reference's thread, StartReference), so
// that the preparation runs while the candidate still compiles; the caller waits for `prepared`
// (EarlyJobs::WaitPrepared) before it releases that lease. The reference's thread asks for it
// only when the device was idle as the reference's lease was asked for (gpu/lease.h DeviceIdle):
// beside other judgements the longer shared hold delays their timings (judged per GPU-hour −3 to
// −6% at 8 at once). False when not given (the job is not ready): then ProfilePreparation gives
// it. With OneCandidateProcess the job is verification's too: it is given this go whenever
// it is ready (as verification's candidate job was: PrepareCandidate), with the check fields of
// the reference's `answer`.
bool PrepareProfileBesideTheBuild(Judgement& j, const Json& answer, bool alone);
// ProfileCandidate times the candidate and audits the kernels its timed calls ran.
Next ProfileCandidate(Judgement& j);
// CheckTimedCalls: the spot-checked timed outputs match the reference's, and no time beats the
// bytes the task must move at the measured peak bandwidth.
Next CheckTimedCalls(Judgement& j);
// ProfileSpec is a profile job's spec for `target` (candidate, eager or compile).
Json ProfileSpec(Judgement& j, const std::string& target);
// ProfileSummary: the timing fields of a profile job's result, with `time_us` for the device.
Json ProfileSummary(const Judgement& j, const JobOutcome& job);

// --- baselines ----------------------------------------------------------------------------------

// StartBaselineProfiles: the eager and torch.compile profile jobs as early jobs, so that only the
// work from their go on holds the exclusive lease.
void StartBaselineProfiles(Judgement& j);
// ProfileBaselines: eager and torch.compile times, from the store or measured now and stored.
// `reuse` false re-measures.
Next ProfileBaselines(Judgement& j, bool reuse);

// --- reward -------------------------------------------------------------------------------------

// Reward compares the candidate with whatever baselines were measured; always the last stage.
Next Reward(Judgement& j, const RewardSchedule& schedule);

}  // namespace cuda_agent
