// anthropic_client.h — `anthropic:<model>`: the Anthropic Messages API (POST {base}/v1/messages).
// The system prompt is a parameter; tool calls are `tool_use` content blocks, observations are
// `tool_result` blocks in a user message (consecutive results share one message); tools go as
// {name, description, input_schema}. The pure conversions are public for the tests; the client
// itself comes from MakeLlmClient.
//
//   Json body = AnthropicRequestBody(request, "claude-sonnet-4-5", /*stream=*/true);
//   Result<ChatResponse> answer = ParseAnthropicResponse(body_text);
#pragma once

#include <memory>
#include <string>

#include "llm/chat_protocol.h"

namespace cuda_agent {

// AnthropicRequestBody is the JSON of a /v1/messages request.
Json AnthropicRequestBody(const ChatRequest& request, const std::string& model, bool stream);

// ParseAnthropicResponse reads a non-streamed answer (content blocks, stop_reason, usage).
Result<ChatResponse> ParseAnthropicResponse(const std::string& body);

// NewAnthropicStream assembles a streamed answer; `message_stop` is the final event.
std::unique_ptr<StreamAssembler> NewAnthropicStream(
    const std::function<void(const std::string&)>& on_text);

// AnthropicMessagesUrl is {base}/v1/messages (a base that already ends in /v1 is accepted).
std::string AnthropicMessagesUrl(const std::string& base_url);

// MakeAnthropicClient builds the client. The base URL is $ANTHROPIC_BASE_URL (default
// https://api.anthropic.com); the key is $ANTHROPIC_API_KEY, required unless the base is loopback.
Result<std::unique_ptr<LlmClient>> MakeAnthropicClient(const std::string& model,
                                                       const LlmOptions& options);

}  // namespace cuda_agent
