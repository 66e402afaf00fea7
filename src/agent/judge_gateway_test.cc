// judge_gateway_test.cc — what the judge gateway forwards and refuses, and a round trip over its
// socket with a stand-in judge binary.
#include "agent/judge_gateway.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/test_dir.h"
#include "judge/judge_args.h"

namespace cuda_agent {
namespace {

class JudgeGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TestDir>("gateway");
    workspace_ = fs::canonical(dir_->path()) / "ws";
    fs::create_directories(workspace_ / "kernels");
    // A stand-in for the judge: prints its arguments to stderr and a verdict on stdout.
    fake_judge_ = dir_->path() / "fake-judge.sh";
    std::ofstream(fake_judge_)
        << "#!/bin/sh\necho \"args: $*\" >&2\n"
           "case \"$*\" in *--ncu*) echo '{\"tool\": \"ncu\", \"status\": \"ok\", "
           "\"reward\": 3, \"correct\": true}';;\n"
           "*verify*) echo '{\"reward\": null, \"correct\": true, \"reason\": "
           "\"ok\"}';;\n"
           "*judge*) echo '{\"reward\": 2, \"correct\": true, \"reason\": \"fast\"}';;\n"
           "*) echo 'build succeeded';; esac\nexit 0\n";
    fs::permissions(fake_judge_, fs::perms::owner_all);
    config_.socket_dir = dir_->path() / "gw";
    config_.workspace = workspace_;
    config_.task_spec = "/suite/task.py";
    config_.judge.device = Device::kCpu;
    config_.binary = fake_judge_;
  }
  std::unique_ptr<TestDir> dir_;
  fs::path workspace_, fake_judge_;
  JudgeGatewayConfig config_;
};

TEST_F(JudgeGatewayTest, TranslatesTheUtilsCommands) {
  JudgeGateway gateway(config_);
  // What utils/compile.sh sends.
  Result<std::vector<std::string>> build = gateway.Translate(
      {"build", "--candidate", ".", "--device", "cpu", "--out", "cuda_extension.so"},
      workspace_.string());
  ASSERT_TRUE(build.ok()) << build.status().ToString();
  std::vector<std::string> expected = {fake_judge_.string(),
                                       "build",
                                       "--candidate",
                                       workspace_.string(),
                                       "--device",
                                       "cpu",
                                       "--policy",
                                       "strict",
                                       "--out",
                                       (workspace_ / "cuda_extension.so").string()};
  // Then every other option of the session's judge (timeouts, cache, measurement).
  const std::vector<std::string> options = JudgeOptionArgs(config_.judge);
  expected.insert(expected.end(), options.begin(), options.end());
  EXPECT_EQ(build.value(), expected);
  // What utils/__init__.py's run_judge sends; the task becomes the episode's task.
  Result<std::vector<std::string>> judge =
      gateway.Translate({"judge", "--task", "model.py", "--candidate", ".", "--device", "cpu",
                         "--until", "verify", "--json"},
                        workspace_.string());
  ASSERT_TRUE(judge.ok()) << judge.status().ToString();
  expected = {fake_judge_.string(),
              "judge",
              "--candidate",
              workspace_.string(),
              "--device",
              "cpu",
              "--policy",
              "strict",
              "--task",
              "/suite/task.py",
              "--until",
              "verify",
              "--json"};
  expected.insert(expected.end(), options.begin(), options.end());
  EXPECT_EQ(judge.value(), expected);
  // From a subfolder, with --flag=value forms.
  EXPECT_TRUE(gateway
                  .Translate({"judge", "--task=../model.py", "--candidate=..", "--json"},
                             (workspace_ / "kernels").string())
                  .ok());
}

TEST_F(JudgeGatewayTest, TranslatesTheNcuUtility) {
  JudgeGateway gateway(config_);
  // What utils/ncu.py sends; the task becomes the episode's task, the options the session's.
  Result<std::vector<std::string>> profile = gateway.Translate(
      {"profile", "--ncu", "--task", "model.py", "--candidate", ".", "--device", "cpu", "--json"},
      workspace_.string());
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  std::vector<std::string> expected = {
      fake_judge_.string(), "profile", "--candidate", workspace_.string(), "--device", "cpu",
      "--policy",           "strict",  "--task",      "/suite/task.py",    "--ncu",    "--json"};
  const std::vector<std::string> options = JudgeOptionArgs(config_.judge);
  expected.insert(expected.end(), options.begin(), options.end());
  EXPECT_EQ(profile.value(), expected);
}

