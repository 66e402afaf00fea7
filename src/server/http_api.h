// http_api.h — the HTTP face of the environment (docs/server.md): the routes under /v1, bearer
// auth (and a read-only status token for the page at /), strict JSON bodies, error bodies with
// their status codes. It only translates: every answer comes from the Environment, whose refusals
// (ApiError) carry their HTTP status.
//
//   HttpApi api(environment, {.token = "secret"});
//   HttpResponse r = api.Handle(request);  // what http_server.h's handler returns
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "server/environment.h"
#include "server/http_server.h"

namespace cuda_agent {

class McpServer;

struct HttpApiOptions {
  std::string token;  // empty: no auth; else `Authorization: Bearer <token>`
  // status_token: a second, read-only secret that opens only the status page (needs `token`). The
  // page takes either secret as a bearer token or as the password of HTTP Basic auth (any user
  // name), which is what a browser's login dialog sends.
  std::string status_token;
  size_t max_body_bytes = 16u << 20;  // for the 413 message (the server enforces it)
  std::string version;
  McpServer* mcp = nullptr;  // when set, /mcp is MCP's Streamable HTTP (server/mcp_http.h)
};

class HttpApi {
 public:
  HttpApi(Environment& environment, HttpApiOptions options);
  // Handle answers one request; never throws.
  HttpResponse Handle(const HttpRequest& request);

  // Access: who a route answers when the server has a token.
  enum class Access {
    kOpen,    // anyone (health)
    kStatus,  // the token or the status token, as bearer or Basic password (the status page)
    kApi,     // the token as bearer only
  };
  struct Route {
    std::string method;
    std::string pattern;  // "/v1/sessions/{id}/calls"
    Access access;
  };
  // Routes: every route Handle serves, in the order of docs/server.md.
  static const std::vector<Route>& Routes();

 private:
  HttpResponse HandleUntimed(const HttpRequest& request);
  HttpResponse Dispatch(const HttpRequest& request, size_t route, const std::string& id);
  // Unauthorized: the 401 for a request without what `access` asks, nullopt when it may pass.
  std::optional<HttpResponse> Unauthorized(const HttpRequest& request, Access access) const;
  Environment& environment_;
  HttpApiOptions options_;
};

// OpenApiDocument: the OpenAPI 3.1 document of the routes (GET /v1/openapi.json).
Json OpenApiDocument(const std::string& version);

// ErrorResponse renders an ApiError with its status (and Retry-After when it has one).
HttpResponse ErrorResponse(const ApiError& error);

}  // namespace cuda_agent
