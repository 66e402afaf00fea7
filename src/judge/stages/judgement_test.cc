// judgement_test.cc — what a judgement gives its jobs' sandboxes.
#include "judge/stages/judgement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace cuda_agent {
namespace {

constexpr const char* kOneQueue = "CUDA_DEVICE_MAX_CONNECTIONS=1";

bool HasOneQueue(const JobSandbox& box) {
  return std::count(box.env_set.begin(), box.env_set.end(), kOneQueue) == 1;
}

class UntimedQueuesTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("CUDA_AGENT_UNTIMED_QUEUES"); }
  void TearDown() override { unsetenv("CUDA_AGENT_UNTIMED_QUEUES"); }
  HarnessEnv env_;
  JudgeResult result_;
};

TEST_F(UntimedQueuesTest, OnCudaAnUntimedJobGetsOneHardwareQueueAndATimedOneKeepsTheDrivers) {
  JudgeOptions options;
  options.device = Device::kCuda;
  Judgement j(env_, options, result_);
  JobSandbox untimed = j.ContainUntimed({"/r"}, {"/w"});
  EXPECT_TRUE(HasOneQueue(untimed));
  EXPECT_EQ(untimed.policy.read_only.back(), fs::path("/r"));
  EXPECT_EQ(untimed.policy.writable.back(), fs::path("/w"));
  EXPECT_FALSE(HasOneQueue(j.Contain({"/r"}, {"/w"})));
}

TEST_F(UntimedQueuesTest, TheSwitchKeepsTheDriversQueues) {
  setenv("CUDA_AGENT_UNTIMED_QUEUES", "0", 1);
  JudgeOptions options;
  options.device = Device::kCuda;
  Judgement j(env_, options, result_);
  EXPECT_FALSE(HasOneQueue(j.ContainUntimed({}, {})));
}

TEST_F(UntimedQueuesTest, OnTheCpuNothingIsSet) {
  JudgeOptions options;
  options.device = Device::kCpu;
  Judgement j(env_, options, result_);
  EXPECT_TRUE(j.ContainUntimed({}, {}).env_set.empty());
}

}  // namespace
}  // namespace cuda_agent
