// replay_client_test.cc — parsing of replay scripts and the replies they play.
#include "llm/replay_client.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

TEST(ReplayClientTest, PlaysTurnsInOrderThenSaysExhausted) {
  TestDir dir("replay");
  std::ofstream(dir.path() / "s.jsonl")
      << "// a comment\n"
      << R"({"content": "look", "tool_calls": [{"name": "Read", "arguments": {"file_path": "model.py"}}]})"
      << "\n\n"
      << R"({"tool_calls": [{"name": "Bash", "arguments": "{not json", "id": "mine"}], "usage": {"prompt_tokens": 12, "completion_tokens": 3}})"
      << "\n"
      << R"({"content": "done"})"
      << "\n";
  Result<std::unique_ptr<LlmClient>> client = MakeReplayClient((dir.path() / "s.jsonl").string());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ(client.value()->Describe(), "replay:" + (dir.path() / "s.jsonl").string());
  Result<ChatResponse> first = client.value()->Chat({});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->message.role, "assistant");
  EXPECT_EQ(first->message.content, "look");
  ASSERT_EQ(first->message.tool_calls.size(), 1u);
  EXPECT_EQ(first->message.tool_calls[0].name, "Read");
  EXPECT_EQ(first->message.tool_calls[0].arguments_text, R"({"file_path":"model.py"})");
  EXPECT_FALSE(first->message.tool_calls[0].id.empty());
  EXPECT_EQ(first->stop_reason, "tool_use");
  Result<ChatResponse> second = client.value()->Chat({});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->message.tool_calls[0].arguments_text, "{not json");  // sent as is
  EXPECT_EQ(second->message.tool_calls[0].id, "mine");
  EXPECT_EQ(second->usage.prompt_tokens, 12);
  EXPECT_EQ(second->usage.completion_tokens, 3);
  Result<ChatResponse> third = client.value()->Chat({});
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->message.tool_calls.empty());
  EXPECT_EQ(third->stop_reason, "end_turn");
  Result<ChatResponse> none = client.value()->Chat({});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "replay script exhausted after 3 turns");
}

TEST(ReplayClientTest, ScriptedErrorFailsThatTurn) {
  Result<std::vector<ChatResponse>> replies =
      ParseReplayScript(R"({"error": "HTTP 503 after 6 attempts"})", "s");
  ASSERT_TRUE(replies.ok());
  TestDir dir("replay");
  std::ofstream(dir.path() / "e.jsonl") << R"({"error": "HTTP 503 after 6 attempts"})"
                                        << "\n";
  auto client = MakeReplayClient((dir.path() / "e.jsonl").string());
  ASSERT_TRUE(client.ok());
  Result<ChatResponse> reply = client.value()->Chat({});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInternal);
  EXPECT_EQ(reply.status().message(), "HTTP 503 after 6 attempts");
}

TEST(ReplayClientTest, BadScriptsNameTheLine) {
  struct Case {
    std::string text, message;
  } cases[] = {
      {"{\"content\": \"ok\"}\n{broken\n", "s:2"},
      {"[1, 2]\n", "s:1: a turn must be a JSON object"},
      {R"({"content": 5})", "s:1: \"content\" must be a string"},
      {R"({"tool_calls": {}})", "s:1: \"tool_calls\" must be an array"},
      {R"({"tool_calls": [{"arguments": {}}]})", "s:1: tool_calls[0] has no name"},
  };
  for (const Case& c : cases) {
    Result<std::vector<ChatResponse>> r = ParseReplayScript(c.text, "s");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(MakeReplayClient("/nonexistent/script.jsonl").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cuda_agent
