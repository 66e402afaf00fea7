// judgement_test.cc — what a judgement gives its jobs' sandboxes.
#include "judge/stages/judgement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace cuda_agent {
namespace {

constexpr const char* kOneQueue = "CUDA_DEVICE_MAX_CONNECTIONS=1";

bool HasOneQueue(const JobSandbox& box) {
  return std::count(box.env_set.begin(), box.env_set.end(), kOneQueue) == 1;
}

class UntimedQueuesTest : public ::testing::Test {
 protected:
  HarnessEnv env_;
  JudgeResult result_;
};

TEST_F(UntimedQueuesTest, OnCudaAnUntimedJobGetsOneHardwareQueue) {
  JudgeOptions options;
  options.device = Device::kCuda;
  Judgement j(env_, options, result_);
  JobSandbox untimed = j.ContainUntimed({"/r"}, {"/w"});
  EXPECT_TRUE(HasOneQueue(untimed));
  EXPECT_EQ(untimed.policy.read_only.back(), fs::path("/r"));
  EXPECT_EQ(untimed.policy.writable.back(), fs::path("/w"));
  EXPECT_FALSE(HasOneQueue(j.Contain({"/r"}, {"/w"})));
}

TEST_F(UntimedQueuesTest, OnTheCpuNothingIsSet) {
  JudgeOptions options;
  options.device = Device::kCpu;
  Judgement j(env_, options, result_);
  EXPECT_TRUE(j.ContainUntimed({}, {}).env_set.empty());
}

// The CUDA_DEVICE_MAX_CONNECTIONS entries a sandbox sets.
std::vector<std::string> QueueSettings(const JobSandbox& box) {
  std::vector<std::string> found;
  for (const std::string& entry : box.env_set)
    if (entry.rfind("CUDA_DEVICE_MAX_CONNECTIONS=", 0) == 0) found.push_back(entry);
  return found;
}

class TimedQueuesTest : public ::testing::Test {
 protected:
  std::vector<std::string> Timed(Device device, const std::string& queues = "") {
    JudgeOptions options;
    options.device = device;
    if (!queues.empty()) EXPECT_TRUE(SetJudgeOption(options, "timed-queues", queues).ok());
    Judgement j(env_, options, result_);
    JobSandbox box = j.ContainTimed({"/r"}, {"/w"});
    EXPECT_EQ(box.policy.read_only.back(), fs::path("/r"));
    EXPECT_EQ(box.policy.writable.back(), fs::path("/w"));
    return QueueSettings(box);
  }
  HarnessEnv env_;
  JudgeResult result_;
};

TEST_F(TimedQueuesTest, OnCudaATimedJobGetsTwoHardwareQueuesByDefault) {
  EXPECT_EQ(Timed(Device::kCuda), std::vector<std::string>{"CUDA_DEVICE_MAX_CONNECTIONS=2"});
}

TEST_F(TimedQueuesTest, TheOptionSetsTheCountAndZeroKeepsTheDriversDefault) {
  EXPECT_EQ(Timed(Device::kCuda, "1"), std::vector<std::string>{"CUDA_DEVICE_MAX_CONNECTIONS=1"});
  EXPECT_EQ(Timed(Device::kCuda, "8"), std::vector<std::string>{"CUDA_DEVICE_MAX_CONNECTIONS=8"});
  EXPECT_TRUE(Timed(Device::kCuda, "0").empty());
}

TEST_F(TimedQueuesTest, AValueOutsideTheRangeIsRefusedWithItsName) {
  for (const char* bad : {"x", "-1", "33", "2q", ""}) {
    JudgeOptions options;
    Status s = SetJudgeOption(options, "timed-queues", bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("--timed-queues"), std::string::npos) << s.message();
    EXPECT_EQ(options.timed_queues, 2);
  }
}

TEST_F(TimedQueuesTest, OnTheCpuNothingIsSet) { EXPECT_TRUE(Timed(Device::kCpu).empty()); }

}  // namespace
}  // namespace cuda_agent
