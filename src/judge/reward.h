// reward.h — reward schedules: from correctness and times to a reward. The default is the paper's
// milestone schedule (PAPER.md §3): −1 incorrect; 3 if > 5% faster than eager and torch.compile;
// 2 if > 5% faster than eager only; 1 otherwise.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace cuda_agent {

struct RewardInputs {
  bool correct = false;
  double candidate_us = 0;
  std::optional<double> eager_us;  // absent when that baseline was not measured
  std::optional<double> compile_us;
};

class RewardSchedule {
 public:
  virtual ~RewardSchedule() = default;
  virtual std::string Name() const = 0;
  virtual int Reward(const RewardInputs& in) const = 0;
};

// PaperSchedule implements the published −1/1/2/3 milestones with a strict margin.
class PaperSchedule : public RewardSchedule {
 public:
  static constexpr double kMargin = 0.05;
  std::string Name() const override { return "paper"; }
  int Reward(const RewardInputs& in) const override;
};

// FasterBy is true when (baseline − t) / baseline > margin.
bool FasterBy(double candidate_us, double baseline_us, double margin);

// MakeRewardSchedule returns the schedule of that name, or nullptr.
std::unique_ptr<RewardSchedule> MakeRewardSchedule(const std::string& name);

}  // namespace cuda_agent
