// solver_test.cc — where candidates are found in a solutions folder (KernelBench and flat layouts,
// ids), names that cannot escape the folder, the solver specs, and the agent solver against a fake
// `cuda-agent` (a shell script): unavailable, solving, and resuming without solving again.
#include "eval/solver.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class SolverTest : public ::testing::Test {
 protected:
  fs::path Script(const std::string& body) {
    fs::path p = dir_ / "fake-cuda-agent";
    std::ofstream(p) << "#!/bin/sh\n" << body;
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }

  static Task Named(const std::string& name, const std::string& id = "0123abcd") {
    Task t;
    t.name = name;
    t.id = id;
    return t;
  }
  TestDir tmp_{"solver"};
  const fs::path& dir_ = tmp_.path();
};

TEST_F(SolverTest, FindsKernelBenchFlatAndIdLayouts) {
  fs::create_directories(dir_ / "level1" / "19_ReLU");
  fs::create_directories(dir_ / "relu_scale");
  fs::create_directories(dir_ / "row-7");
  fs::create_directories(dir_ / "23_Softmax");
  EXPECT_EQ(FindSolution(dir_, Named("level1/19_ReLU")), dir_ / "level1" / "19_ReLU");
  EXPECT_EQ(FindSolution(dir_, Named("relu_scale")), dir_ / "relu_scale");
  EXPECT_EQ(FindSolution(dir_, Named("some dataset name", "row-7")), dir_ / "row-7");
  EXPECT_EQ(FindSolution(dir_, Named("level2/23_Softmax")), dir_ / "23_Softmax");  // the file stem
  EXPECT_TRUE(FindSolution(dir_, Named("level1/20_LeakyReLU")).empty());
}

TEST_F(SolverTest, NamesCannotLeaveTheFolder) {
  EXPECT_EQ(SafeRelativeName("level1/19_ReLU"), fs::path("level1/19_ReLU"));
  EXPECT_EQ(SafeRelativeName("../../etc/passwd"), fs::path("etc/passwd"));
  EXPECT_EQ(SafeRelativeName("/abs/x"), fs::path("abs/x"));
  EXPECT_EQ(SafeRelativeName("a b:c"), fs::path("a_b_c"));
  EXPECT_EQ(SafeRelativeName(".."), fs::path("_"));
}

TEST_F(SolverTest, SpecsAreParsedAndMissingCandidatesExplained) {
  SolverContext ctx;
  EXPECT_FALSE(MakeSolver("solutions:", ctx).ok());
  EXPECT_FALSE(MakeSolver("model:x", ctx).ok());
  Result<std::unique_ptr<Solver>> s = MakeSolver("solutions:" + dir_.string(), ctx);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value()->Spec(), "solutions:" + fs::weakly_canonical(dir_).string());
  EXPECT_TRUE(s.value()->Check().ok());
  Solution none = s.value()->Solve(Named("level1/19_ReLU"));
  EXPECT_TRUE(none.candidate_dir.empty());
  EXPECT_NE(none.note.find("level1/19_ReLU/ does not exist"), std::string::npos) << none.note;
  EXPECT_EQ(MakeSolver("solutions:" + (dir_ / "nope").string(), ctx).value()->Check().code(),
            StatusCode::kNotFound);
}

TEST_F(SolverTest, AgentUnavailableWhenTheBinaryHasNoSolve) {
  SolverContext ctx;
  ctx.executable = Script("echo \"cuda-agent: unknown command '$1'\" >&2\nexit 2\n");
  Result<std::unique_ptr<Solver>> s = MakeSolver("agent:replay:x", ctx);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value()->Spec(), "agent:replay:x");
  Status check = s.value()->Check();
  EXPECT_FALSE(check.ok());
  EXPECT_NE(check.message().find("agent solver unavailable"), std::string::npos) << check.message();
}

TEST_F(SolverTest, AgentSolvesIntoAWorkspaceOnceAndResumes) {
  // The fake `solve` records its arguments and environment, and writes a candidate into
  // --out/workspace.
  SolverContext ctx;
  ctx.suite = "/suites/kb";
  ctx.work_dir = dir_ / "ws";
  ctx.device = Device::kCpu;
  ctx.policy = "paper";
  ctx.executable = Script(
      "[ $# -eq 1 ] && { echo 'usage: solve TASK' >&2; exit 2; }\n"
      "echo \"$@ $CUDA_AGENT_DEVICE $CUDA_AGENT_POLICY\" >> " +
      (dir_ / "calls").string() +
      "\n"
      "mkdir -p \"$6/workspace/kernels\" && echo 'class ModelNew: pass' > "
      "\"$6/workspace/model_new.py\"\n");
  Result<std::unique_ptr<Solver>> s = MakeSolver("agent:vllm://m", ctx);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s.value()->Check().ok()) << s.value()->Check().message();
  Solution first = s.value()->Solve(Named("level1/19_ReLU"));
  EXPECT_EQ(first.candidate_dir, dir_ / "ws" / "level1" / "19_ReLU" / "workspace");
  EXPECT_TRUE(fs::exists(first.candidate_dir / "model_new.py"));
  EXPECT_TRUE(fs::exists(dir_ / "ws" / "level1" / "19_ReLU.agent.log"));
  Solution again = s.value()->Solve(Named("level1/19_ReLU"));
  EXPECT_EQ(again.candidate_dir, first.candidate_dir);
  std::ifstream calls(dir_ / "calls");
  std::string line, all;
  int n = 0;
  while (std::getline(calls, line)) {
    ++n;
    all += line;
  }
  EXPECT_EQ(n, 1) << all;  // solved once; the second call resumed
  EXPECT_EQ(all, "solve /suites/kb#level1/19_ReLU --model vllm://m --out " +
                     (dir_ / "ws" / "level1" / "19_ReLU").string() + " cpu paper");
}

TEST_F(SolverTest, AgentThatLeavesNothingGivesNoCandidate) {
  SolverContext ctx;
  ctx.work_dir = dir_ / "ws";
  ctx.executable = Script("echo 'model server unreachable' >&2\nexit 1\n");
  Result<std::unique_ptr<Solver>> s = MakeSolver("agent:m", ctx);
  Solution none = s.value()->Solve(Named("t"));
  EXPECT_TRUE(none.candidate_dir.empty());
  EXPECT_NE(none.note.find("model server unreachable"), std::string::npos) << none.note;
}

}  // namespace
}  // namespace cuda_agent
