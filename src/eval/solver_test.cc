// solver_test.cc — where candidates are found in a solutions folder (KernelBench and flat layouts,
// ids), names that cannot escape the folder, the solver specs, and the agent solver in process with
// a replay script on the CPU: unavailable, solving, resuming without solving again, failing to
// start.
#include "eval/solver.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class SolverTest : public ::testing::Test {
 protected:
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

TEST_F(SolverTest, AgentNeedsAHarnessAndAModelSpec) {
  SolverContext ctx;
  Result<std::unique_ptr<Solver>> s = MakeSolver("agent:replay:x", ctx);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value()->Spec(), "agent:replay:x");
  Status check = s.value()->Check();
  EXPECT_EQ(check.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(check.message().find("agent solver unavailable"), std::string::npos) << check.message();
  ctx.episode.env.home = CUDA_AGENT_SOURCE_DIR;
  check = MakeSolver("agent:bogus:thing", ctx).value()->Check();
  EXPECT_EQ(check.code(), StatusCode::kInvalidArgument) << check.message();
}

// AgentContext: episodes on the CPU with the source tree's harness, in dir_/ws.
SolverContext AgentContext(const fs::path& dir) {
  SolverContext ctx;
  ctx.suite = fs::path(CUDA_AGENT_SOURCE_DIR) / "examples" / "relu_scale";
  ctx.work_dir = dir / "ws";
  ctx.episode.judge.device = Device::kCpu;
  ctx.episode.judge.policy = MakePrecisionPolicy("paper").value();
  ctx.episode.env.home = CUDA_AGENT_SOURCE_DIR;
  ctx.episode.binary = ExecutablePath();
  return ctx;
}

TEST_F(SolverTest, AgentSolvesInProcessOnceAndResumes) {
  // The script writes a candidate and stops.
  const fs::path script = dir_ / "script.jsonl";
  std::ofstream(script)
      << Json{{"tool_calls",
               {{{"name", "Write"},
                 {"arguments",
                  {{"file_path", "model_new.py"}, {"content", "class ModelNew: pass\n"}}}}}}}
             .dump()
      << "\n"
      << Json{{"content", "done"}}.dump() << "\n";
  Task task =
      LoadTask((fs::path(CUDA_AGENT_SOURCE_DIR) / "examples" / "relu_scale" / "model.py").string())
          .value();
  task.name = "level1/19_ReLU";
  Result<std::unique_ptr<Solver>> s =
      MakeSolver("agent:replay:" + script.string(), AgentContext(dir_));
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s.value()->Check().ok()) << s.value()->Check().message();
  Solution first = s.value()->Solve(task);
  const fs::path episode = dir_ / "ws" / "level1" / "19_ReLU";
  ASSERT_EQ(first.candidate_dir, episode / "workspace") << first.note;
  EXPECT_NE(first.note.find("model_finished"), std::string::npos) << first.note;
  EXPECT_TRUE(fs::exists(first.candidate_dir / "model_new.py"));
  EXPECT_TRUE(fs::exists(dir_ / "ws" / "level1" / "19_ReLU.agent.log"));
  EXPECT_TRUE(fs::exists(dir_ / "ws" / "level1" / "19_ReLU.solved"));
  Json record = Json::parse(ReadFile(episode / "result.json").value());
  EXPECT_EQ(record["stop_reason"], "model_finished");
  EXPECT_EQ(record["task"], (fs::path(CUDA_AGENT_SOURCE_DIR) / "examples" / "relu_scale").string() +
                                "#level1/19_ReLU");
  EXPECT_EQ(record["device"], "cpu");
  EXPECT_EQ(record["policy"], "paper");
  EXPECT_TRUE(record["judge"].is_null()) << "the benchmark judges, not the episode";

  // Resumed: the marker is there, nothing runs again (the trajectory is untouched).
  const std::string trajectory = ReadFile(episode / "trajectory.jsonl").value();
  Solution again = s.value()->Solve(task);
  EXPECT_EQ(again.candidate_dir, first.candidate_dir);
  EXPECT_NE(again.note.find("solved earlier"), std::string::npos) << again.note;
  EXPECT_EQ(ReadFile(episode / "trajectory.jsonl").value(), trajectory);
}

TEST_F(SolverTest, AgentThatCannotStartGivesNoCandidate) {
  const fs::path script = dir_ / "script.jsonl";
  std::ofstream(script) << Json{{"content", "done"}}.dump() << "\n";
  SolverContext ctx = AgentContext(dir_);
  ctx.episode.env.home = dir_ / "nowhere";  // no workspace template
  Result<std::unique_ptr<Solver>> s = MakeSolver("agent:replay:" + script.string(), ctx);
  Solution none = s.value()->Solve(Named("t"));
  EXPECT_TRUE(none.candidate_dir.empty());
  EXPECT_NE(none.note.find("agent could not start"), std::string::npos) << none.note;
  EXPECT_FALSE(fs::exists(dir_ / "ws" / "t.solved"));
}

}  // namespace
}  // namespace cuda_agent
