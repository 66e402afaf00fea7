// openai_client.h — `openai:<base-url>#<model>`: the OpenAI-compatible /chat/completions API, as
// served by vLLM, SGLang and OpenAI. Tools go as {"type":"function","function":{...}}; streamed
// tool calls are assembled by index (id and name first, the arguments in pieces). The pure
// conversions are public for the tests; the client itself comes from MakeLlmClient.
//
//   Json body = OpenAiRequestBody(request, "qwen3", /*stream=*/true,
//   /*max_completion_tokens=*/false); Result<ChatResponse> answer = ParseOpenAiResponse(body_text);
#pragma once

#include <memory>
#include <string>

#include "llm/chat_protocol.h"

namespace cuda_agent {

// OpenAiRequestBody is the JSON of a /chat/completions request. `max_completion_tokens` picks the
// newer name of the output limit (OpenAI's own API); others get `max_tokens`.
Json OpenAiRequestBody(const ChatRequest& request, const std::string& model, bool stream,
                       bool max_completion_tokens);

// ParseOpenAiResponse reads a non-streamed answer (choices[0].message, finish_reason, usage).
Result<ChatResponse> ParseOpenAiResponse(const std::string& body);

// NewOpenAiStream assembles a streamed answer; "data: [DONE]" is the final event.
std::unique_ptr<StreamAssembler> NewOpenAiStream(
    const std::function<void(const std::string&)>& on_text);

// OpenAiStopReason maps finish_reason: tool_calls → tool_use, stop → end_turn, length → max_tokens.
std::string OpenAiStopReason(const std::string& finish_reason);

// MakeOpenAiClient builds the client; the key comes from $OPENAI_API_KEY when set.
Result<std::unique_ptr<LlmClient>> MakeOpenAiClient(const std::string& base_url,
                                                    const std::string& model,
                                                    const LlmOptions& options);

}  // namespace cuda_agent