TEST_F(JudgeGatewayTest, AnNcuReportIsNeverAVerdict) {
  // ncu's report (clocks locked, kernels replayed) must not become the episode's in-loop verdict,
  // whatever it prints.
  Result<std::unique_ptr<JudgeGateway>> gateway = JudgeGateway::Start(config_);
  ASSERT_TRUE(gateway.ok()) << gateway.status().ToString();
  JudgeGateway& gw = *gateway.value();
  Json answer =
      gw.Handle({{"argv", {"profile", "--ncu", "--task", "model.py", "--candidate", ".", "--json"}},
                 {"cwd", workspace_.string()}});
  EXPECT_EQ(answer["exit_code"], 0) << answer.dump();
  EXPECT_NE(answer["stdout"].get<std::string>().find("\"tool\": \"ncu\""), std::string::npos)
      << answer.dump();
  EXPECT_FALSE(gw.Best().has_value());
}

TEST_F(JudgeGatewayTest, CommandsCarryTheSessionsJudgeOptions) {
  config_.judge.candidate_timeout_s = 42;
  config_.judge.trusted_timeout_s = 77.5;
  config_.judge.build_timeout_s = 300;
  config_.judge.cache_dir = "/var/cache/ca";
  config_.judge.compile_baseline = false;
  config_.judge.use_baseline_store = false;
  config_.judge.policy = MakePrecisionPolicy("paper").value();
  JudgeGateway gateway(config_);
  Result<std::vector<std::string>> judge = gateway.Translate(
      {"judge", "--task", "model.py", "--candidate", ".", "--json"}, workspace_.string());
  ASSERT_TRUE(judge.ok()) << judge.status().ToString();
  std::string line;
  for (const std::string& a : judge.value()) line += " " + a;
  for (const char* want :
       {" --policy paper ", " --timeout 42 ", " --task-timeout 77.5 ", " --build-timeout 300 ",
        " --cache-dir /var/cache/ca", " --baselines eager ", " --baseline-store none"}) {
    EXPECT_NE(line.find(want), std::string::npos) << want << " not in" << line;
  }
  // A policy other than the session's is refused, as before.
  EXPECT_FALSE(
      gateway
          .Translate({"judge", "--task", "model.py", "--candidate", ".", "--policy", "strict"},
                     workspace_.string())
          .ok());
  // The time limit of one command follows the same options (no fixed number).
  EXPECT_DOUBLE_EQ(JudgementTimeLimit(config_.judge), 300 + 3 * 77.5 + 3 * 42 + 60);
}

