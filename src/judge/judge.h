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
#include "judge/judge_options.h"
#include "judge/judge_result.h"
#include "store/baseline_store.h"
#include "task/task.h"
#include "workspace/candidate.h"

namespace cuda_agent {

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
