// llm_client.h — the agent's one door to a language model: chat messages with tool calls, one
// interface, one implementation per provider (OpenAI-compatible chat completions, the Anthropic
// Messages API, a replay of a recorded script). Providers are chosen by a spec string:
//
//   openai:<base-url>#<model>   any OpenAI-compatible server (vLLM, SGLang, OpenAI); key from
//                               $OPENAI_API_KEY (optional for local servers)
//   anthropic:<model>           the Anthropic Messages API; key from $ANTHROPIC_API_KEY; base URL
//                               from $ANTHROPIC_BASE_URL (default https://api.anthropic.com)
//   replay:<file>               plays a recorded script (JSONL, docs/agent.md), no network
//
//   Result<std::unique_ptr<LlmClient>> client =
//   MakeLlmClient("openai:http://127.0.0.1:8000/v1#qwen", {}); ChatRequest request{.system =
//   skill_md, .messages = history, .tools = ToolSpecs()}; Result<ChatResponse> reply =
//   client.value()->Chat(request); if (!reply.ok()) EndRun(reply.status());      // retries already
//   spent, or a non-retryable error
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace cuda_agent {

// ToolCall is one call the model asked for. `arguments_text` is exactly what the model sent (it may
// be invalid JSON: the agent answers that with an error observation, it never crashes on it).
struct ToolCall {
  std::string id;  // provider's call id (generated when the provider gives none)
  std::string name;
  std::string arguments_text;  // JSON object text as sent by the model
};

// ChatMessage is one entry of the conversation, in a provider-neutral form.
//   role "user":      content
//   role "assistant": content (may be empty) + tool_calls (may be empty)
//   role "tool":      content = the observation, tool_call_id = the call it answers, is_error
struct ChatMessage {
  std::string role;
  std::string content;
  std::vector<ToolCall> tool_calls;
  std::string tool_call_id;
  bool is_error = false;
};

// ToolSpec describes a tool to the model: name, description, JSON Schema of its arguments.
struct ToolSpec {
  std::string name;
  std::string description;
  Json parameters;  // {"type":"object","properties":{...},"required":[...]}
};

// TokenUsage as the provider reported it (0 where it reported nothing).
struct TokenUsage {
  long prompt_tokens = 0;
  long completion_tokens = 0;
  long cached_prompt_tokens = 0;
};

struct ChatRequest {
  std::string system;                 // system prompt
  std::vector<ChatMessage> messages;  // the conversation so far (no system entry)
  std::vector<ToolSpec> tools;
  int max_output_tokens = 8192;
  double temperature = -1;  // < 0: the provider's default
};

struct ChatResponse {
  ChatMessage message;  // role "assistant"
  std::string
      stop_reason;  // provider's reason, normalised: "end_turn", "tool_use", "max_tokens", other
  TokenUsage usage;
  int attempts = 1;    // HTTP attempts this answer took (retries included)
  double seconds = 0;  // wall time, retries included
};

// LlmOptions are the transport settings shared by the providers.
struct LlmOptions {
  double request_timeout_s = 600;  // one attempt, streaming included
  double connect_timeout_s = 20;
  double stall_timeout_s = 120;  // no byte received for this long: the attempt fails (retried)
  int max_attempts = 6;          // retries on 429, 5xx, connection errors, broken streams
  double backoff_initial_s =
      1.0;  // doubled each retry, capped at backoff_max_s; Retry-After honoured
  double backoff_max_s = 60.0;
  bool stream = true;  // SSE streaming where the provider supports it
  // Called with each piece of streamed assistant text (progress display); may be empty.
  std::function<void(const std::string&)> on_text;
};

// LlmClient is one provider. Chat returns an error Status only when the request cannot succeed:
// retries spent (kDeadlineExceeded / kInternal with the last HTTP status and body excerpt), a 4xx
// other than 408/429 (kInvalidArgument, e.g. a bad key or model name), a replay script exhausted
// (kNotFound) or an answer that cannot be parsed after its retries (kInternal).
class LlmClient {
 public:
  virtual ~LlmClient() = default;
  virtual Result<ChatResponse> Chat(const ChatRequest& request) = 0;
  // Describe names the provider and model for logs and result.json ("openai:qwen3 at http://...").
  virtual std::string Describe() const = 0;
};

// MakeLlmClient parses a spec (above) and builds its client; kInvalidArgument names what is wrong
// with the spec; kFailedPrecondition when the HTTP library cannot be loaded or a required key is
// unset.
Result<std::unique_ptr<LlmClient>> MakeLlmClient(const std::string& spec,
                                                 const LlmOptions& options);

}  // namespace cuda_agent
