// context_budget.cc — token estimate and the rule that elides old observations (context_budget.h).
#include "agent/context_budget.h"

#include <map>

namespace cuda_agent {
namespace {

constexpr const char* kStubPrefix = "[observation of ";

}  // namespace

size_t RequestChars(const std::string& system, const std::vector<ToolSpec>& tools,
                    const std::vector<ChatMessage>& messages) {
  size_t chars = system.size();
  for (const ToolSpec& tool : tools)
    chars += tool.name.size() + tool.description.size() + tool.parameters.dump().size();
  for (const ChatMessage& m : messages) {
    chars += m.content.size() + 8;  // role and framing
    for (const ToolCall& call : m.tool_calls)
      chars += call.name.size() + call.arguments_text.size() + call.id.size();
  }
  return chars;
}

bool IsElidedStub(const std::string& content) { return content.rfind(kStubPrefix, 0) == 0; }

long ContextBudget::Estimate(const std::string& system, const std::vector<ToolSpec>& tools,
                             const std::vector<ChatMessage>& messages) const {
  return static_cast<long>(
      static_cast<double>(RequestChars(system, tools, messages)) * tokens_per_char_ + 0.5);
}

void ContextBudget::Observe(const std::string& system, const std::vector<ToolSpec>& tools,
                            const std::vector<ChatMessage>& messages, const TokenUsage& usage) {
  if (usage.prompt_tokens <= 0) return;
  size_t chars = RequestChars(system, tools, messages);
  if (chars > 0)
    tokens_per_char_ = static_cast<double>(usage.prompt_tokens) / static_cast<double>(chars);
}

ShrinkReport ContextBudget::Fit(const std::string& system, const std::vector<ToolSpec>& tools,
                                std::vector<ChatMessage>* messages) const {
  ShrinkReport report;
  report.estimated_tokens = Estimate(system, tools, *messages);
  if (report.estimated_tokens <= Limit()) return report;
  // The tool name of each call id, for the stub.
  std::map<std::string, std::string> tool_of_call;
  for (const ChatMessage& m : *messages) {
    for (const ToolCall& call : m.tool_calls) tool_of_call[call.id] = call.name;
  }
  size_t protected_from =
      messages->size() > options_.keep_last ? messages->size() - options_.keep_last : 0;
  for (size_t i = 1; i < protected_from && report.estimated_tokens > Limit(); ++i) {
    ChatMessage& m = (*messages)[i];
    if (m.role != "tool" || IsElidedStub(m.content)) continue;
    auto name = tool_of_call.find(m.tool_call_id);
    std::string stub = std::string(kStubPrefix) +
                       (name != tool_of_call.end() ? name->second : "tool") +
                       " elided: " + std::to_string(m.content.size()) + " chars]";
    if (stub.size() >= m.content.size()) continue;  // eliding would not save anything
    m.content = stub;
    report.elided.push_back(i);
    report.estimated_tokens = Estimate(system, tools, *messages);
  }
  report.fits = report.estimated_tokens <= Limit();
  return report;
}

}  // namespace cuda_agent
