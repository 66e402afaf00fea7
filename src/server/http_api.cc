// http_api.cc — routes, auth, strict bodies and the OpenAPI document of the HTTP face.
#include "server/http_api.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include "server/mcp_http.h"
#include "server/status_page.h"

namespace cuda_agent {
namespace {

enum RouteIndex : size_t {
  kStatusPage,
  kHealth,
  kTools,
  kOpenSession,
  kGetSession,
  kCall,
  kGrade,
  kDeleteSession,
  kEvaluate,
  kJob,
  kOpenApi,
};

std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

HttpResponse JsonResponse(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.body = Dump(body) + "\n";
  return r;
}

ApiError BadRequest(std::string message) { return {400, "invalid_argument", std::move(message)}; }

// SplitPath: "/v1/sessions/abc/" → {"v1", "sessions", "abc"}.
std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Match: the {id} segment of `pattern` in `parts`, or nullopt when the path does not fit.
std::optional<std::string> Match(const std::string& pattern,
                                 const std::vector<std::string>& parts) {
  std::vector<std::string> want = SplitPath(pattern);
  if (want.size() != parts.size()) return std::nullopt;
  std::string id;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "{id}") {
      id = parts[i];
    } else if (want[i] != parts[i]) {
      return std::nullopt;
    }
  }
  return id;
}

// ConstantTimeEqual compares a presented token without leaking where it differs.
bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
  return diff == 0;
}

// Base64Decode: RFC 4648's standard alphabet, padding optional; nullopt for any other character.
std::optional<std::string> Base64Decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

// PresentedSecret: the secret an Authorization header carries — a bearer token, or the password
// of HTTP Basic auth (the user name is ignored) — or "" when it carries neither.
std::string PresentedSecret(const std::string& header) {
  if (header.rfind("Bearer ", 0) == 0) return header.substr(7);
  if (header.rfind("Basic ", 0) == 0) {
    std::optional<std::string> pair = Base64Decode(header.substr(6));
    if (!pair) return "";
    size_t colon = pair->find(':');
    return colon == std::string::npos ? "" : pair->substr(colon + 1);
  }
  return "";
}

// Body is a request's JSON object, checked for unknown fields; getters word every bad field.
class Body {
 public:
  static ApiResult<Body> Parse(const std::string& text, const std::set<std::string>& allowed) {
    Json json = Json::object();
    if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
      json = Json::parse(text, nullptr, false);
      if (json.is_discarded()) {
        return BadRequest("the body is not valid JSON (send a JSON object)");
      }
    }
    if (!json.is_object()) return BadRequest("the body must be a JSON object");
    for (const auto& [key, value] : json.items()) {
      if (!allowed.count(key)) {
        std::string names;
        for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
        return BadRequest("unknown field '" + key + "' (this route takes: " + names + ")");
      }
    }
    return Body(std::move(json));
  }

  bool Has(const std::string& name) const { return json_.contains(name); }
  const Json& Get(const std::string& name) const { return json_[name]; }

  std::optional<ApiError> String(const std::string& name, bool required, std::string* out) const {
    if (!Has(name) || json_[name].is_null()) {
      if (required) return BadRequest("missing field '" + name + "'");
      return std::nullopt;
    }
    if (!json_[name].is_string()) return BadRequest("field '" + name + "' must be a string");
    *out = json_[name].get<std::string>();
    return std::nullopt;
  }
  std::optional<ApiError> Integer(const std::string& name, int* out) const {
    if (!Has(name) || json_[name].is_null()) return std::nullopt;
    const Json& v = json_[name];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1000000) {
      return BadRequest("field '" + name + "' must be a positive integer");
    }
    *out = v.get<int>();
    return std::nullopt;
  }
  std::optional<ApiError> Number(const std::string& name, double* out) const {
    if (!Has(name) || json_[name].is_null()) return std::nullopt;
    const Json& v = json_[name];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
      return BadRequest("field '" + name + "' must be a positive number");
    }
    *out = v.get<double>();
    return std::nullopt;
  }
  std::optional<ApiError> Bool(const std::string& name, bool* out) const {
    if (!Has(name) || json_[name].is_null()) return std::nullopt;
    if (!json_[name].is_boolean()) return BadRequest("field '" + name + "' must be true or false");
    *out = json_[name].get<bool>();
    return std::nullopt;
  }

 private:
  explicit Body(Json json) : json_(std::move(json)) {}
  Json json_;
};

