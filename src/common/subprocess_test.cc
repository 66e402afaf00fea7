// subprocess_test.cc — exit codes, signals, the watchdog, output caps, environment and limits.
#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace cuda_agent {
namespace {

RunResult Sh(const std::string& script, double timeout = 10, size_t cap = 1 << 20) {
  RunOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.timeout_seconds = timeout;
  o.max_output_bytes = cap;
  Result<RunResult> r = RunProcess(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : RunResult{};
}

TEST(RunProcess, CapturesOutputAndExitCode) {
  RunResult r = Sh("echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.Succeeded());
  EXPECT_EQ(r.Describe(), "exit status 3");
}

TEST(RunProcess, ReportsSignals) {
  RunResult r = Sh("kill -SEGV $$");
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_EQ(r.Describe(), "killed by SIGSEGV");
}

TEST(RunProcess, WatchdogKillsTheWholeGroup) {
  auto start = std::chrono::steady_clock::now();
  // The child ignores SIGTERM and leaves a grandchild holding the pipes open.
  RunResult r = Sh("trap '' TERM; sleep 30 & sleep 30", 0.5);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(elapsed, 5.0);
  EXPECT_NE(r.Describe().find("timed out"), std::string::npos);
}

TEST(RunProcess, DoesNotWaitForBackgroundGrandchildren) {
  auto start = std::chrono::steady_clock::now();
  RunResult r = Sh("sleep 30 & echo done", 20);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_LT(elapsed, 5.0);
}

TEST(RunProcess, CapsOutputKeepingHeadAndTail) {
  RunResult r = Sh("echo HEAD; head -c 200000 /dev/zero | tr '\\0' x; echo; echo TAIL", 10, 1000);
  EXPECT_TRUE(r.out_truncated);
  EXPECT_LT(r.out.size(), 1200u);
  EXPECT_EQ(r.out.rfind("HEAD", 0), 0u);
  EXPECT_NE(r.out.find("TAIL"), std::string::npos);
  EXPECT_NE(r.out.find("elided"), std::string::npos);
}

TEST(RunProcess, EnvironmentAndCwd) {
  RunOptions o;
  o.argv = {"/bin/sh", "-c", "echo $FOO:$HOME:$(pwd)"};
  o.env_set = {"FOO=bar"};
  o.env_unset = {"HOME"};
  o.cwd = "/tmp";
  Result<RunResult> r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "bar::/tmp\n");
}

TEST(RunProcess, FileSizeLimit) {
  RunOptions o;
  o.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero > /tmp/cuda_agent_fsize_test; echo $?"};
  o.limits.file_size_bytes = 1000;
  Result<RunResult> r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  std::error_code ec;
  EXPECT_LE(fs::file_size("/tmp/cuda_agent_fsize_test", ec), 1000u);
  fs::remove("/tmp/cuda_agent_fsize_test", ec);
}

TEST(RunProcess, MissingExecutableIsAnError) {
  RunOptions o;
  o.argv = {"definitely-not-a-command-xyz"};
  EXPECT_FALSE(RunProcess(o).ok());
  o.argv = {};
  EXPECT_FALSE(RunProcess(o).ok());
}

TEST(BuildEnvironment, AllowListPassesOnlyNamedAndPrefixedVariables) {
  setenv("CUDA_AGENT_TEST_KEEP", "1", 1);
  setenv("LC_TEST_KEEP", "2", 1);
  setenv("OPENAI_API_KEY", "sk-secret", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "aws-secret", 1);
  RunOptions o;
  o.env_allow = JudgedEnvironment();
  o.env_set = {"ADDED=3"};
  std::vector<std::string> env = BuildEnvironment(o);
  auto has = [&](const std::string& kv) {
    return std::find(env.begin(), env.end(), kv) != env.end();
  };
  EXPECT_TRUE(has("CUDA_AGENT_TEST_KEEP=1"));  // prefix CUDA_AGENT_*
  EXPECT_TRUE(has("LC_TEST_KEEP=2"));          // prefix LC_*
  EXPECT_TRUE(has("ADDED=3"));                 // env_set always adds
  EXPECT_TRUE(has(std::string("PATH=") + std::getenv("PATH")));
  for (const auto& kv : env) {
    EXPECT_EQ(kv.find("secret"), std::string::npos) << kv;
  }
  o.env_allow.clear();  // no list: everything inherited
  env = BuildEnvironment(o);
  EXPECT_TRUE(std::find(env.begin(), env.end(), "OPENAI_API_KEY=sk-secret") != env.end());
  unsetenv("OPENAI_API_KEY");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("CUDA_AGENT_TEST_KEEP");
  unsetenv("LC_TEST_KEEP");
}

TEST(BuildEnvironment, JudgedChildrenDoNotSeeSecrets) {
  setenv("ANTHROPIC_API_KEY", "anthropic-secret", 1);
  RunOptions o;
  o.argv = {"/bin/sh", "-c", "cat /proc/self/environ | tr '\\0' '\\n'"};
  o.env_allow = JudgedEnvironment();
  Result<RunResult> r = RunProcess(o);
  unsetenv("ANTHROPIC_API_KEY");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->out.find("anthropic-secret"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("PATH="), std::string::npos) << r->out;
}

}  // namespace
}  // namespace cuda_agent
