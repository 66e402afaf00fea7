// http_client.h — the project's one door to an HTTP client: a POST with headers and a body, the
// response body streamed to a callback as it arrives, connect / overall / stall timeouts, the
// status code and the response headers (Retry-After). Behind it is libcurl, loaded with dlopen at
// first use so that the cuda-agent binary gains no link-time dependency (it is carried to GPU
// machines that may lack libcurl; only the LLM commands need it). Nothing else in the project
// includes curl.
//
//   HttpPostRequest request{.url = "http://127.0.0.1:8000/v1/chat/completions", .body = json_text};
//   request.headers = {"Content-Type: application/json"};
//   request.on_body = [&](std::string_view bytes) { parser.Feed(bytes); return true; };
//   Result<HttpPostResponse> response = HttpPost(request);
//   if (!response.ok()) ...              // transport failure: no connection, timeout, stall, cut
//   else if (response->status != 200) ... // response->body holds the error body
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cuda_agent {

// (Named HttpPost*: server/http_server.h has the server's HttpRequest and HttpResponse, and two
// types of one name in one namespace would be one type to the linker.)
struct HttpPostRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double connect_timeout_s = 20;
  double total_timeout_s = 600;  // the whole exchange, body included
  double stall_timeout_s = 120;  // no byte received for this long: the exchange fails
  // on_body receives the body of a 2xx response piece by piece, as it arrives; returning false
  // aborts the transfer (HttpPost then fails with HttpTransportError::kAborted; the callback keeps
  // its own reason). When empty, or when the status is not 2xx, the body is collected in
  // HttpPostResponse::body instead.
  std::function<bool(std::string_view)> on_body;
};

struct HttpPostResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case; the last value wins
  std::string body;                            // not-streamed body (capped at 4 MiB)
  double seconds = 0;
};

// HttpTransportError says why no complete response came back; the retry policy keys on it.
enum class HttpTransportError {
  kNone,
  kUnavailable,
  kConnect,
  kTimeout,
  kStall,
  kBroken,
  kAborted
};

// HttpPost sends one POST. A response with any status is ok(); a failure to get a complete one is
// an error Status: kFailedPrecondition when libcurl cannot be loaded, kDeadlineExceeded for
// timeouts and stalls, kInternal for connection failures and cut transfers. `transport_error`
// (may be null) receives the kind.
Result<HttpPostResponse> HttpPost(const HttpPostRequest& request,
                                  HttpTransportError* transport_error = nullptr);

// HttpAvailable loads libcurl if needed; FailedPrecondition says why it cannot be used.
Status HttpAvailable();

// IsLoopbackUrl is true for http(s)://localhost, 127.x.x.x and [::1] URLs.
bool IsLoopbackUrl(const std::string& url);

}  // namespace cuda_agent