Json ToolsJson(const std::vector<ToolSpec>& tools) {
  Json out = Json::array();
  for (const ToolSpec& t : tools) {
    out.push_back({{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
  }
  return out;
}

}  // namespace

const std::vector<HttpApi::Route>& HttpApi::Routes() {
  // Indexed by RouteIndex.
  static const std::vector<Route> routes = {
      {"GET", "/", Access::kStatus},
      {"GET", "/v1/health", Access::kOpen},
      {"GET", "/v1/tools", Access::kApi},
      {"POST", "/v1/sessions", Access::kApi},
      {"GET", "/v1/sessions/{id}", Access::kApi},
      {"POST", "/v1/sessions/{id}/calls", Access::kApi},
      {"POST", "/v1/sessions/{id}/grade", Access::kApi},
      {"DELETE", "/v1/sessions/{id}", Access::kApi},
      {"POST", "/v1/evaluate", Access::kApi},
      {"GET", "/v1/jobs/{id}", Access::kApi},
      {"GET", "/v1/openapi.json", Access::kApi},
  };
  return routes;
}

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse r = JsonResponse(error.http_status, error.ToJson());
  if (error.retry_after_s > 0) {
    r.headers.emplace_back("Retry-After",
                           std::to_string(static_cast<int64_t>(std::ceil(error.retry_after_s))));
  }
  if (error.http_status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

HttpApi::HttpApi(Environment& environment, HttpApiOptions options)
    : environment_(environment), options_(std::move(options)) {}

HttpResponse HttpApi::Handle(const HttpRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  HttpResponse response = HandleUntimed(request);
  // Server-Timing: the time spent here, so that a client can tell the server's share of a round
  // trip (bench/server_overhead.py).
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  char timing[48];
  snprintf(timing, sizeof timing, "app;dur=%.3f", ms);
  response.headers.emplace_back("Server-Timing", timing);
  return response;
}

HttpResponse HttpApi::HandleUntimed(const HttpRequest& request) {
  try {
    if (request.refused_status == 413) {
      return ErrorResponse({413, "too_large",
                            "the body is over " + std::to_string(options_.max_body_bytes) +
                                " bytes (the server's --max-body-bytes)"});
    }
    if (request.refused_status != 0) {
      return ErrorResponse({request.refused_status, "bad_request",
                            "the HTTP request is malformed (status " +
                                std::to_string(request.refused_status) + ")"});
    }
    if (options_.mcp != nullptr && request.path == kMcpPath) {
      if (std::optional<HttpResponse> refused = Unauthorized(request, Access::kApi)) {
        return *refused;
      }
      if (environment_.Stopping()) {
        return ErrorResponse(
            {503, "stopping", "the server is shutting down; retry against its successor", 5});
      }
      return HandleMcpHttp(*options_.mcp, request);
    }
    const std::vector<std::string> parts = SplitPath(request.path);
    const std::string method = request.method == "HEAD" ? "GET" : request.method;
    std::vector<std::string> allowed;
    for (size_t i = 0; i < Routes().size(); ++i) {
      const Route& route = Routes()[i];
      std::optional<std::string> id = Match(route.pattern, parts);
      if (!id) continue;
      if (route.method != method) {
        allowed.push_back(route.method);
        continue;
      }
      if (std::optional<HttpResponse> refused = Unauthorized(request, route.access)) {
        return *refused;
      }
      if (environment_.Stopping() && i != kHealth) {
        return ErrorResponse(
            {503, "stopping", "the server is shutting down; retry against its successor", 5});
      }
      return Dispatch(request, i, *id);
    }
    if (!allowed.empty()) {
      std::string list;
      for (const std::string& m : allowed) list += (list.empty() ? "" : ", ") + m;
      HttpResponse r = ErrorResponse(
          {405, "method_not_allowed",
           request.method + " is not served on " + request.path + " (allowed: " + list + ")"});
      r.headers.emplace_back("Allow", list);
      return r;
    }
    return ErrorResponse({404, "no_route",
                          "no route " + request.method + " " + request.path +
                              " (the routes are listed at GET /v1/openapi.json)"});
  } catch (const std::exception& e) {
    return ErrorResponse({500, "internal", std::string("internal error: ") + e.what()});
  }
}

std::optional<HttpResponse> HttpApi::Unauthorized(const HttpRequest& request, Access access) const {
  if (options_.token.empty() || access == Access::kOpen) return std::nullopt;
  auto it = request.headers.find("authorization");
  const std::string presented = it == request.headers.end() ? "" : it->second;
  if (access == Access::kStatus) {
    // The status page: either secret, as a bearer token or a Basic password (a browser's dialog).
    const std::string secret = PresentedSecret(presented);
    // Both comparisons run, so the time does not tell which secret was near.
    bool token = ConstantTimeEqual(secret, options_.token);
    bool status =
        !options_.status_token.empty() && ConstantTimeEqual(secret, options_.status_token);
    if (token || status) return std::nullopt;
    HttpResponse r = ErrorResponse(
        {401, "unauthorized",
         std::string(presented.empty() ? "the status page needs a password"
                                       : "the status page's password is wrong") +
             ": the server's --status-token (or its --token), as the password of the browser's "
             "login dialog (any user name) or as 'Authorization: Bearer <token>'"});
    // A browser shows its login dialog for Basic only (it knows no Bearer).
    for (auto& [name, value] : r.headers) {
      if (name == "WWW-Authenticate")
        value = "Basic realm=\"cuda-agent status\", charset=\"UTF-8\"";
    }
    return r;
  }
  if (ConstantTimeEqual(presented, "Bearer " + options_.token)) return std::nullopt;
  const bool status_secret = !options_.status_token.empty() &&
                             ConstantTimeEqual(PresentedSecret(presented), options_.status_token);
  return ErrorResponse({401, "unauthorized",
                        presented.empty() ? "this server needs 'Authorization: Bearer <token>' "
                                            "(its --token / CUDA_AGENT_TOKEN)"
                        : status_secret
                            ? "the status token opens only the status page at /; this route needs "
                              "'Authorization: Bearer <token>' with the server's --token"
                            : "the bearer token is wrong"});
}

HttpResponse HttpApi::Dispatch(const HttpRequest& request, size_t route, const std::string& id) {
  Environment& env = environment_;
  switch (route) {
    case kStatusPage: {
      HttpResponse r;
      r.content_type = "text/html; charset=utf-8";
      r.body = StatusPageHtml(env.StatusPage());
      return r;
    }
    case kHealth:
      return JsonResponse(200, env.Health());
    case kTools:
      return JsonResponse(200, {{"tools", ToolsJson(env.Tools())}});
    case kOpenApi:
      return JsonResponse(200, OpenApiDocument(options_.version));
    case kOpenSession: {
      ApiResult<Body> body =
          Body::Parse(request.body, {"task", "device", "policy", "turn_limit", "ttl_s"});
      if (!body.ok()) return ErrorResponse(*body.error);
      OpenSessionRequest open;
      if (!body.value->Has("task")) return ErrorResponse(BadRequest("missing field 'task'"));
      open.task = body.value->Get("task");
      for (std::optional<ApiError> e : {body.value->String("device", false, &open.device),
                                        body.value->String("policy", false, &open.policy),
                                        body.value->Integer("turn_limit", &open.turn_limit),
                                        body.value->Number("ttl_s", &open.ttl_s)}) {
        if (e) return ErrorResponse(*e);
      }
      ApiResult<SessionOpened> opened = env.OpenSession(open);
      if (!opened.ok()) return ErrorResponse(*opened.error);
      const SessionOpened& s = *opened.value;
      return JsonResponse(201, {{"session_id", s.session_id},
                                {"system_prompt", s.system_prompt},
                                {"task_message", s.task_message},
                                {"tools", ToolsJson(s.tools)},
                                {"turn_limit", s.turn_limit},
                                {"expires_at", s.expires_at}});
    }
    case kGetSession: {
      ApiResult<Json> status = env.SessionStatus(id);
      if (!status.ok()) return ErrorResponse(*status.error);
      return JsonResponse(200, *status.value);
    }
    case kCall: {
      ApiResult<Body> body = Body::Parse(request.body, {"call_id", "tool", "arguments"});
      if (!body.ok()) return ErrorResponse(*body.error);
      std::string call_id, tool;
      for (std::optional<ApiError> e : {body.value->String("call_id", true, &call_id),
                                        body.value->String("tool", true, &tool)}) {
        if (e) return ErrorResponse(*e);
      }
      // A string is what the model emitted (maybe not JSON: the tool answers that); an object is
      // sent as its text.
      std::string arguments = "{}";
      if (body.value->Has("arguments")) {
        const Json& a = body.value->Get("arguments");
        if (a.is_string()) {
          arguments = a.get<std::string>();
        } else if (a.is_object()) {
          arguments = Dump(a);
        } else if (!a.is_null()) {
          return ErrorResponse(
              BadRequest("field 'arguments' must be a JSON object or a string holding one"));
        }
      }
      ApiResult<CallAnswer> answer = env.Call(id, call_id, tool, arguments);
      if (!answer.ok()) return ErrorResponse(*answer.error);
      const CallAnswer& a = *answer.value;
      return JsonResponse(
          200,
          {{"call_id", a.call_id},
           {"observation", {{"text", a.observation.text}, {"is_error", a.observation.is_error}}},
           {"calls_used", a.calls_used},
           {"turn_limit", a.turn_limit},
           {"replayed", a.replayed}});
    }
    case kGrade: {
      ApiResult<Body> body = Body::Parse(request.body, {});
      if (!body.ok()) return ErrorResponse(*body.error);
      ApiResult<GradeAnswer> grade = env.Grade(id);
      if (!grade.ok()) return ErrorResponse(*grade.error);
      return JsonResponse(200, {{"session_id", grade.value->session_id},
                                {"reward", grade.value->reward},
                                {"result", grade.value->result}});
    }
    case kDeleteSession: {
      ApiResult<Json> closed = env.CloseSession(id);
      if (!closed.ok()) return ErrorResponse(*closed.error);
      return JsonResponse(200, *closed.value);
    }
    case kEvaluate: {
      ApiResult<Body> body =
          Body::Parse(request.body, {"task", "files", "device", "policy", "wait"});
      if (!body.ok()) return ErrorResponse(*body.error);
      if (!body.value->Has("task")) return ErrorResponse(BadRequest("missing field 'task'"));
      if (!body.value->Has("files")) return ErrorResponse(BadRequest("missing field 'files'"));
      std::string device, policy;
      bool wait = true;
      for (std::optional<ApiError> e :
           {body.value->String("device", false, &device),
            body.value->String("policy", false, &policy), body.value->Bool("wait", &wait)}) {
        if (e) return ErrorResponse(*e);
      }
      ApiResult<Json> result =
          env.Evaluate(body.value->Get("task"), body.value->Get("files"), device, policy, wait);
      if (!result.ok()) return ErrorResponse(*result.error);
      return JsonResponse(wait ? 200 : 202, *result.value);
    }
    case kJob: {
      ApiResult<Json> job = env.Job(id);
      if (!job.ok()) return ErrorResponse(*job.error);
      return JsonResponse(200, *job.value);
    }
  }
  return ErrorResponse({500, "internal", "route without a handler"});
}

}  // namespace cuda_agent
