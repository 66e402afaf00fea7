// fork_server_test.cc — the fork server's client (harness/fork_server.h) against a fake far end
// (tests/fakes/fake_fork_server.py, installed as the forkserver module of a temporary home):
// message framing, the watchdog, a server that dies mid-reply or answers garbage, and one that
// never starts.
#include "harness/fork_server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>

#include "common/fs.h"
#include "common/test_dir.h"
#include "harness/client.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// FakeHome is a harness home whose forkserver module is `server_source`; the fake server it
// starts is killed, and its files under /tmp/cuda-agent-<uid>/ removed, when the home goes away.
class FakeHome {
 public:
  explicit FakeHome(const std::string& server_source) : dir_("fake-fork-server") {
    fs::path package = dir_.path() / "python" / "cuda_agent_harness";
    fs::create_directories(package);
    std::ofstream(package / "__init__.py") << "";
    std::ofstream(package / "forkserver.py") << server_source;
    env_.home = dir_.path();
  }
  ~FakeHome() {
    Result<std::string> pid = ReadFile(dir_.path() / "fake_fork_server.pid");
    if (pid.ok() && !pid->empty()) kill(std::stoi(pid.value()), SIGKILL);
    // The socket, its lock and the server's log next to it (fork_server.cc names them).
    std::string socket = ForkServer::SocketFor(env_);
    std::error_code ec;
    fs::remove(socket, ec);
    fs::remove(socket + ".lock", ec);
    fs::remove(socket.substr(0, socket.size() - 5) + ".log", ec);
  }
  FakeHome(const FakeHome&) = delete;
  FakeHome& operator=(const FakeHome&) = delete;

  const HarnessEnv& env() const { return env_; }
  const fs::path& path() const { return dir_.path(); }

  // Job: a request for the fake's job `name`, with its output files in the home.
  ForkServerJob Job(const std::string& name) const {
    ForkServerJob job;
    job.job = name;
    job.spec_path = (dir_.path() / "spec.json").string();
    job.cwd = dir_.path().string();
    job.stdout_path = (dir_.path() / "stdout.txt").string();
    job.stderr_path = (dir_.path() / "stderr.txt").string();
    return job;
  }

 private:
  TestDir dir_;
  HarnessEnv env_;
};

std::string FakeServerSource() {
  return ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "tests" / "fakes" / "fake_fork_server.py")
      .value();
}

ForkServerOptions QuickOptions() {
  ForkServerOptions options;
  options.idle_seconds = 60;  // a fake the test could not kill goes away by itself
  options.start_timeout_s = 30;
  return options;
}

class ForkServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::make_unique<FakeHome>(FakeServerSource());
    Result<ForkServer> started = ForkServer::Ensure(home_->env(), QuickOptions());
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::make_unique<ForkServer>(std::move(started).value());
  }

  std::unique_ptr<FakeHome> home_;
  std::unique_ptr<ForkServer> server_;
};

TEST_F(ForkServerTest, EnsureFindsTheServerItStarted) {
  EXPECT_EQ(server_->SocketPath(), ForkServer::SocketFor(home_->env()));
  EXPECT_TRUE(server_->CudaUsable());
  EXPECT_EQ(server_->Jail(), "");  // the fake has no jail library
  Result<ForkServer> again = ForkServer::Ensure(home_->env(), QuickOptions());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->SocketPath(), server_->SocketPath());
}

TEST_F(ForkServerTest, RunsAJobAndReadsItsOutputs) {
  std::atomic<pid_t> pid{0};
  ForkServerJob job = home_->Job("exit3");
  job.started_pid = &pid;
  Result<RunResult> run = server_->Run(job, 30);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_GT(pid.load(), 0);
  EXPECT_FALSE(run->timed_out);
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_EQ(run->term_signal, 0);
  EXPECT_EQ(run->out, "to-stdout\n");
  EXPECT_EQ(run->err, "to-stderr\n");
}

TEST_F(ForkServerTest, MessagesSplitAcrossWritesAndJoinedInOneWrite) {
  // "started" arrives three bytes at a time; its last bytes and the whole "ended" in one write.
  Result<RunResult> run = server_->Run(home_->Job("fragmented"), 30);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_EQ(run->out, "to-stdout\n");
}

TEST_F(ForkServerTest, OutputIsCappedHeadAndTail) {
  ForkServerJob job = home_->Job("exit3");
  job.max_output_bytes = 4;
  Result<RunResult> run = server_->Run(job, 30);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->out_truncated);
  EXPECT_EQ(run->out.substr(0, 2), "to");
  EXPECT_NE(run->out.find("elided"), std::string::npos);
}

TEST_F(ForkServerTest, WatchdogKillsAHangingJobAtItsTimeout) {
  std::atomic<pid_t> pid{0};
  ForkServerJob job = home_->Job("hang");
  job.started_pid = &pid;
  auto start = Clock::now();
  Result<RunResult> run = server_->Run(job, 1.0);
  double took = SecondsSince(start);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->timed_out);
  EXPECT_EQ(run->term_signal, SIGKILL);
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 10.0);
  ASSERT_GT(pid.load(), 0);
  EXPECT_NE(kill(pid.load(), 0), 0);  // the sleeping child is gone (reaped by the fake)
}

TEST_F(ForkServerTest, ServerDyingMidReplyIsAClearErrorNotAHang) {
  auto start = Clock::now();
  Result<RunResult> run = server_->Run(home_->Job("die"), 60);
  EXPECT_LT(SecondsSince(start), 10.0);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInternal);
  EXPECT_NE(run.status().message().find("closed the connection"), std::string::npos)
      << run.status().ToString();
}

TEST_F(ForkServerTest, MalformedReplyIsAnError) {
  Result<RunResult> run = server_->Run(home_->Job("malformed"), 30);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("fork server"), std::string::npos)
      << run.status().ToString();
}

TEST_F(ForkServerTest, RefusedJobIsAnErrorWithTheServersMessage) {
  Result<RunResult> run = server_->Run(home_->Job("refuse"), 30);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("refused the job: unknown job refuse"), std::string::npos)
      << run.status().ToString();
}

TEST(ForkServerStartTest, AServerThatCrashesAtStartIsAClearError) {
  FakeHome home("raise SystemExit('Traceback: the fake fork server fails to start')\n");
  ForkServerOptions options = QuickOptions();
  auto start = Clock::now();
  Result<ForkServer> started = ForkServer::Ensure(home.env(), options);
  EXPECT_LT(SecondsSince(start), 20.0);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(started.status().message().find("failed to start"), std::string::npos)
      << started.status().ToString();
}

TEST(ForkServerStartTest, AServerThatNeverListensTimesOut) {
  FakeHome home(
      "import os, time\n"
      "home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
      "open(os.path.join(home, 'fake_fork_server.pid'), 'w').write(str(os.getpid()))\n"
      "time.sleep(30)\n");
  ForkServerOptions options = QuickOptions();
  options.start_timeout_s = 1;
  auto start = Clock::now();
  Result<ForkServer> started = ForkServer::Ensure(home.env(), options);
  EXPECT_LT(SecondsSince(start), 10.0);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.status().message().find("did not start within 1 s"), std::string::npos)
      << started.status().ToString();
}

}  // namespace
}  // namespace cuda_agent
