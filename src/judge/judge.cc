// judge.cc — the judgement pipeline as src/README.md draws it: each stage (judge/stages/) fills the
// JudgeResult and says whether to go on; Run and Baselines only string them together.
#include "judge/judge.h"

#include "common/host_environment.h"
#include "judge/stages/stages.h"

namespace cuda_agent {

bool TestSwitchesAllowed() { return HostValue(HostVar::kTesting) == "1"; }

namespace {

// RunGuarded runs the stages; an exception (a bug of ours, e.g. a malformed harness answer) becomes
// an internal error instead of a crash of the judge.
template <typename Stages>
void RunGuarded(Judgement& j, Stages& stages) {
  try {
    stages();
  } catch (const std::exception& e) {
    j.Internal(std::string("unexpected exception: ") + e.what());
  }
  j.Finish();
}

}  // namespace

JudgeResult Judge::Run(const Task* task, const Candidate& candidate, const JudgeOptions& opt,
                       const fs::path& folder) {
  JudgeResult r;
  Judgement j(env_, opt, r);
  r.candidate = {{"dir", folder.string()}, {"hash", candidate.hash()}};
  std::unique_ptr<RewardSchedule> schedule = MakeRewardSchedule(opt.reward_schedule);
  auto run = [&]() {
    if (opt.test_skip_static && !TestSwitchesAllowed()) {
      return j.Internal(std::string("the static rules may be skipped only in tests (") +
                        kTestingEnv + "=1); refusing to judge without them");
    }
    if (!schedule) return j.Internal("unknown reward schedule '" + opt.reward_schedule + "'");
    if (!task && opt.until != Stage::kBuild) return j.Internal("no task given");
    if (j.PrepareWork() == Next::kStop) return Next::kStop;
    if (task && CheckTask(j, *task) == Next::kStop) return Next::kStop;
    if (WriteSnapshot(j, candidate) == Next::kStop) return Next::kStop;
    if (StaticChecks(j, candidate, folder) == Next::kStop) return Next::kStop;
    if (j.DiscoverEnvironment() == Next::kStop) return Next::kStop;
    // The candidate's profile job starts its profiler now and waits for its go (ProfileCandidate).
    if (opt.until == Stage::kDone) StartCandidateProfile(j);
    // The reference needs no build: it runs while the candidate compiles; verification's candidate
    // job gets ready meanwhile and, once the reference has answered, does its trusted preparation
    // under the reference's lease (early jobs).
    std::future<ReferenceRun> reference;
    if (opt.until != Stage::kBuild) {
      reference = StartReference(j, opt.checks, opt.until == Stage::kDone, /*serve=*/true,
                                 ReferenceFor::kCandidate);
    }
    if (Build(j, candidate) == Next::kStop) {
      if (reference.valid()) reference.wait();  // a build failure is the verdict; the job just ends
      return Next::kStop;
    }
    if (reference.valid() && FinishReference(j, reference) == Next::kStop) return Next::kStop;
    // The machine code is read while the candidate is verified; its verdict comes first.
    std::future<BinaryInspection> inspection = StartInspect(j);
    Next verified = Verify(j);
    if (FinishInspect(j, inspection) == Next::kStop || verified == Next::kStop) return Next::kStop;
    StartTiming(j);
    if (ProfileCandidate(j) == Next::kStop) return Next::kStop;
    if (ProfileBaselines(j, /*reuse=*/true) == Next::kStop) return Next::kStop;
    if (CheckTimedCalls(j) == Next::kStop) return Next::kStop;
    return Reward(j, *schedule);
  };
  RunGuarded(j, run);
  if (opt.test_skip_static) r.MarkStaticSkipped();
  return r;
}

JudgeResult Judge::Run(const Task* task, const fs::path& candidate_dir, const JudgeOptions& opt) {
  Result<Candidate> candidate = Candidate::FromFolder(candidate_dir);
  if (candidate.ok()) return Run(task, candidate.value(), opt, candidate_dir);
  JudgeResult r;
  Judgement j(env_, opt, r);
  r.candidate = {{"dir", candidate_dir.string()}, {"hash", Candidate().hash()}};
  j.Fail(Stage::kStatic, "unreadable_candidate",
         "cannot read the candidate: " + candidate.status().message());
  j.Finish();
  if (opt.test_skip_static) r.MarkStaticSkipped();
  return r;
}

JudgeResult Judge::Baselines(const Task& task, const JudgeOptions& opt) {
  JudgeResult r;
  Judgement j(env_, opt, r);
  auto run = [&]() {
    if (j.PrepareWork() == Next::kStop) return Next::kStop;
    if (CheckTask(j, task) == Next::kStop) return Next::kStop;
    if (j.DiscoverEnvironment() == Next::kStop) return Next::kStop;
    // The baseline jobs start their profilers while the reference writes the init inputs and the
    // weights (no checks: a baseline needs no expected outputs).
    StartBaselineProfiles(j);
    std::future<ReferenceRun> reference = StartReference(j, 0, /*timing=*/false, /*serve=*/false);
    if (FinishReference(j, reference) == Next::kStop) return Next::kStop;
    StartTiming(j);
    if (ProfileBaselines(j, /*reuse=*/false) == Next::kStop) return Next::kStop;
    r.stage = Stage::kDone;
    r.reason = "baselines measured";
    for (const auto& n : j.facts().notes) r.reason += "; " + n;
    return Next::kStop;
  };
  RunGuarded(j, run);
  return r;
}

}  // namespace cuda_agent
