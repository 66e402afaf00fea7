// ncu_run_test.cc — finding ncu, its command line, and what a run tells the agent, with FAKE ncu
// scripts (this machine has no GPU): one refused the counters (ERR_NVGPUCTRPERM), one that cannot
// replay a kernel, one that does not know an option, one that writes the constructed raw page to
// its --log-file. Each fake runs through the real job runner with ncu as the wrapper, as
// ProfileWithNcu runs the real one. The CPU device answers "needs a GPU" with no numbers.
#include "ncu/ncu_run.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "common/host_environment.h"
#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// A fake ncu: a shell script whose body follows the given lines.
fs::path WriteFakeNcu(const fs::path& dir, const std::string& body) {
  fs::path path = dir / "ncu";
  EXPECT_TRUE(WriteFileAtomic(path, "#!/bin/sh\n" + body).ok());
  chmod(path.c_str(), 0755);
  return path;
}

// RunFake runs the `ncu_target` job under the fake ncu exactly as ProfileWithNcu wraps it (no
// sandbox: the fakes never start the program), and interprets the run.
NcuReport RunFake(const TestDir& dir, const fs::path& fake) {
  HarnessEnv env;
  env.home = CUDA_AGENT_SOURCE_DIR;
  fs::path log = dir.path() / "ncu.csv";
  JobSandbox box;
  box.wrapper = NcuArgs(fake.string(), log, 32);
  NcuRun run;
  run.timeout_s = 30;
  Result<JobOutcome> job =
      RunHarnessJob(env, "ncu_target", Json{{"device", "cuda"}}, dir.path() / "jobs", 30, &box);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  if (job.ok()) run.job = std::move(job).value();
  Result<std::string> text = ReadFile(log);
  if (text.ok()) run.log = text.value();
  NcuReport report;
  InterpretNcuRun(run, {"_Z22relu_scale_vec4_kernelPK6float4PS_lf"}, &report);
  return report;
}

