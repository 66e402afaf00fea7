// judge.h — orchestrates one judgement: task check → static checks → build (while the trusted
// reference job makes the expected outputs) → verify (candidate in its own process while the
// extension's machine code is read, comparison in a trusted process) → profile (the candidate under
// the exclusive device lease; eager and torch.compile from the baseline store, measured in
// processes of their own when missing or drifted) → reward. Never throws; every failure is a
// JudgeResult with a reason. The stages are in judge/stages/ (stages.h lists them).
//
//   JudgeOptions opt; opt.device = Device::kCpu;
//   Result<Candidate> c = Candidate::FromFolder("examples/relu_scale/candidates/cpu_correct");
//   JudgeResult r = Judge(env).Run(&task, c.value(), opt);
#pragma once

#include <optional>
#include <string>

#include "harness/toolchain.h"
#include "judge/judge_result.h"
#include "judge/precision.h"
#include "sandbox/sandbox.h"
#include "store/baseline_store.h"
#include "task/task.h"
#include "workspace/candidate.h"

namespace cuda_agent {

struct JudgeOptions {
  Device device = Device::kCuda;
  Stage until = Stage::kDone;  // kBuild, kVerify or kProfile/kDone
  bool eager_baseline = true;
  bool compile_baseline = true;
  int checks = 5;  // verification input sets
  // Sampled checks after the full ones (HACKS B14, flaky kernels): up to this many fresh input
  // sets, each compared by weighted chunk sums (python/cuda_agent_harness/sampled_checks.py), while
  // the reference's own sampled forwards take under sampled_checks_seconds (at least
  // kMinSampledChecks of them). 0: none.
  int sampled_checks = 128;
  double sampled_checks_seconds = 0.25;
  int warmup = 5;
  int iters = 20;
  double candidate_timeout_s = 180;  // each job that runs candidate code
  double trusted_timeout_s = 900;    // reference and baselines (torch.compile can be slow)
  double build_timeout_s = 600;      // each compiler invocation
  int build_jobs = 0;
  fs::path cache_dir;       // objects, toolchain, work folders
  bool keep_work = false;   // keep the job folder (its path is in the result)
  fs::path export_library;  // when set, a successful build's cuda_extension.so is copied here
  PrecisionPolicy policy = MakePrecisionPolicy("strict").value();  // judge/precision.h
  std::string reward_schedule = "paper";
  // CUDA: after verification, check 1 runs once more under compute-sanitizer with this tool
  // (memcheck, racecheck, initcheck, synccheck); any error it reports fails the candidate (HACKS
  // B12).
  std::string sanitizer;
  // Eager/compile timings kept per task × device × torch × policy × warmup/iters (store/); empty:
  // <cache_dir>/store.sqlite. Stored baselines are used unless older than baseline_max_age_hours or
  // the device drifted: its calibration (timing.calibrate, taken in the candidate's profile) moved
  // by more than baseline_drift (relative) from the one stored with them.
  fs::path baseline_store;
  bool use_baseline_store = true;
  double baseline_drift = 0.10;
  double baseline_max_age_hours = 24;  // 0: no age limit
  // Containment of every job that runs task or candidate code, and of the compilers.
  const Sandbox* sandbox = nullptr;  // null: Sandbox::Default()
  uint64_t job_memory_bytes = 0;     // cgroup memory limit per job; 0: 3/4 of the machine's memory
  uint64_t job_max_pids = 4096;      // processes and threads per job
  // Test only: skip the static rules (the C++/CUDA scan of kernels/ and model_new.py's AST rules;
  // the protected-file hashes and model_new.py's presence, syntax and ModelNew class are still
  // checked), so that the hack corpus shows what the run-time checks catch on their own
  // (docs/hacks.md, "Defence in depth"). Only `cuda-agent judge --test-skip-static` sets it, and
  // only with CUDA_AGENT_TESTING=1 in the environment; no flag table, JSON form or
  // JudgeOptionArgs carries it, and Judge::Run refuses it without that variable. Such a
  // judgement has no reward (JudgeResult::static_skipped).
  bool test_skip_static = false;
};

// The sampled checks a judgement runs whatever their time (when it asks for at least as many).
inline constexpr int kMinSampledChecks = 16;

// kTestingEnv is the variable that allows test-only switches (JudgeOptions::test_skip_static):
// they are honoured only when it is exactly "1".
inline constexpr const char* kTestingEnv = "CUDA_AGENT_TESTING";
bool TestSwitchesAllowed();

class Judge {
 public:
  explicit Judge(HarnessEnv env) : env_(std::move(env)) {}
  // Run judges `candidate` against `task`. `task` may be null only when options.until is
  // Stage::kBuild (a build needs no task). `folder` is where the candidate was read from, if
  // anywhere: the result names it, and when it is an agent workspace its protected files are
  // checked against the hashes recorded at `workspace init`.
  JudgeResult Run(const Task* task, const Candidate& candidate, const JudgeOptions& options,
                  const fs::path& folder = {});
  // Run reads the candidate of `candidate_dir` once (Candidate::FromFolder) and judges it; a folder
  // that cannot be read is a verdict at stage static (error_kind "unreadable_candidate").
  JudgeResult Run(const Task* task, const fs::path& candidate_dir, const JudgeOptions& options);

  // Baselines checks that the task runs (one reference input set) and times its eager and
  // torch.compile versions, as options.eager_baseline/compile_baseline ask. No candidate involved;
  // the result has no reward, stage "profile" or "done", and `timing` without a candidate.
  JudgeResult Baselines(const Task& task, const JudgeOptions& options);

 private:
  HarnessEnv env_;
};

// BaselineKeyFor names a task's stored baseline the way the judge keys it: the GPU model (or
// "cpu:<host>"), torch version, precision policy and warm-up/iterations of `options`.
BaselineKey BaselineKeyFor(const Toolchain& toolchain, const std::string& task_id,
                           const JudgeOptions& options, const std::string& target);

// OwnGpuKey: `model_key` narrowed to one GPU, "<model> @ <uuid>", with the UUID a profile job put
// in its `calibration`; nothing when it has none (CPU, an older torch). GPUs of one model differ
// (two H100s of one host: copy calibrations 10% apart), and with one entry per model each GPU would
// find the other's baselines drifted and re-measure them in turn; with one entry per GPU each
// measures a task's baselines once. The model's entry stays the fallback for a GPU that has none of
// its own (imported baselines, a new host) and is written with every measurement.
std::optional<BaselineKey> OwnGpuKey(const BaselineKey& model_key, const Json& calibration);

// FindBaseline: the entry of `own` (this GPU) when there is one, else the model's.
std::optional<StoredBaseline> FindBaseline(BaselineStore& store, const BaselineKey& model_key,
                                           const std::optional<BaselineKey>& own);

}  // namespace cuda_agent
