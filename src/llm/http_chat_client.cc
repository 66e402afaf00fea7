// http_chat_client.cc — the retry loop shared by the HTTP providers: one attempt is one POST;
// 408/409/429/5xx, connection failures, timeouts, stalls, cut streams and malformed answers are
// retried with exponential backoff (Retry-After honoured); other 4xx end at once.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "llm/chat_protocol.h"
#include "llm/http_client.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kExcerptChars = 300;
constexpr size_t kMaxRawBody = 4 << 20;

bool IsJsonContentType(const std::map<std::string, std::string>& headers) {
  auto it = headers.find("content-type");
  return it != headers.end() && it->second.find("application/json") != std::string::npos;
}

std::string Excerpt(const std::string& text) {
  std::string flat;
  for (char c : text.substr(0, kExcerptChars)) flat += (c == '\n' || c == '\r') ? ' ' : c;
  if (text.size() > kExcerptChars) flat += "...";
  return flat;
}

std::string FormatSeconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", s);
  return text;
}

// AttemptOutcome is the result of one POST, with what the retry loop needs to decide.
struct AttemptOutcome {
  Result<ChatResponse> result = Internal("not attempted");
  bool retryable = false;
  bool deadline = false;      // the failure was a timeout or a stall
  double retry_after_s = -1;  // the server's Retry-After, when it sent one
};

AttemptOutcome Retryable(Status status, bool deadline = false, double retry_after_s = -1) {
  AttemptOutcome outcome;
  outcome.result = std::move(status);
  outcome.retryable = true;
  outcome.deadline = deadline;
  outcome.retry_after_s = retry_after_s;
  return outcome;
}

AttemptOutcome Final(Result<ChatResponse> result) {
  AttemptOutcome outcome;
  outcome.result = std::move(result);
  return outcome;
}

class HttpChatClient : public LlmClient {
 public:
  HttpChatClient(std::unique_ptr<ChatProtocol> protocol, const LlmOptions& options)
      : protocol_(std::move(protocol)), options_(options) {}

  std::string Describe() const override { return protocol_->Describe(); }

