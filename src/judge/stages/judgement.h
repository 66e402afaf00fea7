// judgement.h — what the stages of one judgement share: the options, the result they fill, the
// private work folder, the toolchain and the base sandbox policy, the jobs they run (recorded in
// the result), the device leases, the early jobs, and the facts one stage hands to the next (the
// reference's, the machine code's, the candidate profile's). Each stage (stages.h) is a function
// of a Judgement&; judge.cc strings them together.
//
//   Judgement j(env, options, result);
//   if (j.PrepareWork() == Next::kStop) return;
//   Result<JobOutcome> out = j.RunJob("static", "static", spec, 60, nullptr);
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "builder/binary_inspector.h"
#include "builder/cuda_libraries.h"
#include "gpu/lease.h"
#include "harness/early_jobs.h"
#include "harness/kept_jobs.h"
#include "harness/served_job.h"
#include "harness/toolchain.h"
#include "judge/judge.h"

namespace cuda_agent {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t);

// SecretSeeds are drawn from the OS for every run: the candidate cannot know them.
std::vector<int64_t> SecretSeeds(int n);

// Next: go on with the next stage, or stop with the result as it is.
enum class Next { kContinue, kStop };

// The folders of one judgement. `shared` holds what the candidate may see (its init inputs and
// weights); `expected_dir` holds the expected outputs, which no sandbox that runs candidate code
// binds; `signals` holds the go/stop files of the early jobs (harness/early_jobs.h), `served` those
// of the served reference job, which writes its answers into `answers` (harness/served_job.h).
struct WorkDirs {
  fs::path root, jobs, shared, expected_dir, outputs, src, build, task_file, spot_candidate,
      signals, served, answers;

  explicit WorkDirs(const fs::path& r);
  std::string InitInputs() const { return (shared / "init_inputs.pt").string(); }
  std::string StateDict() const { return (shared / "state_dict.pt").string(); }
};

// What one stage learns for the stages after it.
struct JudgementFacts {
  // From the static scan (stages/static_checks.cc): the CUDA libraries the candidate's sources
  // use, which the build links.
  CudaLibraries libraries;
  // From the reference job (stages/reference.cc).
  std::vector<int64_t> check_seeds;
  std::string output_signature;
  Json input_scales = Json::array();
  Json input_shifts = Json::array();
  std::vector<std::string> float_dtypes;
  Json spot_expected = Json::array();  // the reference's outputs of the spot-checked timed calls
  Json min_bytes;                      // bytes of one timed call's inputs and output
  // The sampled checks (python/cuda_agent_harness/sampled_checks.py): their secret seed, and the
  // reference's fingerprints ({"seed", "count", "fingerprints"}; null when none were asked for).
  int64_t sampled_seed = 0;
  Json sampled_expected;
  // From the machine code (stages/inspect.cc): the fat binaries' inspections the build started,
  // then the library's.
  std::mutex device_code_mu;
  std::vector<std::future<void>> device_code_inspections;
  BinaryInspection inspection;
  double inspect_seconds = 0;
  std::set<std::string> own_keys;  // KernelKey of every kernel the built extension contains
  // From the candidate's profile (stages/profile.cc).
  Json candidate_spots = Json::array();
  Json candidate_fingerprints = Json::array();  // of its calls on fingerprinted sets
  Json calibration;  // the device calibration taken in the candidate's profile
  // Remarks the reason ends with ("baselines re-measured: ...").
  std::vector<std::string> notes;

  // Fp32Task: every floating input of the task is float32 (or complex64).
  bool Fp32Task() const;
};

// The timing seed and the two timed calls whose outputs are checked; the candidate cannot know
// them.
struct TimingSecrets {
  int64_t seed = 0;
  Json spot_calls = Json::array();
};

class Judgement {
 public:
  Judgement(const HarnessEnv& env, const JudgeOptions& options, JudgeResult& result);
  ~Judgement();
  Judgement(const Judgement&) = delete;
  Judgement& operator=(const Judgement&) = delete;

  // Outcomes: each fills the result and says stop.
  Next Internal(const std::string& why);
  Next TaskError(const std::string& why);
  Next Fail(Stage at, const std::string& kind, const std::string& why);
  // Finish ends the served reference job (recording its isolation; a kept one is handed back for
  // the next judgement of its task when it may be) and records the judgement's total time.
  void Finish();

  // PrepareWork makes the private work folder (removed at the end unless options.keep_work).
  Next PrepareWork();
  // DiscoverEnvironment asks the harness for the toolchain and makes the base sandbox policy.
  Next DiscoverEnvironment();

