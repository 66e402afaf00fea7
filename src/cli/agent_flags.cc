// agent_flags.cc — the agent's flags and their parsing (agent_flags.h).
#include "cli/agent_flags.h"

#include <tuple>

namespace cuda_agent {

const std::vector<OptionSpec>& AgentSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"max-turns", true, "assistant turns at most", "200"},
      {"context-tokens", true, "context budget in tokens", "131072"},
      {"max-output-tokens", true, "output tokens per reply (reserved from the context budget)",
       "8192"},
      {"temperature", true, "sampling temperature (empty: the provider's default)", ""},
      {"llm-timeout", true, "seconds for one HTTP attempt to the model, streaming included", "600"},
      {"llm-connect-timeout", true, "seconds to connect to the model's server", "20"},
      {"llm-stall-timeout", true, "seconds without a byte before an attempt fails", "120"},
      {"llm-max-attempts", true,
       "attempts per model request (retries on 429, 5xx, timeouts, broken streams)", "6"},
      {"llm-backoff", true, "first wait between attempts in seconds, doubled each retry", "1"},
      {"llm-backoff-max", true, "longest wait between attempts in seconds", "60"},
      {"no-stream", false, "ask the model for whole answers instead of streaming (SSE)", ""},
  };
  return specs;
}

Status AgentOptionsFromArgs(const ParsedArgs& a, EpisodeSpec* episode) {
  Result<int> max_turns = ParseIntFlag(a, "max-turns");
  Result<int> context_tokens = ParseIntFlag(a, "context-tokens");
  Result<int> max_output = ParseIntFlag(a, "max-output-tokens");
  for (const Status& s : {max_turns.status(), context_tokens.status(), max_output.status()}) {
    if (!s.ok()) return s;
  }
  if (max_turns.value() < 1) return InvalidArgument("--max-turns must be at least 1");
  if (max_output.value() < 1 || context_tokens.value() <= max_output.value()) {
    return InvalidArgument("--context-tokens must exceed --max-output-tokens");
  }
  episode->max_turns = max_turns.value();
  episode->context_tokens = context_tokens.value();
  episode->max_output_tokens = max_output.value();
  episode->temperature = -1;
  if (!a.Get("temperature").empty()) {
    Result<double> t = ParseDoubleFlag(a, "temperature", true);
    if (!t.ok()) return t.status();
    episode->temperature = t.value();
  }
  Result<int> attempts = ParseIntFlag(a, "llm-max-attempts");
  if (!attempts.ok() || attempts.value() < 1) {
    return InvalidArgument("--llm-max-attempts expects a positive integer");
  }
  LlmOptions& llm = episode->llm;
  llm.max_attempts = attempts.value();
  for (auto [name, field, allow_zero] : {std::tuple{"llm-timeout", &llm.request_timeout_s, false},
                                         {"llm-connect-timeout", &llm.connect_timeout_s, false},
                                         {"llm-stall-timeout", &llm.stall_timeout_s, false},
                                         {"llm-backoff", &llm.backoff_initial_s, true},
                                         {"llm-backoff-max", &llm.backoff_max_s, true}}) {
    Result<double> v = ParseDoubleFlag(a, name, allow_zero);
    if (!v.ok()) return v.status();
    *field = v.value();
  }
  llm.stream = !a.Has("no-stream");
  return OkStatus();
}

}  // namespace cuda_agent
