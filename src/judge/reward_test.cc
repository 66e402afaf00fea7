// reward_test.cc — the paper's schedule, including the strict 5% margin.
#include "judge/reward.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

int R(bool correct, double t, std::optional<double> eager, std::optional<double> compile) {
  return PaperSchedule().Reward({correct, t, eager, compile});
}

TEST(PaperSchedule, Milestones) {
  EXPECT_EQ(R(false, 1, 100, 100), -1);
  EXPECT_EQ(R(true, 50, 100, 100), 3);
  EXPECT_EQ(R(true, 50, 100, 40), 2);  // faster than eager only
  EXPECT_EQ(R(true, 50, 40, 100), 1);  // faster than compile only is not a milestone
  EXPECT_EQ(R(true, 100, 100, 100), 1);
  EXPECT_EQ(R(true, 200, 100, 100), 1);
}

TEST(PaperSchedule, MarginIsStrict) {
  EXPECT_EQ(R(true, 95.0, 100, 100), 1);  // exactly 5% is not more than 5%
  EXPECT_EQ(R(true, 94.9, 100, 100), 3);
  EXPECT_FALSE(FasterBy(95.0, 100.0, 0.05));
  EXPECT_TRUE(FasterBy(94.99, 100.0, 0.05));
}

TEST(PaperSchedule, MissingBaselines) {
  EXPECT_EQ(R(true, 10, std::nullopt, std::nullopt), 1);
  EXPECT_EQ(R(true, 10, 100, std::nullopt), 2);
  EXPECT_EQ(R(true, 10, std::nullopt, 100), 1);
  EXPECT_EQ(R(true, 0, 100, 100), 1) << "a zero time is not a speedup";
}

TEST(RewardSchedules, ByName) {
  EXPECT_NE(MakeRewardSchedule("paper"), nullptr);
  EXPECT_EQ(MakeRewardSchedule("nope"), nullptr);
}

}  // namespace
}  // namespace cuda_agent