TEST(NcuRun, FakeNcuRefusedCountersGivesTheDocumentedFix) {
  TestDir dir("ncu-fake-perm");
  fs::path fake = WriteFakeNcu(
      dir.path(),
      "echo '==PROF== Connected to process 4242'\n"
      "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0. For instructions on enabling permissions and "
      "to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM'\n"
      "exit 1\n");
  NcuReport report = RunFake(dir, fake);
  EXPECT_EQ(report.status, "not_permitted");
  EXPECT_NE(report.message.find("ERR_NVGPUCTRPERM"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  EXPECT_TRUE(report.kernels.empty());
  EXPECT_EQ(NcuExitStatus(report), 4);
  EXPECT_NE(NcuReportText(report).find("ncu may not read the GPU's performance counters"),
            std::string::npos);
}

TEST(NcuRun, FakeNcuThatCannotReplayAKernel) {
  TestDir dir("ncu-fake-replay");
  fs::path fake = WriteFakeNcu(dir.path(),
                               "echo '==ERROR== Failed to profile \"relu_scale_vec4_kernel\" in "
                               "process 4242: kernel replay failed'\nexit 1\n");
  NcuReport report = RunFake(dir, fake);
  EXPECT_EQ(report.status, "replay_failed");
  EXPECT_NE(report.message.find("could not profile (replay)"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("relu_scale_vec4_kernel"), std::string::npos);
  EXPECT_EQ(NcuExitStatus(report), 1);
}

TEST(NcuRun, FakeNcuOwnErrorIsNamed) {
  TestDir dir("ncu-fake-option");
  fs::path fake = WriteFakeNcu(
      dir.path(), "echo \"==ERROR== unrecognised option '--print-units'\" >&2\nexit 1\n");
  NcuReport report = RunFake(dir, fake);
  EXPECT_EQ(report.status, "ncu_error");
  EXPECT_NE(report.message.find("unrecognised option '--print-units'"), std::string::npos)
      << report.message;
}

TEST(NcuRun, FakeNcuReportThroughTheLogFile) {
  TestDir dir("ncu-fake-ok");
  fs::path fixture = fs::path(CUDA_AGENT_SOURCE_DIR) / "tests" / "ncu" / "fixtures" /
                     "ncu_constructed_relu_scale.csv";
  // Finds the value of --log-file among its arguments and writes the constructed page there.
  fs::path fake = WriteFakeNcu(dir.path(),
                               "while [ $# -gt 0 ]; do\n"
                               "  if [ \"$1\" = --log-file ]; then cp '" +
                                   fixture.string() +
                                   "' \"$2\"; fi\n"
                                   "  shift\n"
                                   "done\nexit 0\n");
  NcuReport report = RunFake(dir, fake);
  EXPECT_EQ(report.status, "ok") << report.message;
  ASSERT_EQ(report.kernels.size(), 1u);
  EXPECT_EQ(report.kernels[0].key, "relu_scale_vec4_kernel");
  EXPECT_EQ(report.other_kernels.size(), 1u);
  EXPECT_EQ(NcuExitStatus(report), 0);
  // The fake never ran the program: the report says the call did not finish cleanly.
  bool noted = false;
  for (const std::string& n : report.notes)
    noted = noted || n.find("forward call failed") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(NcuRun, CommandLine) {
  std::vector<std::string> args = NcuArgs("/opt/ncu", "/w/ncu.csv", 7);
  std::string line;
  for (const std::string& a : args) line += " " + a;
  EXPECT_EQ(args[0], "/opt/ncu");
  for (const char* want :
       {" --profile-from-start off ", " --csv ", " --page raw ", " --print-units base ",
        " --print-kernel-base mangled ", " --launch-count 7 ", " --log-file /w/ncu.csv",
        " --section SpeedOfLight ", " --section Occupancy ", " --section LaunchStats ",
        " --section MemoryWorkloadAnalysis ", "dram__bytes_read.sum", " --clock-control base "}) {
    EXPECT_NE(line.find(want), std::string::npos) << want << " not in" << line;
  }
}

TEST(NcuRun, FindNcu) {
  TestDir dir("ncu-find");
  EXPECT_FALSE(FindNcu((dir.path() / "nope").string(), {}).ok());
  EXPECT_NE(FindNcu((dir.path() / "nope").string(), {}).status().message().find("nope"),
            std::string::npos);
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  setenv("PATH", (dir.path() / "empty").c_str(), 1);
  CaptureHostEnvironment();
  fs::path home = dir.path() / "cuda";
  Result<std::string> missing = FindNcu("", {home});
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find((home / "bin" / "ncu").string()), std::string::npos);
  fs::create_directories(home / "bin");
  fs::path in_home = WriteFakeNcu(home / "bin", "exit 0\n");
  Result<std::string> found = FindNcu("", {dir.path() / "other", home});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found.value(), in_home.string());
  // PATH comes before the CUDA folders.
  fs::create_directories(dir.path() / "onpath");
  fs::path on_path = WriteFakeNcu(dir.path() / "onpath", "exit 0\n");
  setenv("PATH", (dir.path() / "onpath").c_str(), 1);
  CaptureHostEnvironment();
  EXPECT_EQ(FindNcu("", {home}).value(), on_path.string());
  setenv("PATH", saved.c_str(), 1);
  CaptureHostEnvironment();
}

TEST(NcuRun, CpuDeviceNeedsAGpuAndMakesNoNumbers) {
  HarnessEnv env;
  env.home = CUDA_AGENT_SOURCE_DIR;
  Task task;
  task.name = "relu_scale";
  task.code = "class Model: pass\n";
  NcuOptions options;
  options.judge.device = Device::kCpu;
  NcuReport report = ProfileWithNcu(env, task, Candidate(), "cand", options);
  EXPECT_EQ(report.status, "needs_gpu");
  EXPECT_NE(report.message.find("ncu needs a GPU"), std::string::npos) << report.message;
  EXPECT_TRUE(report.kernels.empty());
  EXPECT_FALSE(report.roofline.available);
  EXPECT_EQ(NcuExitStatus(report), 4);
  Json j = NcuReportToJson(report);
  EXPECT_EQ(j["status"], "needs_gpu");
  EXPECT_TRUE(j["kernels"].empty());
}

TEST(NcuRun, MissingNcuIsAClearMessage) {
  HarnessEnv env;
  env.home = CUDA_AGENT_SOURCE_DIR;
  Task task;
  task.name = "relu_scale";
  NcuOptions options;
  options.judge.device = Device::kCuda;
  options.ncu_path = "/nonexistent/ncu";
  NcuReport report = ProfileWithNcu(env, task, Candidate(), "cand", options);
  EXPECT_EQ(report.status, "ncu_missing");
  EXPECT_NE(report.message.find("not installed"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("/nonexistent/ncu"), std::string::npos) << report.message;
  EXPECT_EQ(NcuExitStatus(report), 4);
}

// The profiled ModelNew is loaded under the judgement's rules: under kernelbench the job's spec
// says weights by position (and torch's compute), under strict neither; the backend flags are the
// policy's.
TEST(NcuRun, TargetSpecCarriesThePolicyRules) {
  NcuOptions options;
  options.judge.policy = MakePrecisionPolicy("kernelbench").value();
  Json spec = NcuTargetSpec("t/model.py", "snap", "build", options);
  EXPECT_EQ(spec["policy_rules"], (Json{{"torch_compute", true}, {"weights_by_position", true}}));
  EXPECT_EQ(spec["backend_flags"], options.judge.policy.candidate.ToJson());
  EXPECT_EQ(spec["device"], "cuda");
  EXPECT_EQ(spec["task_path"], fs::absolute("t/model.py").string());
  options.judge.policy = MakePrecisionPolicy("strict").value();
  spec = NcuTargetSpec("t/model.py", "snap", "build", options);
  EXPECT_EQ(spec["policy_rules"], (Json{{"torch_compute", false}, {"weights_by_position", false}}));
}

}  // namespace
}  // namespace cuda_agent
