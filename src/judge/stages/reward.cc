// reward.cc — the reward stage: judge/reward's schedule (the paper's −1/1/2/3 by default) applied
// to the candidate's time and whatever baselines were measured; the reason sums it up.
#include "judge/stages/stages.h"

namespace cuda_agent {

Next Reward(Judgement& j, const RewardSchedule& schedule) {
  JudgeResult& r = j.result();
  RewardInputs in;
  in.correct = true;
  in.candidate_us = r.timing["candidate"]["time_us"].get<double>();
  std::string summary = "correct";
  for (const std::string target : {"eager", "compile"}) {
    if (!r.timing.contains(target) || !r.timing[target]["time_us"].is_number()) continue;
    double base = r.timing[target]["time_us"].get<double>();
    (target == "eager" ? in.eager_us : in.compile_us) = base;
    double speedup = in.candidate_us > 0 ? base / in.candidate_us : 0.0;
    r.timing["speedup_vs_" + target] = speedup;
    char buf[96];
    std::snprintf(buf, sizeof(buf), ", %.2fx vs %s", speedup,
                  target == "eager" ? "eager" : "torch.compile");
    summary += buf;
  }
  for (const auto& n : j.facts().notes) summary += "; " + n;
  r.reward = schedule.Reward(in);
  r.stage = Stage::kDone;
  r.reason = summary;
  return Next::kStop;
}

}  // namespace cuda_agent
