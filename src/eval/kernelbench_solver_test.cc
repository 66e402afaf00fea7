// kernelbench_solver_test.cc — `--solver kernelbench:DIR` on folders laid out as KernelBench's
// scripts and leaderboard write them (empty placeholder files: only names and the leaderboard's
// JSON are read): the mapping to the suite's tasks, --sample (an id, a model, best), every file
// that cannot be used listed with its reason, the refusals' messages.
#include <gtest/gtest.h>

#include <fstream>

#include "common/test_dir.h"
#include "eval/kernelbench_layout.h"
#include "eval/solver.h"

namespace cuda_agent {
namespace {

class KernelBenchSolverTest : public ::testing::Test {
 protected:
  static Task Named(const std::string& name, int level) {
    Task t;
    t.name = name;
    t.id = "id-" + name;
    t.level = level;
    return t;
  }
  void Touch(const fs::path& p, const std::string& text = "# placeholder\n") {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::unique_ptr<Solver> Make(const fs::path& dir, const std::string& sample = "") {
    SolverContext ctx;
    ctx.sample = sample;
    Result<std::unique_ptr<Solver>> s = MakeSolver("kernelbench:" + dir.string(), ctx);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(s).value();
  }
  static std::string Reasons(const SolverInventory& inv) {
    std::string out;
    for (const Json& u : inv.unused)
      out += fs::path(u["file"].get<std::string>()).filename().string() + ": " +
             u["reason"].get<std::string>() + "\n";
    return out;
  }
  std::vector<Task> suite_ = {Named("level1/1_Square_matmul", 1), Named("level1/19_ReLU", 1),
                              Named("level2/3_Conv_Add", 2), Named("relu_scale", 0)};
  TestDir tmp_{"kernelbench-solver"};
  const fs::path& dir_ = tmp_.path();
};

TEST_F(KernelBenchSolverTest, ProblemNumbersComeFromTaskNames) {
  EXPECT_EQ(KernelBenchProblemOf(1, "level1/19_ReLU"), std::make_pair(1, 19));
  EXPECT_EQ(KernelBenchProblemOf(3, "level3/4_LeNet5"), std::make_pair(3, 4));
  EXPECT_EQ(KernelBenchProblemOf(0, "19_ReLU"), std::make_pair(0, 0));  // no level
  EXPECT_EQ(KernelBenchProblemOf(1, "level1/ReLU"), std::make_pair(0, 0));
  EXPECT_EQ(KernelBenchProblemOf(1, "level1/19"), std::make_pair(0, 0));
  EXPECT_TRUE(SampleLess("2", "10"));
  EXPECT_TRUE(SampleLess("10", "gpt-o1"));
  EXPECT_TRUE(SampleLess("claude", "gpt-o1"));
}

TEST_F(KernelBenchSolverTest, RunFolderOfGenerateSamples) {
  const fs::path run = dir_ / "runs" / "my_run";
  Touch(run / "level_1_problem_19_sample_0_kernel.py");
  Touch(run / "level_1_problem_19_sample_1_kernel.py");
  Touch(run / "level_1_problem_19_sample_0_prompt.txt");
  Touch(run / "level_1_problem_1_sample_1_kernel.py");    // no sample 0
  Touch(run / "level_1_problem_500_sample_0_kernel.py");  // not a problem of the suite
  Touch(run / "generation_config.yaml");
  Touch(run / "eval_results.json", "{}");
  Touch(run / "notes.py");
  Touch(run / "README.md");
  Touch(run / "old" / "level_1_problem_2_sample_0_kernel.py");
  std::unique_ptr<Solver> s = Make(run);
  ASSERT_TRUE(s->Check().ok()) << s->Check().message();
  EXPECT_EQ(s->Spec(), "kernelbench:" + fs::weakly_canonical(run).string() + " sample=0");

  Solution relu = s->Solve(Named("level1/19_ReLU", 1));
  EXPECT_EQ(relu.candidate_dir,
            fs::weakly_canonical(run) / "level_1_problem_19_sample_0_kernel.py");
  EXPECT_EQ(relu.sample, "0");
  EXPECT_TRUE(relu.samples.empty());

  Solution matmul = s->Solve(Named("level1/1_Square_matmul", 1));
  EXPECT_TRUE(matmul.candidate_dir.empty());
  EXPECT_NE(matmul.note.find("has no sample 0 (it has 1; --sample best judges them all)"),
            std::string::npos)
      << matmul.note;
  Solution conv = s->Solve(Named("level2/3_Conv_Add", 2));
  EXPECT_TRUE(conv.candidate_dir.empty());
  EXPECT_NE(conv.note.find("no file for level 2 problem 3 (level_2_problem_3_sample_0_kernel.py)"),
            std::string::npos)
      << conv.note;

  SolverInventory inv = s->Inventory(suite_);
  EXPECT_EQ(inv.levels, std::vector<int>{1});
  const std::string reasons = Reasons(inv);
  EXPECT_NE(
      reasons.find("level_1_problem_500_sample_0_kernel.py: the suite has no task for level 1 "
                   "problem 500"),
      std::string::npos)
      << reasons;
  EXPECT_NE(reasons.find("notes.py: not a KernelBench solution name"), std::string::npos)
      << reasons;
  EXPECT_NE(reasons.find("README.md: not a solution file (.py)"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("old: a folder: kernelbench:DIR reads the files of one run folder"),
            std::string::npos)
      << reasons;
  EXPECT_EQ(inv.unused.size(), 4u) << reasons;  // the prompt, config and eval JSON are companions
  EXPECT_EQ(inv.summary["layout"], "run");
  EXPECT_EQ(inv.summary["files"], 4);
  EXPECT_EQ(inv.summary["problems"], 2);
  EXPECT_EQ(inv.summary["judged_files"], 1);
  EXPECT_EQ(inv.summary["companions"], 3);
  EXPECT_EQ(inv.summary["samples"], (Json{"0", "1"}));

  // --sample 1 takes sample 1 where there is one; best hands over every sample.
  EXPECT_EQ(Make(run, "01")->Solve(Named("level1/1_Square_matmul", 1)).candidate_dir,
            fs::weakly_canonical(run) / "level_1_problem_1_sample_1_kernel.py");
  Solution best = Make(run, "best")->Solve(Named("level1/19_ReLU", 1));
  EXPECT_TRUE(best.candidate_dir.empty());
  ASSERT_EQ(best.samples.size(), 2u);
  EXPECT_EQ(best.samples[0].label, "0");
  EXPECT_EQ(best.samples[1].label, "1");
  EXPECT_EQ(Make(run, "best")->Inventory(suite_).summary["judged_files"], 3);
  // A model name is for the leaderboard.
  Status bad = Make(run, "gpt-o1")->Check();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      bad.message().find("a sample id of the run (0, 1; KernelBench's fast_p takes 0) or best"),
      std::string::npos)
      << bad.message();
}

TEST_F(KernelBenchSolverTest, SingleSampleScriptAndDuplicates) {
  Touch(dir_ / "generated_kernel_level_2_problem_3.py");
  Touch(dir_ / "prompt_level_2_problem_3.txt");
  Touch(dir_ / "level_2_problem_3_sample_0_kernel.py");  // the same problem and sample
  std::unique_ptr<Solver> s = Make(dir_);
  ASSERT_TRUE(s->Check().ok());
  EXPECT_EQ(s->Solve(Named("level2/3_Conv_Add", 2)).candidate_dir.filename(),
            "generated_kernel_level_2_problem_3.py");
  SolverInventory inv = s->Inventory(suite_);
  EXPECT_EQ(inv.summary["layout"], "run+single");
  EXPECT_NE(Reasons(inv).find("level_2_problem_3_sample_0_kernel.py: the same level, problem and "
                              "sample as generated_kernel_level_2_problem_3.py (that one is used)"),
            std::string::npos)
      << Reasons(inv);
}

TEST_F(KernelBenchSolverTest, LeaderboardAssets) {
  const fs::path assets = dir_ / "KernelBenchLeaderboard" / "docs" / "assets";
  Touch(assets / "raw_data.json", R"([
    {"problem_id": 18, "level": 1, "display_name": "gpt-o1", "file": "aaa"},
    {"problem_id": 18, "level": 1, "display_name": "claude-3.5-sonnet", "file": "bbb"},
    {"problem_id": 0, "level": 1, "display_name": "gpt-o1", "file": "ccc"},
    {"problem_id": 0, "level": 1, "display_name": "gpt-o1", "file": "ddd"},
    {"problem_id": 2, "level": 2, "display_name": "gpt-o1", "file": "missing"},
    {"level": 3}
  ])");
  for (const char* f : {"aaa", "bbb", "ccc", "ddd", "eee"})
    Touch(assets / "solutions" / (std::string(f) + ".py"));
  // The repository, docs/assets and solutions/ all name the same leaderboard.
  for (const fs::path& dir : {dir_ / "KernelBenchLeaderboard", assets, assets / "solutions"}) {
    std::unique_ptr<Solver> s = Make(dir, "gpt-o1");
    ASSERT_TRUE(s->Check().ok()) << dir << ": " << s->Check().message();
    // problem_id 18 is 19_ReLU: raw_data.json counts from 0.
    EXPECT_EQ(s->Solve(Named("level1/19_ReLU", 1)).candidate_dir.filename(), "aaa.py");
    EXPECT_EQ(s->Solve(Named("level1/1_Square_matmul", 1)).candidate_dir.filename(), "ccc.py");
  }
  std::unique_ptr<Solver> claude = Make(assets, "claude-3.5-sonnet");
  EXPECT_EQ(claude->Solve(Named("level1/19_ReLU", 1)).candidate_dir.filename(), "bbb.py");
  EXPECT_TRUE(claude->Solve(Named("level1/1_Square_matmul", 1)).candidate_dir.empty());
  Solution best = Make(assets, "best")->Solve(Named("level1/19_ReLU", 1));
  ASSERT_EQ(best.samples.size(), 2u);
  EXPECT_EQ(best.samples[0].label, "claude-3.5-sonnet");

