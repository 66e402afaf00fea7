// client_test.cc — RunHarnessJob's own-interpreter path and HarnessEnv::Discover against a fake
// harness (tests/fakes/fake_harness_main.py as the __main__ of a temporary home): the spec going
// out, the result coming back, the watchdog, a job that dies mid-write, malformed results.
#include "harness/client.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <optional>

#include "common/fs.h"
#include "common/host_environment.h"
#include "common/test_dir.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

// ScopedEnv sets (or, with nullopt, unsets) one environment variable and restores it, each time
// capturing the host environment again (common/host_environment.h).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
    CaptureHostEnvironment();
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
    CaptureHostEnvironment();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class HarnessClientTest : public ::testing::Test {
 protected:
  HarnessClientTest() : dir_("harness-client") {
    fs::path package = dir_.path() / "home" / "python" / "cuda_agent_harness";
    fs::create_directories(package);
    std::ofstream(package / "__init__.py") << "";
    fs::copy_file(fs::path(CUDA_AGENT_SOURCE_DIR) / "tests" / "fakes" / "fake_harness_main.py",
                  package / "__main__.py");
    env_.home = dir_.path() / "home";
    // A wrapper makes the job an exec of its own: the fork server is never asked.
    own_interpreter_.wrapper = {"env"};
  }

  Result<JobOutcome> Run(const std::string& job, double timeout_seconds = 30) {
    return RunHarnessJob(env_, job, Json{{"echo", "spec-value"}}, dir_.path() / "jobs",
                         timeout_seconds, &own_interpreter_);
  }

  TestDir dir_;
  HarnessEnv env_;
  JobSandbox own_interpreter_;
};

TEST_F(HarnessClientTest, SpecGoesOutAndTheResultComesBack) {
  Result<JobOutcome> outcome = Run("ok");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->process.Succeeded()) << outcome->process.err;
  ASSERT_TRUE(outcome->has_result);
  EXPECT_TRUE(outcome->Ok());
  EXPECT_EQ(outcome->result.value("echo", ""), "spec-value");
  EXPECT_EQ(outcome->ErrorKind(), "");
}

TEST_F(HarnessClientTest, AFailedJobReportsItsKindReasonAndStderrTail) {
  Result<JobOutcome> outcome = Run("fail");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->has_result);
  EXPECT_FALSE(outcome->Ok());
  EXPECT_EQ(outcome->ErrorKind(), "task");
  EXPECT_EQ(outcome->Reason(), "the task's forward raised");
  EXPECT_EQ(outcome->StderrTail(2), "stderr line 28\nstderr line 29");
  EXPECT_EQ(outcome->StderrTail(1), "stderr line 29");
}

TEST_F(HarnessClientTest, WatchdogKillsAHangingJob) {
  auto start = Clock::now();
  Result<JobOutcome> outcome = Run("hang", 1.0);
  double took = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->process.timed_out);
  EXPECT_FALSE(outcome->has_result);
  EXPECT_FALSE(outcome->Ok());
  EXPECT_LT(took, 10.0);
}

TEST_F(HarnessClientTest, AJobKilledMidWriteHasNoResult) {
  Result<JobOutcome> outcome = Run("die");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->process.term_signal, SIGKILL);
  EXPECT_FALSE(outcome->has_result);  // half a JSON object is no result
  EXPECT_FALSE(outcome->Ok());
}

TEST_F(HarnessClientTest, MalformedResultsAreNoResult) {
  for (const char* job : {"not_json", "not_object"}) {
    Result<JobOutcome> outcome = Run(job);
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_EQ(outcome->process.exit_code, 0) << job;
    EXPECT_FALSE(outcome->has_result) << job;
    EXPECT_FALSE(outcome->Ok()) << job;
    EXPECT_EQ(outcome->ErrorKind(), "") << job;
  }
}

TEST_F(HarnessClientTest, AProgramThatCannotStartIsAnError) {
  own_interpreter_.wrapper = {"/nonexistent/wrapper"};
  Result<JobOutcome> outcome = Run("ok");
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(outcome.status().message().find("cannot start the harness"), std::string::npos)
      << outcome.status().ToString();
}

TEST_F(HarnessClientTest, DiscoverReadsTheHomeAndPythonFromTheEnvironment) {
  ScopedEnv home("CUDA_AGENT_HOME", env_.home.string());
  ScopedEnv python("CUDA_AGENT_PYTHON", "/opt/some/python3");
  Result<HarnessEnv> found = HarnessEnv::Discover();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->home, env_.home);
  EXPECT_EQ(found->python, "/opt/some/python3");
  EXPECT_EQ(found->TemplateDir(), env_.home / "templates" / "workspace");
}

TEST_F(HarnessClientTest, DiscoverRefusesAHomeWithoutTheHarness) {
  ScopedEnv home("CUDA_AGENT_HOME", dir_.path().string());
  Result<HarnessEnv> found = HarnessEnv::Discover();
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(found.status().message().find("CUDA_AGENT_HOME"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent
