// context_budget_test.cc — the token estimate and the rule that elides the oldest observations.
#include "agent/context_budget.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

ChatMessage Msg(const std::string& role, const std::string& content,
                const std::string& call_id = "") {
  ChatMessage m;
  m.role = role;
  m.content = content;
  m.tool_call_id = call_id;
  return m;
}

ChatMessage Call(const std::string& id, const std::string& tool) {
  ChatMessage m;
  m.role = "assistant";
  m.tool_calls.push_back({id, tool, "{}"});
  return m;
}

// A conversation: the task, then `pairs` assistant calls with observations of `size` chars each.
std::vector<ChatMessage> Conversation(int pairs, size_t size) {
  std::vector<ChatMessage> messages = {Msg("user", "the task")};
  for (int i = 0; i < pairs; ++i) {
    std::string id = "c" + std::to_string(i);
    messages.push_back(Call(id, i % 2 ? "Read" : "Bash"));
    messages.push_back(Msg("tool", std::string(size, 'o'), id));
  }
  return messages;
}

TEST(ContextBudgetTest, EstimatesCharsOverFourUntilCalibrated) {
  ContextBudget budget({.context_tokens = 1000, .max_output_tokens = 100, .keep_last = 6});
  std::vector<ChatMessage> messages = {Msg("user", std::string(392, 'x'))};
  EXPECT_EQ(budget.Estimate("", {}, messages), 100);  // (392 + 8) / 4
  TokenUsage reported;
  reported.prompt_tokens = 200;
  budget.Observe("", {}, messages, reported);
  EXPECT_DOUBLE_EQ(budget.TokensPerChar(), 0.5);
  EXPECT_EQ(budget.Estimate("", {}, messages), 200);
  budget.Observe("", {}, messages, TokenUsage{});  // nothing reported: the calibration stays
  EXPECT_EQ(budget.Estimate("", {}, messages), 200);
}

TEST(ContextBudgetTest, FittingRequestIsUntouched) {
  ContextBudget budget({.context_tokens = 100000, .max_output_tokens = 1000, .keep_last = 6});
  std::vector<ChatMessage> messages = Conversation(10, 100);
  std::vector<ChatMessage> before = messages;
  ShrinkReport r = budget.Fit("system", {}, &messages);
  EXPECT_TRUE(r.fits);
  EXPECT_TRUE(r.elided.empty());
  for (size_t i = 0; i < messages.size(); ++i) EXPECT_EQ(messages[i].content, before[i].content);
}

TEST(ContextBudgetTest, ElidesOldestObservationsFirstAndKeepsTaskAndLastK) {
  // 10 observations of 4000 chars = ~10k tokens; limit 6000 - 1000 = 5000 tokens: 6 must go.
  ContextBudget budget({.context_tokens = 6000, .max_output_tokens = 1000, .keep_last = 6});
  std::vector<ChatMessage> messages = Conversation(10, 4000);
  ShrinkReport r = budget.Fit(std::string(400, 's'), {}, &messages);
  EXPECT_TRUE(r.fits);
  EXPECT_LE(r.estimated_tokens, 5000);
  ASSERT_EQ(r.elided.size(), 6u);
  // Oldest first: the elided indexes are the first tool messages, in order.
  EXPECT_EQ(r.elided.front(), 2u);
  for (size_t k = 1; k < r.elided.size(); ++k) EXPECT_EQ(r.elided[k], r.elided[k - 1] + 2);
  EXPECT_EQ(messages[2].content, "[observation of Bash elided: 4000 chars]");
  EXPECT_EQ(messages[4].content, "[observation of Read elided: 4000 chars]");
  EXPECT_TRUE(IsElidedStub(messages[2].content));
  EXPECT_EQ(messages[0].content, "the task");
  for (size_t i = messages.size() - 6; i < messages.size(); ++i)
    EXPECT_FALSE(IsElidedStub(messages[i].content)) << i;
  // Only as many as needed: the first observation after the elided ones is intact.
  EXPECT_EQ(r.elided.back(), 12u);
  EXPECT_FALSE(IsElidedStub(messages[14].content));
  // A second Fit of the same conversation elides nothing more.
  EXPECT_TRUE(budget.Fit(std::string(400, 's'), {}, &messages).elided.empty());
}

TEST(ContextBudgetTest, ReportsWhenElidingCannotFit) {
  ContextBudget budget({.context_tokens = 3000, .max_output_tokens = 1000, .keep_last = 6});
  // The last 6 messages alone hold 3 × 4000 chars = 3000 tokens > 2000.
  std::vector<ChatMessage> messages = Conversation(6, 4000);
  ShrinkReport r = budget.Fit("", {}, &messages);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.elided.size(), 3u);  // everything outside the protected tail was elided
  EXPECT_GT(r.estimated_tokens, budget.Limit());
}

TEST(ContextBudgetTest, ToolSpecsAndSystemCount) {
  ContextBudget budget({});
  ToolSpec spec{"Bash", std::string(100, 'd'), Json{{"type", "object"}}};
  size_t chars = RequestChars("sys", {spec}, {Msg("user", "abcd")});
  const size_t schema_chars = Json({{"type", "object"}}).dump().size();
  EXPECT_EQ(chars, 3 + 4 + 100 + schema_chars + 4 + 8);
}

}  // namespace
}  // namespace cuda_agent
