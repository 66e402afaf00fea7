// api_result.h — the answer of every server room: a value, or a refusal with the HTTP status it
// maps to (docs/server.md). The HTTP face turns a refusal into its status and JSON body, the MCP
// face into a tool error; the rooms below them never see either wire.
//
//   ApiResult<Json> r = env.Job(id);
//   if (!r.ok()) return ErrorResponse(*r.error);
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

namespace cuda_agent {

// ApiError is a refusal with the HTTP status it maps to (docs/server.md): 400 invalid, 404 unknown,
// 409 conflict (turn limit, closed session), 413 too large, 429 busy (retry_after_s), 503 stopping.
struct ApiError {
  int http_status = 400;
  std::string code;     // "invalid_argument", "not_found", "turn_limit", "busy", ...
  std::string message;  // what went wrong and how to fix it
  double retry_after_s = 0;
  Json ToJson() const { return {{"error", {{"code", code}, {"message", message}}}}; }
};

template <typename T>
struct ApiResult {
  std::optional<T> value;
  std::optional<ApiError> error;
  ApiResult(T v) : value(std::move(v)) {}         // NOLINT: implicit by design
  ApiResult(ApiError e) : error(std::move(e)) {}  // NOLINT: implicit by design
  bool ok() const { return value.has_value(); }
};

// InvalidRequest: a 400 `invalid_argument` refusal.
inline ApiError InvalidRequest(std::string message) {
  return {400, "invalid_argument", std::move(message)};
}

}  // namespace cuda_agent
