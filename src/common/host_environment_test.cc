// host_environment_test.cc — the snapshot of the process environment (host_environment.h).
#include "common/host_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace cuda_agent {
namespace {

TEST(HostEnvironmentTest, DeclaresEachVariableOnceInItsOrder) {
  const auto& variables = HostVariables();
  ASSERT_EQ(variables.size(), static_cast<size_t>(HostVar::kCount));
  std::set<std::string> names;
  for (size_t i = 0; i < variables.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(variables[i].var), i) << variables[i].name;
    EXPECT_TRUE(names.insert(variables[i].name).second) << "declared twice: " << variables[i].name;
    EXPECT_NE(std::string(variables[i].purpose), "") << variables[i].name;
  }
}

TEST(HostEnvironmentTest, ReadsOnlyWhenCaptured) {
  setenv("CUDA_AGENT_LOG", "debug", 1);
  CaptureHostEnvironment();
  EXPECT_EQ(HostValue(HostVar::kLog), "debug");
  setenv("CUDA_AGENT_LOG", "error", 1);
  EXPECT_EQ(HostValue(HostVar::kLog), "debug") << "a change after the capture is not seen";
  CaptureHostEnvironment();
  EXPECT_EQ(HostValue(HostVar::kLog), "error");
  unsetenv("CUDA_AGENT_LOG");
  CaptureHostEnvironment();
  EXPECT_EQ(HostValue(HostVar::kLog), "");
}

TEST(HostEnvironmentTest, OnlyZeroSwitchesOff) {
  unsetenv("CUDA_AGENT_FORK_SERVER");
  CaptureHostEnvironment();
  EXPECT_FALSE(HostSwitchedOff(HostVar::kForkServer));
  for (const char* on : {"", "1", "00", "off"}) {
    setenv("CUDA_AGENT_FORK_SERVER", on, 1);
    CaptureHostEnvironment();
    EXPECT_FALSE(HostSwitchedOff(HostVar::kForkServer)) << on;
  }
  setenv("CUDA_AGENT_FORK_SERVER", "0", 1);
  CaptureHostEnvironment();
  EXPECT_TRUE(HostSwitchedOff(HostVar::kForkServer));
  unsetenv("CUDA_AGENT_FORK_SERVER");
  CaptureHostEnvironment();
}

}  // namespace
}  // namespace cuda_agent
