// agent_loop_test.cc — the loop with a scripted client and a stand-in tool: what each request
// holds, how observations are appended, the stop reasons, and the trajectory records.
#include "agent/agent_loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// ScriptedClient answers from a list and keeps every request it got.
class ScriptedClient : public LlmClient {
 public:
  explicit ScriptedClient(std::vector<Result<ChatResponse>> replies)
      : replies_(std::move(replies)) {}
  Result<ChatResponse> Chat(const ChatRequest& request) override {
    requests.push_back(request);
    if (next_ >= replies_.size()) return NotFound("script exhausted");
    return replies_[next_++];
  }
  std::string Describe() const override { return "scripted"; }
  std::vector<ChatRequest> requests;

 private:
  std::vector<Result<ChatResponse>> replies_;
  size_t next_ = 0;
};

// EchoTool returns its text argument; "fail" makes an error observation, "big" 2000 characters.
class EchoTool : public Tool {
 public:
  ToolSpec Spec() const override {
    return {"Echo", "echo",
            Json{{"type", "object"},
                 {"properties", {{"text", {{"type", "string"}}}}},
                 {"required", {"text"}}}};
  }
  Observation Run(const Json& args, ToolContext&) override {
    std::string text = args["text"].get<std::string>();
    if (text == "big") return {std::string(2000, 'z'), false};
    return {text, text == "fail"};
  }
};

ChatResponse Reply(const std::string& content, std::vector<ToolCall> calls,
                   long prompt_tokens = 0) {
  ChatResponse r;
  r.message.role = "assistant";
  r.message.content = content;
  r.message.tool_calls = std::move(calls);
  r.usage.prompt_tokens = prompt_tokens;
  r.usage.completion_tokens = prompt_tokens > 0 ? 5 : 0;
  r.seconds = 0.5;
  r.attempts = 2;
  return r;
}

std::vector<Json> ReadRecords(const fs::path& path) {
  std::vector<Json> out;
  std::istringstream lines(ReadFile(path).value());
  std::string line;
  while (std::getline(lines, line)) out.push_back(Json::parse(line));
  return out;
}

class AgentLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TestDir>("agent-loop");
    tools_.Add(std::make_unique<EchoTool>());
    context_.workspace = dir_->path();
    config_.system_prompt = "SYSTEM";
    config_.task_message = "TASK";
    config_.max_turns = 10;
    ASSERT_TRUE(trajectory_.Open(dir_->path() / "t.jsonl").ok());
  }
  std::unique_ptr<TestDir> dir_;
  ToolRegistry tools_;
  ToolContext context_;
  LoopConfig config_;
  TrajectoryWriter trajectory_;
  // Run runs the loop with the registry above as its tools.
  LoopSummary Run(LlmClient& client, const std::function<void(const TurnProgress&)>& on_turn = {}) {
    return RunReactLoop(
        client, tools_.Specs(),
        [&](const std::string& tool, const std::string& args) {
          return tools_.Call(tool, args, context_);
        },
        config_, trajectory_, on_turn);
  }
};

TEST_F(AgentLoopTest, RunsToolsAppendsObservationsAndStopsWhenTheModelAnswers) {
  ScriptedClient client(
      {Reply("one", {{"a", "Echo", R"({"text": "hi"})"}, {"", "Echo", R"({"text": "fail"})"}}, 100),
       Reply("two", {{"b", "Nope", "{}"}, {"c", "Echo", "{broken"}}), Reply("done", {})});
  std::vector<TurnProgress> progress;
  LoopSummary s = Run(client, [&](const TurnProgress& p) { progress.push_back(p); });
  EXPECT_EQ(s.stop_reason, "model_finished");
  EXPECT_EQ(s.turns, 3);
  EXPECT_EQ(s.tool_calls, 4);
  EXPECT_EQ(s.tool_errors, 3);
  EXPECT_EQ(s.llm_attempts, 6);
  EXPECT_TRUE(s.tokens_estimated);
  ASSERT_EQ(client.requests.size(), 3u);
  EXPECT_EQ(client.requests[0].system, "SYSTEM");
  ASSERT_EQ(client.requests[0].messages.size(), 1u);
  EXPECT_EQ(client.requests[0].messages[0].content, "TASK");
  EXPECT_EQ(client.requests[0].tools.size(), 1u);
  // The second request: task, assistant, two observations (ids filled in where the provider gave
  // none).
  const auto& second = client.requests[1].messages;
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[1].role, "assistant");
  EXPECT_EQ(second[2].role, "tool");
  EXPECT_EQ(second[2].tool_call_id, "a");
  EXPECT_EQ(second[2].content, "hi");
  EXPECT_FALSE(second[2].is_error);
  EXPECT_EQ(second[3].tool_call_id, "call_1_2");
  EXPECT_TRUE(second[3].is_error);
  const auto& third = client.requests[2].messages;
  ASSERT_EQ(third.size(), 7u);
  EXPECT_NE(third[5].content.find("unknown tool 'Nope'"), std::string::npos);
  EXPECT_NE(third[6].content.find("not valid JSON"), std::string::npos);
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress[0].last_tool, "Echo");  // no command/file_path/pattern/id argument to show
  EXPECT_EQ(progress[1].tool_errors, 2);

  std::vector<Json> records = ReadRecords(dir_->path() / "t.jsonl");
  std::vector<std::string> types;
  for (const Json& r : records) {
    EXPECT_EQ(r["version"], 1);
    types.push_back(r["type"]);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"assistant", "observation", "observation", "turn",
                                             "assistant", "observation", "observation", "turn",
                                             "assistant", "turn", "stop"}));
  EXPECT_EQ(records[0]["tool_calls"][0]["arguments"], R"({"text": "hi"})");
  EXPECT_EQ(records[0]["usage"]["prompt_tokens"], 100);
  EXPECT_EQ(records[0]["attempts"], 2);
  EXPECT_EQ(records[6]["text"].get<std::string>().substr(0, 6), "Error:");
  EXPECT_EQ(records.back()["reason"], "model_finished");
}

