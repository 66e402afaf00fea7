// rft_test.cc — the rejection fine-tuning filters and the trajectory reader on small in-memory
// episodes (the fixture corpus runs through the binary in tests/rft/test_rft.py).
#include "rft/rft.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

Json Episode() {
  Json bash = {{"name", "Bash"},
               {"parameters",
                {{"type", "object"},
                 {"properties", {{"command", {{"type", "string"}}}}},
                 {"required", {"command"}}}}};
  return {{"version", 1},   {"type", "episode"}, {"task", "t#1"},
          {"task_id", "1"}, {"system", "SKILL"}, {"task_message", "make it fast"},
          {"tools", {bash}}};
}

Json Assistant(int turn, const std::vector<std::string>& commands) {
  Json calls = Json::array();
  for (size_t k = 0; k < commands.size(); ++k) {
    calls.push_back({{"id", "c" + std::to_string(turn) + "_" + std::to_string(k)},
                     {"name", "Bash"},
                     {"arguments", Json{{"command", commands[k]}}.dump()}});
  }
  return {{"version", 1},
          {"type", "assistant"},
          {"turn", turn},
          {"content", "x"},
          {"tool_calls", calls}};
}

std::string Records(const std::vector<std::vector<std::string>>& turns, Json reward = 3,
                    const std::string& stop = "model_finished") {
  std::string text = Episode().dump() + "\n";
  int turn = 0;
  for (const auto& commands : turns) {
    text += Assistant(++turn, commands).dump() + "\n";
    for (size_t k = 0; k < commands.size(); ++k) {
      text +=
          Json{{"version", 1},   {"type", "observation"}, {"turn", turn},     {"tool_call_id", "c"},
               {"tool", "Bash"}, {"text", "ok"},          {"is_error", false}}
              .dump() +
          "\n";
    }
  }
  text += Assistant(++turn, {}).dump() + "\n";
  text += Json{{"version", 1}, {"type", "stop"}, {"reason", stop}, {"turns", turn}}.dump() + "\n";
  text +=
      Json{{"version", 1}, {"type", "final_judgement"}, {"result", {{"reward", reward}}}}.dump() +
      "\n";
  return text;
}

std::string FilterOf(const std::string& records, FilterOptions filters = {}) {
  TrajectoryCorpus corpus = ParseTrajectoryRecords(records, "t.jsonl", "");
  RftOptions options;
  options.filters = filters;
  std::vector<Json> rows;
  RftReport report = FilterTrajectories(corpus, options, &rows);
  if (report.kept == 1) return "kept";
  return report.removals.empty() ? "none" : report.removals.front().filter;
}

TEST(Rft, KeepsAGoodEpisode) { EXPECT_EQ(FilterOf(Records({{"a"}, {"b"}})), "kept"); }

TEST(Rft, OutcomeKeepsRewardAboveZeroByDefault) {
  EXPECT_EQ(FilterOf(Records({{"a"}}, -1)), "outcome");
  EXPECT_EQ(FilterOf(Records({{"a"}}, 0)), "outcome");
  EXPECT_EQ(FilterOf(Records({{"a"}}, 0.5)), "kept");
  FilterOptions at_least_two;
  at_least_two.min_reward = 2;
  EXPECT_EQ(FilterOf(Records({{"a"}}, 1), at_least_two), "outcome");
  EXPECT_EQ(FilterOf(Records({{"a"}}, 2), at_least_two), "kept");
}

TEST(Rft, NullRewardIsNoReward) { EXPECT_EQ(FilterOf(Records({{"a"}}, nullptr)), "no_reward"); }

TEST(Rft, UnfinishedUnlessKept) {
  EXPECT_EQ(FilterOf(Records({{"a"}}, 3, "max_turns")), "unfinished");
  FilterOptions keep;
  keep.keep_unfinished = true;
  EXPECT_EQ(FilterOf(Records({{"a"}}, 3, "max_turns"), keep), "kept");
}