  // Without --sample the leaderboard is refused with the models to choose from.
  Status s = Make(assets)->Check();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--sample MODEL (one of claude-3.5-sonnet, gpt-o1) or --sample best"),
            std::string::npos)
      << s.message();

  SolverInventory inv = Make(assets, "gpt-o1")->Inventory(suite_);
  const std::string reasons = Reasons(inv);
  EXPECT_NE(reasons.find("ddd.py: a second solution of gpt-o1 for level 1 problem 1 (the first is "
                         "ccc.py)"),
            std::string::npos)
      << reasons;
  EXPECT_NE(reasons.find("missing.py: raw_data.json names it (level 2 problem 3, gpt-o1) but the "
                         "file is missing"),
            std::string::npos)
      << reasons;
  EXPECT_NE(reasons.find("eee.py: not named by raw_data.json"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("raw_data.json: an entry without file, level, problem_id"),
            std::string::npos)
      << reasons;
  EXPECT_EQ(inv.unused.size(), 4u) << reasons;
  EXPECT_EQ(inv.summary["layout"], "leaderboard");
}

TEST_F(KernelBenchSolverTest, ModelClassTextIgnoresDocstringsCommentsSpacingAndInputs) {
  const std::string now =
      "import torch\nclass Model(nn.Module):\n    \"\"\"Doc.\"\"\"\n    def forward(self, x):  # "
      "relu\n"
      "        return torch.relu(x)\n\nN = 4096\ndef get_inputs():\n    return [torch.rand(N)]\n";
  const std::string then =
      "import torch\n\nclass Model(nn.Module):\n    '''Another doc.'''\n    def forward(self,x):\n"
      "        return torch.relu( x )\nN = 16\ndef get_inputs():\n    return [torch.randn(N)]\n";
  EXPECT_EQ(ModelClassText(now), "classModel(nn.Module):defforward(self,x):returntorch.relu(x)");
  EXPECT_EQ(ModelClassText(now), ModelClassText(then));
  std::string other = then;
  other.replace(other.find("relu("), 4, "tanh");
  EXPECT_NE(ModelClassText(now), ModelClassText(other));
  EXPECT_EQ(ModelClassText("class ModelNew(nn.Module):\n    pass\n"), "");
}

TEST_F(KernelBenchSolverTest, LeaderboardSolutionsOfAReplacedProblemAreNotJudged) {
  const fs::path assets = dir_ / "docs" / "assets";
  Touch(assets / "raw_data.json", R"([
    {"problem_id": 18, "level": 1, "display_name": "gpt-o1", "file": "aaa"},
    {"problem_id": 0, "level": 1, "display_name": "gpt-o1", "file": "bbb"}])");
  Touch(assets / "solutions" / "aaa.py");
  Touch(assets / "solutions" / "bbb.py");
  const std::string relu =
      "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n";
  Touch(assets / "problems" / "l1_p19.py", "# then\n" + relu + "N = 1\n");
  Touch(assets / "problems" / "l1_p1.py",
        "class Model(nn.Module):\n    def forward(self, a, b):\n        return a @ b.T\n");
  std::vector<Task> suite = suite_;
  suite[0].code = "class Model(nn.Module):\n    def forward(self, a, b):\n        return a @ b\n";
  suite[1].code = relu + "N = 2\n";
  std::unique_ptr<Solver> s = Make(assets, "gpt-o1");
  EXPECT_EQ(s->Solve(suite[1]).candidate_dir.filename(), "aaa.py");
  Solution replaced = s->Solve(suite[0]);
  EXPECT_TRUE(replaced.candidate_dir.empty());
  EXPECT_NE(replaced.note.find("written for another version of level 1 problem 1: l1_p1.py defines "
                               "another Model than the suite's task"),
            std::string::npos)
      << replaced.note;
  SolverInventory inv = s->Inventory(suite);
  ASSERT_EQ(inv.unused.size(), 1u) << Reasons(inv);
  EXPECT_NE(Reasons(inv).find("bbb.py: written for another version of level 1 problem 1"),
            std::string::npos);
  EXPECT_EQ(inv.summary["problems"], 1);
}

TEST_F(KernelBenchSolverTest, RefusalsNameTheLayouts) {
  Status missing = Make(dir_ / "nope")->Check();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  Touch(dir_ / "solution.py");
  Status empty = Make(dir_)->Check();
  EXPECT_EQ(empty.code(), StatusCode::kNotFound);
  EXPECT_NE(empty.message().find("level_L_problem_P_sample_S_kernel.py (generate_samples.py)"),
            std::string::npos)
      << empty.message();
  Touch(dir_ / "lb" / "raw_data.json", "{\"not\": \"a list\"}");
  fs::create_directories(dir_ / "lb" / "solutions");
  EXPECT_EQ(Make(dir_ / "lb")->Check().code(), StatusCode::kInvalidArgument);
  // A suite that is not a KernelBench folder has nothing to map to.
  Touch(dir_ / "run" / "level_1_problem_19_sample_0_kernel.py");
  SolverInventory inv = Make(dir_ / "run")->Inventory({Named("relu_scale", 0)});
  ASSERT_EQ(inv.unused.size(), 1u);
  EXPECT_NE(Reasons(inv).find("the suite has no KernelBench task names"), std::string::npos);
  EXPECT_TRUE(inv.levels.empty());
}

}  // namespace
}  // namespace cuda_agent
