// mcp_http.cc — the Streamable HTTP transport of MCP (mcp_http.h): header checks, session ids,
// status codes; the protocol itself is McpServer's.
#include "server/mcp_http.h"

#include <algorithm>

#include "common/log.h"

namespace cuda_agent {
namespace {

HttpResponse JsonAnswer(int status, const Json& body) {
  HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return response;
}

// Refuse answers a request that never reached the protocol: a JSON-RPC error body (id null) with
// an HTTP status, as the spec has servers do for a missing or unknown session.
HttpResponse Refuse(int status, int code, const std::string& message) {
  return JsonAnswer(status, JsonRpcError(nullptr, code, message));
}

std::string Header(const HttpRequest& request, const std::string& lower_name) {
  auto it = request.headers.find(lower_name);
  return it == request.headers.end() ? "" : it->second;
}

std::string Query(const HttpRequest& request, const std::string& name) {
  auto it = request.query.find(name);
  return it == request.query.end() ? "" : it->second;
}

// HostOf: the host part (without port) of an Origin ("http://h:1") or Host ("h:1") value.
std::string HostOf(std::string value) {
  size_t scheme = value.find("://");
  if (scheme != std::string::npos) value = value.substr(scheme + 3);
  value = value.substr(0, value.find('/'));
  if (!value.empty() && value[0] == '[') return value.substr(0, value.find(']') + 1);
  return value.substr(0, value.find(':'));
}

// OriginAllowed guards against DNS rebinding as the spec asks: a browser's request (it carries
// Origin) must come from this machine or from the host it addressed; other clients send none.
bool OriginAllowed(const HttpRequest& request) {
  std::string origin = Header(request, "origin");
  if (origin.empty()) return true;
  std::string host = HostOf(origin);
  if (host == "localhost" || host == "127.0.0.1" || host == "[::1]") return true;
  return host == HostOf(Header(request, "host"));
}

HttpResponse Post(McpServer& mcp, const HttpRequest& request) {
  McpIncoming incoming = ParseMcpMessage(request.body);
  if (incoming.error) return JsonAnswer(400, *incoming.error);
  const Json id = incoming.message.contains("id") ? incoming.message["id"] : Json(nullptr);
  std::string session_id = Header(request, "mcp-session-id");
  const bool initialize = incoming.IsRequest() && incoming.Method() == "initialize";
  bool started = false;
  if (session_id.empty()) {
    if (!initialize) {
      return Refuse(400, kJsonRpcInvalidRequest,
                    "Bad Request: no Mcp-Session-Id header; start a session with initialize");
    }
    McpSessionSpec spec{.task = Query(request, "task"),
                        .device = Query(request, "device"),
                        .policy = Query(request, "policy")};
    Result<std::string> made = mcp.StartSession(spec);
    if (!made.ok()) {
      return JsonAnswer(400, JsonRpcError(id, kJsonRpcInvalidParams, made.status().message()));
    }
    session_id = made.value();
    started = true;
  } else if (!mcp.HasSession(session_id)) {
    // The spec's answer for an ended or unknown session: 404, and the client starts anew.
    return Refuse(404, kJsonRpcInvalidRequest, "Not Found: no such MCP session (ended?)");
  } else if (std::string version = Header(request, "mcp-protocol-version"); !version.empty()) {
    const auto& versions = McpProtocolVersions();
    if (std::find(versions.begin(), versions.end(), version) == versions.end()) {
      return Refuse(400, kJsonRpcInvalidRequest,
                    "Bad Request: unsupported MCP-Protocol-Version " + version);
    }
  }
  std::optional<Json> reply = mcp.Handle(session_id, incoming.message);
  HttpResponse response;
  if (reply) {
    response = JsonAnswer(200, *reply);
  } else {
    response.status = 202;  // a notification or a response: accepted, nothing to answer
    response.content_type = "";
  }
  if (started) {
    if (reply && reply->contains("error")) {
      mcp.EndSession(session_id);  // a failed handshake leaves no session behind
    } else {
      response.headers.emplace_back(kMcpSessionHeader, session_id);
    }
  }
  return response;
}

HttpResponse Delete(McpServer& mcp, const HttpRequest& request) {
  std::string session_id = Header(request, "mcp-session-id");
  if (session_id.empty()) {
    return Refuse(400, kJsonRpcInvalidRequest, "Bad Request: no Mcp-Session-Id header");
  }
  if (!mcp.EndSession(session_id)) {
    return Refuse(404, kJsonRpcInvalidRequest, "Not Found: no such MCP session");
  }
  HttpResponse response;
  response.status = 204;
  response.content_type = "";
  return response;
}

}  // namespace

HttpResponse HandleMcpHttp(McpServer& mcp, const HttpRequest& request) {
  try {
    if (!OriginAllowed(request)) {
      return Refuse(403, kJsonRpcInvalidRequest, "Forbidden: Origin not allowed");
    }
    if (request.method == "POST") return Post(mcp, request);
    if (request.method == "DELETE") return Delete(mcp, request);
    // No server-initiated messages: the spec lets a server refuse the GET stream with 405.
    HttpResponse response =
        Refuse(405, kJsonRpcInvalidRequest,
               "Method Not Allowed: POST a JSON-RPC message, DELETE to end the session");
    response.headers.emplace_back("Allow", "POST, DELETE");
    return response;
  } catch (const std::exception& e) {
    LogError(std::string("mcp: internal error: ") + e.what());
    return Refuse(500, kJsonRpcInternalError, std::string("Internal error: ") + e.what());
  }
}

}  // namespace cuda_agent
