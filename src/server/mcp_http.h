// mcp_http.h — MCP's Streamable HTTP transport at /mcp of `cuda-agent serve`, in the plain request
// and answer values of server/http_server.h: POST carries one JSON-RPC message (answered as
// application/json, or 202 for notifications), `initialize` assigns the Mcp-Session-Id header that
// every later request repeats, DELETE ends the session, GET answers 405 (this server sends no
// server-initiated messages). `/mcp?task=REF&device=D&policy=P` on the initialize request picks
// the session's task; else the server's --mcp-task. docs/server.md, "MCP".
//
//   McpServer mcp(env, options);
//   HttpResponse r = HandleMcpHttp(mcp, request);  // for requests whose path is kMcpPath
#pragma once

#include "server/http_server.h"
#include "server/mcp.h"

namespace cuda_agent {

inline constexpr const char* kMcpPath = "/mcp";
inline constexpr const char* kMcpSessionHeader = "Mcp-Session-Id";

// HandleMcpHttp answers one request to /mcp; never throws.
HttpResponse HandleMcpHttp(McpServer& mcp, const HttpRequest& request);

}  // namespace cuda_agent