  // Contain returns the sandbox of one job: the base policy plus these folders.
  JobSandbox Contain(const std::vector<fs::path>& read_only,
                     const std::vector<fs::path>& writable) const;
  // ContainUntimed: Contain for a job whose device work is never timed (the reference, the
  // candidate job of `--until verify`). On the GPU its
  // CUDA context gets one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) instead of the driver's
  // eight: the driver makes and tears down contexts one at a time per host, and one queue makes
  // both three times cheaper (0.13 → 0.04 s each at 16 at once; docs/decisions/host-scaling.md).
  JobSandbox ContainUntimed(const std::vector<fs::path>& read_only,
                            const std::vector<fs::path>& writable) const;
  // ContainTimed: Contain for a job whose device work is timed (the candidate's profile job, which
  // also runs its checks, and the baselines'). On the GPU its context gets --timed-queues hardware
  // queues: the candidate's is the judgement's one CUDA process, and the host's line of context
  // starts and ends is what bounds a host's judgements (bench/host_line.py); two queues cost the
  // line 0.05 + 0.07 s per process against 0.10 + 0.10 s with eight, and keep two streams that a
  // candidate runs side by side on queues of their own (bench/stream_queues.py). Baselines get the
  // same, so that a candidate and its baselines are timed under one device configuration.
  JobSandbox ContainTimed(const std::vector<fs::path>& read_only,
                          const std::vector<fs::path>& writable) const;
  // ContainWithQueues: Contain, and on CUDA a context of `queues` hardware queues (0: the
  // driver's).
  JobSandbox ContainWithQueues(const std::vector<fs::path>& read_only,
                               const std::vector<fs::path>& writable, int queues) const;
  // Track records the weakest isolation any job ran under.
  void Track(const JobOutcome& job);
  // RunJob runs one harness job and records it in the result's `jobs` (where a judgement's time
  // went): its name, start and end in seconds since the judgement began, the seconds it waited for
  // its go (an early job) and the phases it reported. Safe to call from several threads.
  Result<JobOutcome> RunJob(const std::string& name, const std::string& job, const Json& spec,
                            double timeout_s, const JobSandbox* box,
                            std::atomic<pid_t>* pid = nullptr);
  // RecordJob adds a job that ran (from `started_s`, seconds since the judgement began, until now)
  // to the result's `jobs`, with `extra` fields. Safe to call from several threads.
  void RecordJob(const std::string& name, const std::string& job, double started_s,
                 const Result<JobOutcome>& out, const Json& extra = Json::object());
  // Elapsed: seconds since the judgement began.
  double Elapsed() const;
  // Lease takes the device lease a stage needs (shared for correctness, exclusive for timing), adds
  // its wait to stage_seconds.lease_wait (written by Finish) and records it in the result's
  // `leases` (`purpose`: what it is for). Safe to call from several threads.
  Result<DeviceLease> Lease(LeaseMode mode, const std::string& purpose);
  // Secrets draws the timing secrets on first use.
  const TimingSecrets& Secrets();

  const HarnessEnv& env() const { return env_; }
  const JudgeOptions& options() const { return options_; }
  JudgeResult& result() { return result_; }
  const WorkDirs& dirs() const { return *dirs_; }
  const fs::path& cache_dir() const { return cache_dir_; }
  const Toolchain& toolchain() const { return toolchain_; }
  const Sandbox& sandbox() const { return sandbox_; }
  const SandboxPolicy& base_policy() const { return base_policy_; }
  EarlyJobs& early() { return *early_; }
  // EarlyWaitSeconds: how long an early job may wait for its go (everything before it may take).
  double EarlyWaitSeconds() const;
  // ServeReference makes the judgement's served reference job, which answers `requests` in order
  // (stages/reference.cc); served_reference() is it, or null when there is none.
  ServedJob& ServeReference(std::vector<std::string> requests);
  // ServeKeptReference: the same as a round of `kept`, a kept reference job of this task
  // (harness/kept_jobs.h), whose process runs already; Finish hands it back when it may serve
  // another judgement. kept_reference() is it, or null.
  ServedJob& ServeKeptReference(std::unique_ptr<KeptJob> kept, std::vector<std::string> requests);
  ServedJob* served_reference() { return served_reference_.get(); }
  KeptJob* kept_reference() { return kept_reference_.get(); }
  JudgementFacts& facts() { return facts_; }
  const JudgementFacts& facts() const { return facts_; }

 private:
  // WorkFolderGuard removes the work folder unless asked to keep it.
  struct WorkFolderGuard {
    fs::path dir;
    bool keep;
    ~WorkFolderGuard();
  };

  const HarnessEnv& env_;
  const JudgeOptions& options_;
  JudgeResult& result_;
  Clock::time_point start_;
  const Sandbox& sandbox_;
  fs::path cache_dir_;
  std::unique_ptr<WorkFolderGuard> guard_;
  std::unique_ptr<WorkDirs> dirs_;
  Toolchain toolchain_;
  SandboxPolicy base_policy_;
  std::string python_inside_;
  Isolation weakest_ = Isolation::kFull;
  std::mutex jobs_mu_;  // result_.jobs, result_.leases and lease_wait_: several threads
  double lease_wait_ = 0;
  TimingSecrets secrets_;
  JudgementFacts facts_;
  // Last: their destructors end the jobs still running, which record themselves in the result
  // (the served reference before the kept job whose round it may be).
  std::unique_ptr<KeptJob> kept_reference_;
  std::unique_ptr<ServedJob> served_reference_;
  std::unique_ptr<EarlyJobs> early_;
};

}  // namespace cuda_agent