  Result<ChatResponse> Chat(const ChatRequest& request) override {
    Clock::time_point start = Clock::now();
    // Invalid UTF-8 in an observation must not throw: it is replaced (U+FFFD).
    std::string body = protocol_->RequestBody(request, options_.stream)
                           .dump(-1, ' ', false, Json::error_handler_t::replace);
    int max_attempts = std::max(1, options_.max_attempts);
    AttemptOutcome last;
    int attempt = 1;
    for (;; ++attempt) {
      last = Attempt(body);
      if (last.result.ok()) {
        ChatResponse response = std::move(last.result).value();
        response.attempts = attempt;
        response.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return response;
      }
      if (!last.retryable || attempt >= max_attempts) break;
      double wait = BackoffSeconds(attempt, options_, last.retry_after_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const Status& status = last.result.status();
    if (!last.retryable) {
      return Status(status.code(), Describe() + ": " + status.message());
    }
    std::string message = Describe() + ": gave up after " + std::to_string(attempt) + " attempt" +
                          (attempt == 1 ? "" : "s") + " in " + FormatSeconds(seconds) +
                          " s; last error: " + status.message();
    return last.deadline ? DeadlineExceeded(message) : Internal(message);
  }

 private:
  AttemptOutcome Attempt(const std::string& body) {
    HttpPostRequest http;
    http.url = protocol_->Url();
    http.headers = protocol_->Headers();
    http.body = body;
    http.connect_timeout_s = options_.connect_timeout_s;
    http.total_timeout_s = options_.request_timeout_s;
    http.stall_timeout_s = options_.stall_timeout_s;

    std::unique_ptr<StreamAssembler> stream;
    SseParser parser;
    Status stream_error;
    std::string raw;  // the streamed bytes, for a server that answered JSON instead of SSE
    int events = 0;
    if (options_.stream) {
      stream = protocol_->NewStream(options_.on_text);
      http.on_body = [&](std::string_view bytes) {
        if (raw.size() < kMaxRawBody) raw.append(bytes.substr(0, kMaxRawBody - raw.size()));
        for (const SseEvent& event : parser.Feed(bytes)) {
          ++events;
          try {
            stream_error = stream->OnEvent(event);
          } catch (const Json::exception& e) {  // a field of an unexpected type
            stream_error = InvalidArgument(std::string("unexpected event data: ") + e.what());
          }
          if (!stream_error.ok()) return false;
        }
        return true;
      };
    }
    HttpTransportError transport = HttpTransportError::kNone;
    Result<HttpPostResponse> response = HttpPost(http, &transport);
    if (!stream_error.ok()) return Retryable(Internal("bad stream: " + stream_error.message()));
    if (!response.ok()) {
      if (transport == HttpTransportError::kUnavailable) return Final(response.status());
      bool deadline =
          transport == HttpTransportError::kTimeout || transport == HttpTransportError::kStall;
      return Retryable(response.status(), deadline);
    }
    int status = response->status;
    if (status < 200 || status >= 300) {
      std::string message =
          "HTTP " + std::to_string(status) + ": " + ErrorMessageFromBody(response->body);
      if (IsRetryableHttpStatus(status)) {
        return Retryable(Internal(message), false, RetryAfterSeconds(response->headers));
      }
      if (status >= 400 && status < 500) return Final(InvalidArgument(message));
      return Final(Internal(message));
    }
    if (stream && events == 0 && IsJsonContentType(response->headers)) {
      stream.reset();  // a server (or proxy) that ignored "stream": read the whole answer
      response->body = raw;
    }
    if (stream) {
      if (!stream->Finished()) {
        return Retryable(Internal(std::string("the stream ended before its final event (HTTP ") +
                                  std::to_string(status) +
                                  (parser.HasPartialEvent() ? ", cut inside an event)" : ")")));
      }
      return Final(stream->Take());
    }
    Result<ChatResponse> parsed = Internal("not parsed");
    try {
      parsed = protocol_->ParseResponse(response->body);
    } catch (const Json::exception& e) {  // a field of an unexpected type
      parsed = InvalidArgument(std::string("unexpected answer: ") + e.what());
    }
    if (!parsed.ok()) {
      return Retryable(Internal("malformed answer: " + parsed.status().message() +
                                " (body: " + Excerpt(response->body) + ")"));
    }
    return Final(std::move(parsed));
  }

  std::unique_ptr<ChatProtocol> protocol_;
  LlmOptions options_;
};

}  // namespace

std::unique_ptr<LlmClient> MakeHttpChatClient(std::unique_ptr<ChatProtocol> protocol,
                                              const LlmOptions& options) {
  return std::make_unique<HttpChatClient>(std::move(protocol), options);
}

bool IsRetryableHttpStatus(int status) {
  return status == 408 || status == 409 || status == 429 || (status >= 500 && status < 600);
}

double RetryAfterSeconds(const std::map<std::string, std::string>& headers) {
  auto number = [](const std::string& text) -> double {
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(value >= 0) || !std::isfinite(value)) return -1;
    return value;
  };
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    double ms = number(it->second);
    if (ms >= 0) return ms / 1000;
  }
  if (auto it = headers.find("retry-after"); it != headers.end()) return number(it->second);
  return -1;  // an HTTP-date Retry-After is rare from LLM servers; the plain backoff applies
}

double BackoffSeconds(int failed_attempts, const LlmOptions& options, double retry_after_s) {
  double wait = options.backoff_initial_s * std::pow(2.0, std::max(0, failed_attempts - 1));
  if (retry_after_s >= 0) wait = std::max(wait, retry_after_s);
  return std::max(0.0, std::min(wait, options.backoff_max_s));
}

std::string ErrorMessageFromBody(const std::string& body) {
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) {
    const Json* error = parsed.contains("error") ? &parsed["error"] : &parsed;
    if (error->is_string()) return error->get<std::string>();
    if (error->is_object()) {
      for (const char* key : {"message", "detail"}) {
        if (error->contains(key) && (*error)[key].is_string()) {
          std::string message = (*error)[key].get<std::string>();
          if (error->contains("type") && (*error)["type"].is_string()) {
            message = (*error)["type"].get<std::string>() + ": " + message;
          }
          return message;
        }
      }
    }
  }
  return body.empty() ? "(empty body)" : Excerpt(body);
}

std::string GeneratedToolCallId(size_t index) { return "call_" + std::to_string(index); }

}  // namespace cuda_agent
