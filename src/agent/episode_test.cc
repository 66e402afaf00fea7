// episode_test.cc — RunEpisode with a replay script on the CPU (real workspace, sandbox and
// session) and a stand-in judge service: the files of the episode folder, the grade, progress,
// interruption, and a folder that holds an episode already.
#include "agent/episode.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class FixedJudge : public JudgeService {
 public:
  JudgeResult Evaluate(const JudgeRequest& request) override {
    workspaces.push_back(request.workspace);
    JudgeResult r;
    r.reward = 1;
    r.correct = true;
    r.stage = Stage::kDone;
    r.reason = "fixed";
    return r;
  }
  std::string Describe() const override { return "fixed"; }
  std::vector<fs::path> workspaces;
};

std::vector<Json> Records(const fs::path& path) {
  std::vector<Json> out;
  std::istringstream lines(ReadFile(path).value());
  std::string line;
  while (std::getline(lines, line)) out.push_back(Json::parse(line));
  return out;
}

class EpisodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TestDir>("episode");
    const fs::path source = CUDA_AGENT_SOURCE_DIR;
    spec_.task_spec = (source / "examples" / "relu_scale" / "model.py").string();
    Result<Task> task = LoadTask(spec_.task_spec);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    spec_.task = task.value();
    spec_.out = dir_->path() / "ep";
    spec_.judge.device = Device::kCpu;
    spec_.binary = ExecutablePath();
    spec_.env.home = source;
  }
  // Client plays `turns` (replay script lines).
  std::unique_ptr<LlmClient> Client(const std::vector<Json>& turns) {
    const fs::path script = dir_->path() / "script.jsonl";
    std::string text;
    for (const Json& t : turns) text += t.dump() + "\n";
    EXPECT_TRUE(WriteFileAtomic(script, text).ok());
    spec_.model_spec = "replay:" + script.string();
    Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(spec_.model_spec, {});
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(client).value();
  }

  std::unique_ptr<TestDir> dir_;
  EpisodeSpec spec_;
  FixedJudge judge_;
};

