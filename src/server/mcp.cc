// mcp.cc — the MCP protocol over an Environment (mcp.h): message checks, the handshake, tools/list
// and tools/call, the stdio transport.
#include "server/mcp.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "common/log.h"

namespace cuda_agent {
namespace {

constexpr const char* kServerName = "cuda-agent";

constexpr const char* kInstructions =
    "An environment for writing custom CUDA kernels (C++ kernels on the cpu device) that replace "
    "a PyTorch program. Call `task` first: it answers the task (model.py) and the workspace's "
    "rules (SKILL.md). Then work in the workspace with Bash, Read, Write, Edit, MultiEdit, Glob, "
    "Grep (paths are relative to the workspace; `bash utils/compile.sh` builds, `python3 "
    "utils/verification.py` and `python3 utils/profiling.py` check and time). `grade` judges the "
    "workspace with the full pipeline and answers the reward: -1 failed, 1 correct, 2 faster than "
    "eager, 3 faster than eager and torch.compile; it ends the episode.";

std::string RandomToken() {
  std::random_device device;
  std::string token;
  char part[9];
  for (int i = 0; i < 4; ++i) {
    snprintf(part, sizeof part, "%08x", static_cast<unsigned>(device()));
    token += part;
  }
  return token;
}

Json ToolResult(const std::string& text, bool is_error) {
  return {{"content", Json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

Json ApiErrorResult(const ApiError& error) {
  std::string text = error.code + ": " + error.message;
  if (error.retry_after_s > 0) {
    char retry[64];
    snprintf(retry, sizeof retry, " (retry after %.0f s)", error.retry_after_s);
    text += retry;
  }
  return ToolResult(text, true);
}

// GradeText is the short report of a judgement that an agent reads.
std::string GradeText(const Json& result, const Json& reward) {
  std::string text = "reward: " + (reward.is_null() ? std::string("none") : reward.dump()) + "\n";
  auto field = [&](const char* key) -> std::string {
    if (!result.is_object() || !result.contains(key) || result[key].is_null()) return "";
    return result[key].is_string() ? result[key].get<std::string>() : result[key].dump();
  };
  for (const char* key : {"outcome", "stage", "correct", "reason"}) {
    std::string value = field(key);
    if (!value.empty()) text += std::string(key) + ": " + value + "\n";
  }
  if (result.is_object() && result.contains("timing") && result["timing"].is_object()) {
    const Json& timing = result["timing"];
    for (const char* key : {"speedup_vs_eager", "speedup_vs_compile"}) {
      if (timing.contains(key) && timing[key].is_number()) {
        char line[96];
        snprintf(line, sizeof line, "%s: %.3fx\n", key, timing[key].get<double>());
        text += line;
      }
    }
  }
  return text;
}

Json EnvironmentToolSpecs() {
  Json none = {{"type", "object"}, {"properties", Json::object()}};
  Json files = {{"type", "object"},
                {"properties",
                 {{"files",
                   {{"type", "object"},
                    {"description",
                     "the candidate's files by relative path, e.g. {\"model_new.py\": \"...\", "
                     "\"kernels/relu.cpp\": \"...\"}"},
                    {"additionalProperties", {{"type", "string"}}}}}}},
                {"required", {"files"}}};
  return Json::array(
      {{{"name", "task"},
        {"description",
         "The task and the rules of this environment: the PyTorch program to speed up (model.py), "
         "the device, and the workspace's SKILL.md. Call it first."},
        {"inputSchema", none}},
       {{"name", "grade"},
        {"description",
         "Judge the workspace as it is now with the full pipeline (build, verification on fresh "
         "inputs, timing against eager and torch.compile). Answers the reward (-1, 1, 2, 3 or "
         "none when no verdict was reached) and why. It ends the episode: later tool calls are "
         "refused, so check with utils/ or `evaluate` first."},
        {"inputSchema", none}},
       {{"name", "evaluate"},
        {"description",
         "Judge inline candidate files against this session's task without touching the "
         "workspace (single-shot). Answers the reward and why."},
        {"inputSchema", files}}});
}

bool IsEnvironmentTool(const std::string& name) {
  return name == "task" || name == "grade" || name == "evaluate";
}

}  // namespace

// Session is one MCP session: its handshake state and, once a tool ran, its Environment session.
struct McpServer::Session {
  std::mutex mutex;  // guards the fields below; held while the Environment session is opened
  McpSessionSpec spec;
  bool initialized = false;  // `initialize` answered
  std::string protocol_version;
  Json client_info = Json::object();
  std::string env_session_id;  // empty until the first tool call opened it
  std::string task_message;
  std::string system_prompt;
  int next_call = 0;
};

Json JsonRpcError(const Json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

bool McpIncoming::IsRequest() const {
  return !error && message.contains("method") && message.contains("id");
}

std::string McpIncoming::Method() const {
  if (error || !message.contains("method")) return "";
  return message["method"].get<std::string>();
}

McpIncoming ParseMcpMessage(const std::string& text) {
  McpIncoming in;
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    in.error = JsonRpcError(nullptr, kJsonRpcParseError, "Parse error: the message is not JSON");
    return in;
  }
  if (parsed.is_array()) {
    in.error = JsonRpcError(nullptr, kJsonRpcInvalidRequest,
                            "Invalid Request: batches are not supported (MCP 2025-06-18 removed "
                            "them); send one message at a time");
    return in;
  }
  if (!parsed.is_object()) {
    in.error = JsonRpcError(nullptr, kJsonRpcInvalidRequest,
                            "Invalid Request: a JSON-RPC message is an object");
    return in;
  }
  // The id is echoed in the error when it is one JSON-RPC allows (MCP: a string or a number).
  Json id = nullptr;
  bool has_id = parsed.contains("id");
  if (has_id && (parsed["id"].is_string() || parsed["id"].is_number_integer())) id = parsed["id"];
  auto invalid = [&](const std::string& why) {
    in.error = JsonRpcError(id, kJsonRpcInvalidRequest, "Invalid Request: " + why);
    return in;
  };
  if (!parsed.contains("jsonrpc") || parsed["jsonrpc"] != "2.0") {
    return invalid("\"jsonrpc\" must be \"2.0\"");
  }
  if (has_id && id.is_null()) return invalid("\"id\" must be a string or an integer");
  if (parsed.contains("method")) {
    if (!parsed["method"].is_string()) return invalid("\"method\" must be a string");
    if (parsed.contains("params") && !parsed["params"].is_object() &&
        !parsed["params"].is_array()) {
      return invalid("\"params\" must be an object");
    }
  } else {
    // A response to a request of ours: an id and exactly one of result and error.
    bool result = parsed.contains("result");
    bool error = parsed.contains("error");
    if (!has_id || result == error) {
      return invalid(
          "a request needs \"method\"; a response needs \"id\" and one of "
          "\"result\" and \"error\"");
    }
  }
  in.message = std::move(parsed);
  return in;
}

McpServer::McpServer(Environment& env, McpOptions options)
    : env_(env), options_(std::move(options)) {}

McpServer::~McpServer() = default;

Result<std::string> McpServer::StartSession(const McpSessionSpec& spec) {
  auto session = std::make_shared<Session>();
  session->spec = spec;
  if (session->spec.task.empty()) session->spec.task = options_.task;
  if (session->spec.device.empty()) session->spec.device = options_.device;
  if (session->spec.policy.empty()) session->spec.policy = options_.policy;
  if (session->spec.task.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "no task: start the server with --mcp-task TASK, or name one in the MCP URL "
                  "(/mcp?task=TASK)");
  }
  std::string id = RandomToken();
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_[id] = std::move(session);
  return id;
}

bool McpServer::HasSession(const std::string& session_id) const {
  return Find(session_id) != nullptr;
}

size_t McpServer::SessionCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

std::shared_ptr<McpServer::Session> McpServer::Find(const std::string& session_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? nullptr : it->second;
}

bool McpServer::EndSession(const std::string& session_id) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end()) return false;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  std::string env_session;
  {
    std::lock_guard<std::mutex> lock(session->mutex);
    env_session = session->env_session_id;
  }
  if (!env_session.empty()) {
    ApiResult<Json> closed = env_.CloseSession(env_session);
    if (!closed.ok()) LogWarn("mcp: closing session " + env_session + ": " + closed.error->message);
  }
  return true;
}

Json McpServer::Tools() const {
  Json tools = Json::array();
  for (const ToolSpec& spec : env_.Tools()) {
    tools.push_back(
        {{"name", spec.name}, {"description", spec.description}, {"inputSchema", spec.parameters}});
  }
  for (const Json& tool : EnvironmentToolSpecs()) tools.push_back(tool);
  return tools;
}

std::optional<Json> McpServer::Handle(const std::string& session_id, const Json& message) {
  const bool is_request = message.contains("method") && message.contains("id");
  const Json id = message.contains("id") ? message["id"] : Json(nullptr);
  if (!message.contains("method")) return std::nullopt;  // a response: we send no requests
  const std::string method = message["method"].get<std::string>();
  std::shared_ptr<Session> session = Find(session_id);
  if (session == nullptr) {
    if (!is_request) return std::nullopt;
    return JsonRpcError(id, kJsonRpcInvalidRequest, "Invalid Request: no such MCP session");
  }
  if (!is_request) {
    // notifications/initialized, notifications/cancelled (a tool call cannot be stopped midway),
    // and whatever else a client announces: nothing to answer.
    if (method == "notifications/initialized") LogDebug("mcp: session " + session_id + " ready");
    return std::nullopt;
  }
  Json params = message.contains("params") ? message["params"] : Json::object();
  auto answer = [&](Json result) {
    return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
  };
  static const std::vector<std::string> kMethods = {"initialize", "ping", "tools/list",
                                                    "tools/call"};
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
    return JsonRpcError(id, kJsonRpcMethodNotFound, "Method not found: " + method);
  }
  if (method == "ping") return answer(Json::object());
  if (!params.is_object()) {
    return JsonRpcError(id, kJsonRpcInvalidParams, "Invalid params: \"params\" must be an object");
  }
  if (method == "initialize") {
    std::lock_guard<std::mutex> lock(session->mutex);
    if (session->initialized) {
      return JsonRpcError(id, kJsonRpcInvalidRequest,
                          "Invalid Request: this MCP session is initialized already");
    }
    if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string()) {
      return JsonRpcError(id, kJsonRpcInvalidParams,
                          "Invalid params: initialize needs \"protocolVersion\" (a string)");
    }
    return answer(Initialize(*session, params));
  }
  {
    std::lock_guard<std::mutex> lock(session->mutex);
    if (!session->initialized) {
      return JsonRpcError(id, kJsonRpcInvalidRequest,
                          "Invalid Request: send initialize first (" + method + " before it)");
    }
  }
  if (method == "tools/list") return answer({{"tools", Tools()}});
  // tools/call
  if (!params.contains("name") || !params["name"].is_string()) {
    return JsonRpcError(id, kJsonRpcInvalidParams,
                        "Invalid params: tools/call needs \"name\" (a string)");
  }
  if (params.contains("arguments") && !params["arguments"].is_object() &&
      !params["arguments"].is_null()) {
    return JsonRpcError(id, kJsonRpcInvalidParams,
                        "Invalid params: \"arguments\" must be an object");
  }
  const std::string name = params["name"].get<std::string>();
  bool known = IsEnvironmentTool(name);
  for (const ToolSpec& spec : env_.Tools()) known = known || spec.name == name;
  if (!known) return JsonRpcError(id, kJsonRpcInvalidParams, "Unknown tool: " + name);
  return answer(CallTool(*session, params));
}

Json McpServer::Initialize(Session& session, const Json& params) {
  const std::string requested = params["protocolVersion"].get<std::string>();
  const auto& versions = McpProtocolVersions();
  // The spec's negotiation: the client's version when we speak it, else our latest.
  session.protocol_version =
      std::find(versions.begin(), versions.end(), requested) != versions.end() ? requested
                                                                               : versions.back();
  if (params.contains("clientInfo") && params["clientInfo"].is_object()) {
    session.client_info = params["clientInfo"];
  }
  session.initialized = true;
  LogInfo("mcp: session for " + session.client_info.value("name", std::string("a client")) +
          " (protocol " + session.protocol_version + ", task " + session.spec.task + ")");
  return {{"protocolVersion", session.protocol_version},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", kServerName}, {"version", options_.server_version}}},
          {"instructions", kInstructions}};
}

Result<std::string> McpServer::EnsureOpened(Session& session) {
  std::lock_guard<std::mutex> lock(session.mutex);
  if (!session.env_session_id.empty()) return session.env_session_id;
  OpenSessionRequest request;
  request.task = Json(session.spec.task);
  request.device = session.spec.device;
  request.policy = session.spec.policy;
  ApiResult<SessionOpened> opened = env_.OpenSession(request);
  if (!opened.ok()) {
    return Status(StatusCode::kFailedPrecondition,
                  "could not open the environment session: " + opened.error->code + ": " +
                      opened.error->message);
  }
  session.env_session_id = opened.value->session_id;
  session.task_message = opened.value->task_message;
  session.system_prompt = opened.value->system_prompt;
  LogInfo("mcp: environment session " + session.env_session_id + " for " + session.spec.task);
  return session.env_session_id;
}

Json McpServer::CallTool(Session& session, const Json& params) {
  const std::string name = params["name"].get<std::string>();
  Json arguments = params.contains("arguments") && params["arguments"].is_object()
                       ? params["arguments"]
                       : Json::object();
  if (name == "evaluate") return EvaluateTool(session, arguments);
  if (name == "task") return TaskTool(session);
  if (name == "grade") return GradeTool(session);
  Result<std::string> env_session = EnsureOpened(session);
  if (!env_session.ok()) return ToolResult(env_session.status().message(), true);
  std::string call_id;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    call_id = "mcp-" + std::to_string(++session.next_call);
  }
  ApiResult<CallAnswer> call = env_.Call(env_session.value(), call_id, name, arguments.dump());
  if (!call.ok()) return ApiErrorResult(*call.error);
  return ToolResult(call.value->observation.text, call.value->observation.is_error);
}

Json McpServer::TaskTool(Session& session) {
  Result<std::string> env_session = EnsureOpened(session);
  if (!env_session.ok()) return ToolResult(env_session.status().message(), true);
  std::lock_guard<std::mutex> lock(session.mutex);
  return ToolResult(session.task_message +
                        "\n\n---- SKILL.md (the rules of this workspace) ----\n\n" +
                        session.system_prompt,
                    false);
}

Json McpServer::GradeTool(Session& session) {
  Result<std::string> env_session = EnsureOpened(session);
  if (!env_session.ok()) return ToolResult(env_session.status().message(), true);
  ApiResult<GradeAnswer> grade = env_.Grade(env_session.value());
  if (!grade.ok()) return ApiErrorResult(*grade.error);
  Json result = ToolResult(GradeText(grade.value->result, grade.value->reward), false);
  result["structuredContent"] = {{"reward", grade.value->reward}, {"result", grade.value->result}};
  return result;
}

Json McpServer::EvaluateTool(Session& session, const Json& arguments) {
  McpSessionSpec spec;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    spec = session.spec;
  }
  ApiResult<Json> evaluated = env_.Evaluate(Json(spec.task), arguments.value("files", Json()),
                                            spec.device, spec.policy, true);
  if (!evaluated.ok()) return ApiErrorResult(*evaluated.error);
  const Json& answer = evaluated.value.value();
  Json reward = answer.value("reward", Json(nullptr));
  Json judged = answer.value("result", Json::object());
  Json result = ToolResult(GradeText(judged, reward), false);
  result["structuredContent"] = {{"reward", reward}, {"result", judged}};
  return result;
}

Status RunMcpStdio(McpServer& server, const McpSessionSpec& spec, std::istream& in,
                   std::ostream& out) {
  Result<std::string> session = server.StartSession(spec);
  if (!session.ok()) return session.status();
  auto send = [&](const Json& message) {
    out << message.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    out.flush();
  };
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    McpIncoming incoming = ParseMcpMessage(line);
    if (incoming.error) {
      send(*incoming.error);
      continue;
    }
    std::optional<Json> reply;
    try {
      reply = server.Handle(session.value(), incoming.message);
    } catch (const std::exception& e) {
      // A bug of ours answers the request instead of ending the client's session.
      LogError(std::string("mcp: internal error: ") + e.what());
      if (incoming.IsRequest()) {
        reply = JsonRpcError(incoming.message["id"], kJsonRpcInternalError,
                             std::string("Internal error: ") + e.what());
      }
    }
    if (reply) send(*reply);
  }
  return Status();
}

}  // namespace cuda_agent
