// context_budget.h — keeps the conversation within the model's context window. Tokens are estimated
// as characters / 4 until the provider reports prompt_tokens; from then on the ratio tokens/char of
// the last reported request is used. When the next request would exceed the budget minus the
// output tokens, the oldest tool observations (never the system prompt, the task message, or the
// last K messages) are replaced, one by one, by a stub "[observation of <tool> elided: N chars]".
//
//   ContextBudget budget({.context_tokens = 131072, .max_output_tokens = 8192});
//   ShrinkReport r = budget.Fit(system, tool_specs, &messages);
//   if (!r.fits) Stop("context_budget");
//   ... reply = Chat(...); budget.Observe(system, tool_specs, messages, reply.usage);
#pragma once

#include <string>
#include <vector>

#include "llm/llm_client.h"

namespace cuda_agent {

struct ContextBudgetOptions {
  long context_tokens = 131072;
  long max_output_tokens = 8192;
  size_t keep_last = 6;  // the last K messages are never elided
};

struct ShrinkReport {
  bool fits = true;
  long estimated_tokens = 0;   // of the request after shrinking
  std::vector<size_t> elided;  // indexes of the messages elided by this call
};

class ContextBudget {
 public:
  explicit ContextBudget(ContextBudgetOptions options) : options_(options) {}

  // Estimate: the request's tokens (system + tools + messages).
  long Estimate(const std::string& system, const std::vector<ToolSpec>& tools,
                const std::vector<ChatMessage>& messages) const;
  // Fit elides old observations of `messages` (index 0, the task, is kept) until the request fits.
  ShrinkReport Fit(const std::string& system, const std::vector<ToolSpec>& tools,
                   std::vector<ChatMessage>* messages) const;
  // Observe calibrates the estimate with the provider's report for the request just sent.
  void Observe(const std::string& system, const std::vector<ToolSpec>& tools,
               const std::vector<ChatMessage>& messages, const TokenUsage& usage);
  long Limit() const { return options_.context_tokens - options_.max_output_tokens; }
  double TokensPerChar() const { return tokens_per_char_; }

 private:
  ContextBudgetOptions options_;
  double tokens_per_char_ = 0.25;
};

// RequestChars: the characters of a request as the estimate counts them.
size_t RequestChars(const std::string& system, const std::vector<ToolSpec>& tools,
                    const std::vector<ChatMessage>& messages);

// IsElidedStub: whether a tool message already holds an elision stub.
bool IsElidedStub(const std::string& content);

}  // namespace cuda_agent
