// mcp.h — the MCP face of the environment server: JSON-RPC 2.0 as the Model Context Protocol
// (handshake era, 2024-11-05 … 2025-11-25) defines it, over an Environment (server/environment.h).
// Coding agents (Claude Code, Cursor, any MCP client) get the agent's tools (Bash, Read, Write, …)
// plus three environment tools (`task`, `grade`, `evaluate`); one MCP session is one Environment
// session, opened at its first tool call for the task the MCP session was started with.
// The transports are thin: stdio (RunMcpStdio, `cuda-agent mcp`) and Streamable HTTP at /mcp
// (server/mcp_http.h, `cuda-agent serve`). docs/server.md, "MCP".
//
//   McpServer mcp(env, {.task = "examples/relu_scale/model.py", .device = "cpu"});
//   Result<std::string> id = mcp.StartSession({});        // the options' task
//   std::optional<Json> reply = mcp.Handle(*id, message);  // nullopt for notifications
//   mcp.EndSession(*id);                                   // closes the Environment session
#pragma once

#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/json.h"
#include "server/environment.h"

namespace cuda_agent {

// The MCP revisions this server speaks, oldest first; the last is offered to clients that ask for
// one it does not know (the spec's negotiation: the client then decides whether to go on).
inline const std::vector<std::string>& McpProtocolVersions() {
  static const std::vector<std::string> versions = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                    "2025-11-25"};
  return versions;
}

// JSON-RPC 2.0 error codes (the spec's) and MCP's use of them.
inline constexpr int kJsonRpcParseError = -32700;
inline constexpr int kJsonRpcInvalidRequest = -32600;
inline constexpr int kJsonRpcMethodNotFound = -32601;
inline constexpr int kJsonRpcInvalidParams = -32602;  // also: an unknown tool name
inline constexpr int kJsonRpcInternalError = -32603;

// JsonRpcError builds an error response; `id` is null when the request's id could not be read.
Json JsonRpcError(const Json& id, int code, const std::string& message);

// McpIncoming is one message as a transport received it: either a checked JSON-RPC message or the
// error response to send back instead (parse error, invalid request; batches are refused: MCP
// removed them in 2025-06-18).
struct McpIncoming {
  Json message;               // an object with "jsonrpc": "2.0"; valid when `error` is empty
  std::optional<Json> error;  // the response to send instead of handling the message
  bool IsRequest() const;     // a method and an id: it gets exactly one response
  std::string Method() const;
};
McpIncoming ParseMcpMessage(const std::string& text);

// McpSessionSpec is what one MCP session works on; empty fields take McpOptions'.
struct McpSessionSpec {
  std::string task;  // a task reference as `judge --task` takes it
  std::string device;
  std::string policy;
};

struct McpOptions {
  std::string task;    // the task of sessions that name none (`--mcp-task`, `mcp --task`)
  std::string device;  // empty: the environment's default
  std::string policy;
  std::string server_version = "0.0.0";
};

class McpServer {
 public:
  McpServer(Environment& env, McpOptions options);
  // The destructor forgets the MCP sessions without closing their Environment sessions: the
  // Environment's Shutdown decides about those (it keeps their folders).
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // StartSession makes an MCP session (before its `initialize`) and returns its id, a random
  // token; an error when neither `spec` nor the options name a task.
  Result<std::string> StartSession(const McpSessionSpec& spec);
  bool HasSession(const std::string& session_id) const;
  // Handle answers one checked message (ParseMcpMessage) of a session: the response to a request,
  // nullopt for notifications and for responses. Tool failures are results with isError: true;
  // JSON-RPC errors are for the protocol (unknown method or tool, bad params, not initialized).
  std::optional<Json> Handle(const std::string& session_id, const Json& message);
  // EndSession forgets the MCP session and closes its Environment session; false when unknown.
  bool EndSession(const std::string& session_id);
  size_t SessionCount() const;

  // Tools: the MCP tool list (the agent's tools, then `task`, `grade`, `evaluate`).
  Json Tools() const;

 private:
  struct Session;
  std::shared_ptr<Session> Find(const std::string& session_id) const;
  Json Initialize(Session& session, const Json& params);
  Json CallTool(Session& session, const Json& params);
  // EnsureOpened opens the session's Environment session on first use; its id or an error text.
  Result<std::string> EnsureOpened(Session& session);
  Json TaskTool(Session& session);
  Json GradeTool(Session& session);
  Json EvaluateTool(Session& session, const Json& arguments);

  Environment& env_;
  McpOptions options_;
  mutable std::mutex mutex_;
  // Shared: a DELETE may end a session while one of its calls is still running.
  std::map<std::string, std::shared_ptr<Session>> sessions_;
};

// RunMcpStdio serves one MCP session over newline-delimited JSON-RPC: messages on `in`, responses
// on `out` (one line each, flushed), nothing else on `out`. Returns at end of input, leaving the
// session's Environment session to the caller (`cuda-agent mcp` shuts the Environment down, which
// keeps the workspace).
Status RunMcpStdio(McpServer& server, const McpSessionSpec& spec, std::istream& in,
                   std::ostream& out);

}  // namespace cuda_agent