TEST_F(AgentLoopTest, StopsAtTheTurnLimit) {
  config_.max_turns = 2;
  ScriptedClient client({Reply("", {{"a", "Echo", R"({"text": "x"})"}}),
                         Reply("", {{"b", "Echo", R"({"text": "y"})"}}), Reply("never", {})});
  LoopSummary s = Run(client);
  EXPECT_EQ(s.stop_reason, "max_turns");
  EXPECT_EQ(s.turns, 2);
  EXPECT_EQ(client.requests.size(), 2u);
}

TEST_F(AgentLoopTest, LlmErrorEndsTheEpisode) {
  ScriptedClient client({Reply("", {{"a", "Echo", R"({"text": "x"})"}}),
                         Result<ChatResponse>(Internal("HTTP 500 after 6 attempts"))});
  LoopSummary s = Run(client);
  EXPECT_EQ(s.stop_reason, "llm_error: HTTP 500 after 6 attempts");
  EXPECT_EQ(s.turns, 1);
  std::vector<Json> records = ReadRecords(dir_->path() / "t.jsonl");
  EXPECT_EQ(records[records.size() - 2]["type"], "llm_error");
  EXPECT_EQ(records[records.size() - 2]["code"], "internal");
}

TEST_F(AgentLoopTest, ContextBudgetElidesOldObservations) {
  // Observations of 2000 chars (~500 tokens); limit 1500 tokens; the last 2 messages kept.
  config_.budget = {.context_tokens = 2500, .max_output_tokens = 1000, .keep_last = 2};
  std::vector<Result<ChatResponse>> replies;
  for (int i = 0; i < 8; ++i)
    replies.push_back(Reply("", {{"c" + std::to_string(i), "Echo", R"({"text": "big"})"}}));
  ScriptedClient client(replies);
  LoopSummary s = Run(client);
  EXPECT_EQ(s.stop_reason, "llm_error: script exhausted");  // it never ran out of context
  EXPECT_GE(s.elided_observations, 5);
  ASSERT_EQ(client.requests.size(), 9u);
  const ChatRequest& last = client.requests.back();
  EXPECT_EQ(last.messages[0].content, "TASK");
  EXPECT_EQ(last.messages[2].content, "[observation of Echo elided: 2000 chars]");
  EXPECT_EQ(last.messages.back().content, std::string(2000, 'z'));
  for (const ChatRequest& r : client.requests) {
    EXPECT_LE(ContextBudget(config_.budget).Estimate(r.system, r.tools, r.messages), 1500);
  }
}

TEST_F(AgentLoopTest, ContextBudgetStopsWhenElidingCannotFit) {
  // Tool-call arguments are never elided: 2000-char arguments fill the budget in a few turns.
  config_.budget = {.context_tokens = 2500, .max_output_tokens = 1000, .keep_last = 2};
  std::string big(2000, 'a');
  std::vector<Result<ChatResponse>> replies;
  for (int i = 0; i < 8; ++i)
    replies.push_back(Reply("", {{"c" + std::to_string(i), "Echo", Json{{"text", big}}.dump()}}));
  ScriptedClient client(replies);
  LoopSummary s = Run(client);
  EXPECT_EQ(s.stop_reason, "context_budget");
  EXPECT_GE(s.elided_observations, 1);
  EXPECT_LT(client.requests.size(), 8u);
  std::vector<Json> records = ReadRecords(dir_->path() / "t.jsonl");
  EXPECT_EQ(records[records.size() - 2]["type"], "context_exhausted");
}

TEST_F(AgentLoopTest, InterruptStopsBetweenTurns) {
  std::atomic<bool> interrupted{true};
  config_.interrupted = &interrupted;
  ScriptedClient client({Reply("", {})});
  LoopSummary s = Run(client);
  EXPECT_EQ(s.stop_reason, "interrupted");
  EXPECT_TRUE(client.requests.empty());
}

TEST_F(AgentLoopTest, TimeLimitStopsBetweenTurns) {
  config_.time_limit_s = 0.05;
  // Each turn's tool sleeps past the limit: the first turn runs, the second never starts.
  class SlowTool : public Tool {
   public:
    ToolSpec Spec() const override { return {"Slow", "sleeps", Json{{"type", "object"}}}; }
    Observation Run(const Json&, ToolContext&) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return {"slept", false};
    }
  };
  tools_.Add(std::make_unique<SlowTool>());
  ScriptedClient client({Reply("", {{"a", "Slow", "{}"}}), Reply("", {{"b", "Slow", "{}"}})});
  LoopSummary s = Run(client);
  EXPECT_EQ(s.stop_reason, "time_limit");
  EXPECT_EQ(s.turns, 1);
  EXPECT_EQ(client.requests.size(), 1u);
}

TEST(SummariseCallTest, ShortArgumentSummaries) {
  EXPECT_EQ(SummariseCall({"1", "Bash", R"({"command": "bash utils/compile.sh\necho"})"}),
            "Bash: bash utils/compile.sh echo");
  EXPECT_EQ(SummariseCall({"1", "Edit", R"({"file_path": "kernels/a.cu", "old_string": "x"})"}),
            "Edit: kernels/a.cu");
  EXPECT_EQ(SummariseCall({"1", "Read", "{oops"}), "Read: (invalid arguments)");
  EXPECT_EQ(
      SummariseCall({"1", "Bash", Json{{"command", std::string(200, 'a')}}.dump()}, 20).size(),
      20u);
}

}  // namespace
}  // namespace cuda_agent
