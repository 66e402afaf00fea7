// chat_protocol.h — what differs between the HTTP providers (URL, headers, the JSON of a request,
// the JSON of an answer, the events of a stream), and the one client that sends such requests with
// retries, backoff and timeouts (http_chat_client.cc). openai_client.cc and anthropic_client.cc
// each implement ChatProtocol; the retry rules live in one place (docs/llm.md "Retries").
//
//   std::unique_ptr<LlmClient> client = MakeHttpChatClient(std::make_unique<MyProtocol>(...),
//   options);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llm/llm_client.h"
#include "llm/sse.h"

namespace cuda_agent {

// StreamAssembler builds one ChatResponse from the SSE events of one streamed answer.
class StreamAssembler {
 public:
  virtual ~StreamAssembler() = default;
  // OnEvent takes the next event. An error Status (malformed data, an error event from the server)
  // ends the attempt; it is retried.
  virtual Status OnEvent(const SseEvent& event) = 0;
  // Finished is true once the provider's final event arrived; a stream that ends before it was cut.
  virtual bool Finished() const = 0;
  virtual ChatResponse Take() = 0;
};

// ChatProtocol is one provider's wire format.
class ChatProtocol {
 public:
  virtual ~ChatProtocol() = default;
  virtual std::string Describe() const = 0;
  virtual std::string Url() const = 0;
  virtual std::vector<std::string> Headers() const = 0;  // "Name: value"; secrets included
  virtual Json RequestBody(const ChatRequest& request, bool stream) const = 0;
  // ParseResponse reads a non-streamed answer; an error means the body is malformed (retried).
  virtual Result<ChatResponse> ParseResponse(const std::string& body) const = 0;
  virtual std::unique_ptr<StreamAssembler> NewStream(
      const std::function<void(const std::string&)>& on_text) const = 0;
};

// MakeHttpChatClient wraps a protocol into an LlmClient that applies the retry rules.
std::unique_ptr<LlmClient> MakeHttpChatClient(std::unique_ptr<ChatProtocol> protocol,
                                              const LlmOptions& options);

// IsRetryableHttpStatus: 408, 409, 429 and 5xx.
bool IsRetryableHttpStatus(int status);

// RetryAfterSeconds reads Retry-After (seconds) or retry-after-ms from lower-case response
// headers; -1 when neither is there or readable.
double RetryAfterSeconds(const std::map<std::string, std::string>& headers);

// BackoffSeconds is the wait before attempt `failed_attempts + 1`: backoff_initial_s doubled per
// failed attempt, at least the server's Retry-After (when >= 0), at most backoff_max_s.
double BackoffSeconds(int failed_attempts, const LlmOptions& options, double retry_after_s);

// ErrorMessageFromBody finds the server's message in an error body (OpenAI, Anthropic, vLLM and
// FastAPI shapes); otherwise a short excerpt of the body.
std::string ErrorMessageFromBody(const std::string& body);

// GeneratedToolCallId names a call the provider sent without an id.
std::string GeneratedToolCallId(size_t index);

}  // namespace cuda_agent
