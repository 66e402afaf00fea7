// reward.cc — the reward schedules.
#include "judge/reward.h"

namespace cuda_agent {

bool FasterBy(double candidate_us, double baseline_us, double margin) {
  if (!(baseline_us > 0) || !(candidate_us > 0)) return false;
  return (baseline_us - candidate_us) / baseline_us > margin;
}

int PaperSchedule::Reward(const RewardInputs& in) const {
  if (!in.correct) return -1;
  bool beats_eager = in.eager_us && FasterBy(in.candidate_us, *in.eager_us, kMargin);
  bool beats_compile = in.compile_us && FasterBy(in.candidate_us, *in.compile_us, kMargin);
  if (beats_eager && beats_compile) return 3;
  if (beats_eager) return 2;
  return 1;
}

std::unique_ptr<RewardSchedule> MakeRewardSchedule(const std::string& name) {
  if (name == "paper") return std::make_unique<PaperSchedule>();
  return nullptr;
}

}  // namespace cuda_agent