TEST_F(EpisodeTest, RunsTheLoopWritesTheRecordsAndGrades) {
  std::unique_ptr<LlmClient> client = Client({
      {{"tool_calls",
        {{{"name", "Write"},
          {"arguments", {{"file_path", "kernels/k.cpp"}, {"content", "int k;\n"}}}}}}},
      {{"tool_calls", {{{"name", "Bash"}, {"arguments", {{"command", "ls kernels"}}}}}}},
      {{"content", "done"}},
  });
  std::vector<EpisodeProgress> progress;
  EpisodeResult r =
      RunEpisode(spec_, *client, judge_, [&](const EpisodeProgress& p) { progress.push_back(p); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.loop.stop_reason, "model_finished");
  EXPECT_EQ(r.loop.turns, 3);
  ASSERT_TRUE(r.judgement.has_value());
  EXPECT_EQ(r.judgement->reward, 1);

  const fs::path out = dir_->path() / "ep";
  Json record = Json::parse(ReadFile(out / "result.json").value());
  EXPECT_EQ(record, r.record);
  EXPECT_EQ(record["version"], 1);
  EXPECT_EQ(record["stop_reason"], "model_finished");
  EXPECT_EQ(record["reward"], 1);
  EXPECT_EQ(record["judge"]["reason"], "fixed");
  EXPECT_EQ(record["device"], "cpu");
  EXPECT_EQ(record["policy"], "strict");
  EXPECT_EQ(record["task_id"], spec_.task.id);
  EXPECT_EQ(record["tool_calls"], 2);
  EXPECT_EQ(record["tool_errors"], 0);
  EXPECT_TRUE(record["best_in_loop"].is_null());
  for (const char* key :
       {"task", "task_name", "model", "workspace", "turns", "tokens_in", "tokens_out",
        "tokens_estimated", "llm_seconds", "llm_attempts", "elided_observations", "wall_s"}) {
    EXPECT_TRUE(record.contains(key)) << key;
  }
  ASSERT_EQ(judge_.workspaces.size(), 1u);
  EXPECT_EQ(judge_.workspaces[0], fs::canonical(out / "workspace"));
  EXPECT_EQ(ReadFile(out / "workspace" / "kernels" / "k.cpp").value(), "int k;\n");

  std::vector<Json> records = Records(out / "trajectory.jsonl");
  ASSERT_GE(records.size(), 3u);
  EXPECT_EQ(records.front()["type"], "episode");
  EXPECT_EQ(records.front()["tools"].size(), 10u);
  EXPECT_EQ(records[records.size() - 2]["type"], "stop");
  EXPECT_EQ(records.back()["type"], "final_judgement");
  EXPECT_EQ(records.back()["result"]["reward"], 1);
  int observations = 0;
  for (const Json& rec : records) observations += rec["type"] == "observation";
  EXPECT_EQ(observations, 2);

  // Progress: the start, three turns, the grade.
  ASSERT_EQ(progress.size(), 5u);
  EXPECT_EQ(progress[0].phase, EpisodeProgress::Phase::kStarted);
  EXPECT_EQ(progress[0].client, client->Describe());
  EXPECT_EQ(progress[2].phase, EpisodeProgress::Phase::kTurn);
  EXPECT_EQ(progress[2].turn.last_tool, "Bash: ls kernels");
  EXPECT_EQ(progress[4].phase, EpisodeProgress::Phase::kGrading);
  EXPECT_EQ(progress[4].stop_reason, "model_finished");

  // One folder, one episode: a second run writes nothing there.
  const std::string before = ReadFile(out / "result.json").value();
  std::unique_ptr<LlmClient> second = Client({{{"content", "x"}}});
  EpisodeResult again = RunEpisode(spec_, *second, judge_);
  EXPECT_EQ(again.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status.message().find("exists already"), std::string::npos);
  EXPECT_EQ(ReadFile(out / "result.json").value(), before);
  EXPECT_EQ(EpisodeNotRun(spec_, "llm_error: x").status.code(), StatusCode::kFailedPrecondition);
}

TEST_F(EpisodeTest, InterruptedEpisodesAreStillGradedAndUngradedOnesLeaveNoJudgement) {
  std::atomic<bool> interrupted{true};
  std::unique_ptr<LlmClient> client = Client({{{"content", "never asked"}}});
  EpisodeResult r = RunEpisode(spec_, *client, judge_, {}, &interrupted);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.record["stop_reason"], "interrupted");
  EXPECT_EQ(r.record["turns"], 0);
  EXPECT_EQ(r.record["reward"], 1);

  spec_.out = dir_->path() / "ungraded";
  spec_.grade = false;
  client = Client({{{"content", "done"}}});
  r = RunEpisode(spec_, *client, judge_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.record["stop_reason"], "model_finished");
  EXPECT_TRUE(r.record["judge"].is_null());
  EXPECT_TRUE(r.record["reward"].is_null());
  EXPECT_FALSE(r.judgement.has_value());
  EXPECT_EQ(judge_.workspaces.size(), 1u);  // only the first episode was graded
}

TEST_F(EpisodeTest, AnEpisodeThatCannotStartSaysWhyInResultJson) {
  EpisodeResult r = EpisodeNotRun(spec_, "llm_error: bad model spec");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  Json record = Json::parse(ReadFile(dir_->path() / "ep" / "result.json").value());
  EXPECT_EQ(record["stop_reason"], "llm_error: bad model spec");
  EXPECT_EQ(record["task_id"], spec_.task.id);
  EXPECT_TRUE(record["reward"].is_null());

  // A harness without the workspace template: the session cannot open; result.json says why.
  spec_.out = dir_->path() / "no-template";
  spec_.env.home = dir_->path() / "nowhere";
  std::unique_ptr<LlmClient> client = Client({{{"content", "x"}}});
  EpisodeResult failed = RunEpisode(spec_, *client, judge_);
  EXPECT_EQ(failed.status.code(), StatusCode::kInternal);
  Json why = Json::parse(ReadFile(dir_->path() / "no-template" / "result.json").value());
  EXPECT_EQ(why["stop_reason"].get<std::string>().rfind("internal_error: ", 0), 0u) << why.dump();
  EXPECT_TRUE(judge_.workspaces.empty());
}

}  // namespace
}  // namespace cuda_agent