TEST(Rft, RepeatedCallsCountCanonicalArguments) {
  EXPECT_EQ(FilterOf(Records({{"a"}, {"a"}})), "kept");
  EXPECT_EQ(FilterOf(Records({{"a"}, {"a", "a"}})), "repeated_calls");
  // Key order and spacing do not make two calls different.
  TrajectoryToolCall x{"1", "Bash", R"({"command": "a", "timeout": 5})"};
  TrajectoryToolCall y{"2", "Bash", R"({"timeout":5,"command":"a"})"};
  EXPECT_EQ(CallKey(x), CallKey(y));
}

TEST(Rft, LoopNeedsAFullCycleRepeated) {
  EXPECT_EQ(FilterOf(Records({{"e"}, {"c"}, {"e"}, {"c"}})), "kept");
  EXPECT_EQ(FilterOf(Records({{"e"}, {"c"}, {"e"}, {"c"}, {"e"}, {"c"}})), "loop");
  EXPECT_EQ(FilterOf(Records({{"a", "b", "c"}, {"a", "b", "c"}, {"a", "b", "c"}})), "loop");
}

TEST(Rft, InvalidToolCalls) {
  std::string unknown = Records({{"a"}});
  size_t at = unknown.rfind(R"("name":"Bash")");
  unknown.replace(at, 13, R"("name":"Grep")");
  EXPECT_EQ(FilterOf(unknown), "invalid_tool_call");
  std::string missing = Records({{"a"}});
  at = missing.find(R"(\"command\")");
  missing.replace(at, 11, R"(\"cmd\")");
  EXPECT_EQ(FilterOf(missing), "invalid_tool_call");
}

TEST(Rft, OverLongByTurns) {
  FilterOptions two_turns;
  two_turns.max_turns = 2;
  EXPECT_EQ(FilterOf(Records({{"a"}, {"b"}}), two_turns), "over_long");  // 3 assistant turns
}

TEST(Rft, BadLinesAreReportedWithTheirLine) {
  std::string text = Records({{"a"}});
  text.insert(text.find('\n') + 1, "{\"version\": 1, \"type\": \"assis\n");
  TrajectoryCorpus corpus = ParseTrajectoryRecords(text, "ep.jsonl", "");
  ASSERT_EQ(corpus.trajectories.size(), 1u);
  ASSERT_FALSE(corpus.trajectories[0].problems.empty());
  EXPECT_EQ(corpus.trajectories[0].problems[0].rfind("ep.jsonl:2: not a JSON object", 0), 0u);
  EXPECT_EQ(FilterOf(text), "bad_input");
}

TEST(Rft, UnknownVersionAndOrphanRecords) {
  TrajectoryCorpus corpus = ParseTrajectoryRecords(
      "{\"version\": 1, \"type\": \"stop\"}\n{\"version\": 7, \"type\": \"episode\"}\n", "f", "");
  ASSERT_EQ(corpus.problems.size(), 2u);
  EXPECT_NE(corpus.problems[0].find("f:1: a 'stop' record before any 'episode' record"),
            std::string::npos);
  EXPECT_NE(corpus.problems[1].find("f:2: unknown schema version 7"), std::string::npos);
}

TEST(Rft, SftRowIsOpenAiChat) {
  TrajectoryCorpus corpus = ParseTrajectoryRecords(Records({{"ls"}}), "t", "");
  Json row = SftRow(corpus.trajectories.at(0));
  ASSERT_EQ(row["messages"].size(), 5u);  // system, user, assistant+call, tool, final answer
  EXPECT_EQ(row["messages"][2]["tool_calls"][0]["function"]["name"], "Bash");
  EXPECT_EQ(row["messages"][2]["tool_calls"][0]["function"]["arguments"], R"({"command":"ls"})");
  EXPECT_EQ(row["messages"][3]["role"], "tool");
  EXPECT_EQ(row["tools"][0]["type"], "function");
  EXPECT_EQ(row["meta"]["reward"], 3);
}

}  // namespace
}  // namespace cuda_agent