TEST_F(JudgeGatewayTest, RefusesEverythingElse) {
  JudgeGateway gateway(config_);
  const std::string ws = workspace_.string();
  struct Case {
    std::vector<std::string> argv;
    std::string cwd, why;
  } cases[] = {
      {{"sandbox", "run", "--", "sh"}, ws, "only `build`, `judge` and `profile`"},
      {{"workspace", "init"}, ws, "only `build`, `judge` and `profile`"},
      {{"profile", "--task", "model.py", "--candidate", "."}, ws, "with --ncu only"},
      {{"profile", "--ncu", "--task", "/other/task.py", "--candidate", "."},
       ws,
       "--task must be this workspace's model.py"},
      {{"profile", "--ncu", "--task", "model.py", "--candidate", "/etc"},
       ws,
       "--candidate must be this workspace"},
      {{"profile", "--ncu", "--task", "model.py", "--candidate", ".", "--ncu-path", "/bin/sh"},
       ws,
       "--ncu-path is not served"},
      {{"profile", "--ncu", "--task", "model.py", "--candidate", ".", "--raw-out", "/tmp/x"},
       ws,
       "--raw-out is not served"},
      {{"profile", "--ncu=yes", "--task", "model.py", "--candidate", "."},
       ws,
       "--ncu takes no value"},
      {{"profile", "--ncu", "--task", "model.py", "--candidate", ".", "--device", "cuda"},
       ws,
       "device is cpu"},
      {{"judge", "--task", "model.py", "--candidate", "/etc"},
       ws,
       "--candidate must be this workspace"},
      {{"judge", "--task", "model.py", "--candidate", ".."},
       ws,
       "--candidate must be this workspace"},
      {{"judge", "--task", "/other/task.py", "--candidate", "."},
       ws,
       "--task must be this workspace's model.py"},
      {{"judge", "--candidate", "."}, ws, "--task must be"},
      {{"judge", "--task", "model.py", "--candidate", ".", "--device", "cuda"},
       ws,
       "device is cpu"},
      {{"judge", "--task", "model.py", "--candidate", ".", "--policy", "paper"},
       ws,
       "policy is strict"},
      {{"judge", "--task", "model.py", "--candidate", ".", "--cache-dir", "/tmp"},
       ws,
       "--cache-dir is not served"},
      {{"judge", "--task", "model.py", "--candidate", ".", "--keep-work"},
       ws,
       "--keep-work is not served"},
      {{"judge", "--task", "model.py", "--candidate", ".", "--until", "forever"},
       ws,
       "--until expects"},
      {{"judge", "--task", "model.py", "--candidate", ".", "extra"}, ws, "unexpected argument"},
      {{"build", "--candidate", ".", "--out", "/tmp/x.so"},
       ws,
       "--out must be a file of the workspace"},
      {{"build", "--candidate", ".", "--out", "model.py"}, ws, "outside its protected files"},
      {{"build", "--candidate", "."}, ws, "--out is required"},
      {{"build", "--candidate", "."}, "/tmp", "inside the workspace"},
  };
  for (const Case& c : cases) {
    Result<std::vector<std::string>> r = gateway.Translate(c.argv, c.cwd);
    ASSERT_FALSE(r.ok()) << c.argv[0] << " " << c.why;
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
  }
  Json refused = gateway.Handle({{"argv", {"sandbox", "run"}}, {"cwd", ws}});
  EXPECT_EQ(refused["exit_code"], 2);
  EXPECT_NE(refused["stderr"].get<std::string>().find("refused"), std::string::npos);
  EXPECT_EQ(gateway.Handle({{"argv", "judge"}})["exit_code"], 2);
}

TEST_F(JudgeGatewayTest, RoundTripOverTheSocketAndBestVerdict) {
  Result<std::unique_ptr<JudgeGateway>> gateway = JudgeGateway::Start(config_);
  ASSERT_TRUE(gateway.ok()) << gateway.status().ToString();
  JudgeGateway& gw = *gateway.value();
  EXPECT_FALSE(gw.Best().has_value());
  fs::path old_cwd = fs::current_path();
  fs::current_path(workspace_);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int status =
      RunViaJudgeGateway(gw.SocketPath().string(), "judge",
                         {"--task", "model.py", "--candidate", ".", "--until", "verify", "--json"});
  std::string out = testing::internal::GetCapturedStdout();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("\"correct\": true"), std::string::npos) << out;
  EXPECT_NE(err.find("args: judge --candidate " + workspace_.string()), std::string::npos) << err;
  ASSERT_TRUE(gw.Best().has_value());
  EXPECT_EQ(gw.Best()->until, "verify");
  EXPECT_FALSE(gw.Best()->reward.has_value());
  EXPECT_TRUE(gw.Best()->correct);

  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  status = RunViaJudgeGateway(gw.SocketPath().string(), "judge",
                              {"--task", "model.py", "--candidate", ".", "--json"});
  testing::internal::GetCapturedStdout();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 0);
  ASSERT_TRUE(gw.Best()->reward.has_value());
  EXPECT_EQ(*gw.Best()->reward, 2);
  EXPECT_EQ(gw.Best()->until, "profile");

  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  status = RunViaJudgeGateway(gw.SocketPath().string(), "tasks", {"list", "/"});
  testing::internal::GetCapturedStdout();
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("refused"), std::string::npos);
  fs::current_path(old_cwd);
  EXPECT_EQ(gw.Requests(), 3);

  fs::path socket = gw.SocketPath();
  gw.Stop();
  EXPECT_FALSE(fs::exists(socket));
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunViaJudgeGateway(socket.string(), "build", {}), 4);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unreachable"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent
