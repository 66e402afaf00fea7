// mcp_test.cc — the MCP protocol over a real Environment on the CPU: message checks, the handshake
// and its version negotiation, tools/list, tool calls in the session's workspace, tool failures as
// isError results, protocol errors, the Environment session's lifetime, the stdio loop and the
// Streamable HTTP transport's status codes. The SDK-client tests are tests/server/test_mcp.py.
#include "server/mcp.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/test_dir.h"
#include "server/http_api.h"
#include "server/mcp_http.h"

namespace cuda_agent {
namespace {

const std::string kTask = std::string(CUDA_AGENT_SOURCE_DIR) + "/examples/relu_scale/model.py";

Json Request(int id, const std::string& method, Json params = Json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

Json Initialize(int id, const std::string& version) {
  return Request(id, "initialize",
                 {{"protocolVersion", version},
                  {"capabilities", Json::object()},
                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
}

Json CallTool(int id, const std::string& name, Json arguments) {
  return Request(id, "tools/call", {{"name", name}, {"arguments", std::move(arguments)}});
}

TEST(McpMessage, ChecksJsonRpc) {
  EXPECT_EQ((*ParseMcpMessage("{oops").error)["error"]["code"], kJsonRpcParseError);
  EXPECT_TRUE((*ParseMcpMessage("{oops").error)["id"].is_null());
  for (const char* text :
       {"[]", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "3", R"("ping")",
        R"({"id":1,"method":"ping"})", R"({"jsonrpc":"1.0","id":1,"method":"ping"})",
        R"({"jsonrpc":"2.0","id":null,"method":"ping"})", R"({"jsonrpc":"2.0","id":1,"method":4})",
        R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})", R"({"jsonrpc":"2.0","id":1})",
        R"({"jsonrpc":"2.0","id":1,"result":{},"error":{}})"}) {
    McpIncoming in = ParseMcpMessage(text);
    ASSERT_TRUE(in.error) << text;
    EXPECT_EQ((*in.error)["error"]["code"], kJsonRpcInvalidRequest) << text;
  }
  // The id survives into the error when it is a valid one.
  EXPECT_EQ((*ParseMcpMessage(R"({"jsonrpc":"1.0","id":"a","method":"ping"})").error)["id"], "a");
  McpIncoming request = ParseMcpMessage(R"({"jsonrpc":"2.0","id":"x","method":"tools/list"})");
  EXPECT_FALSE(request.error);
  EXPECT_TRUE(request.IsRequest());
  EXPECT_EQ(request.Method(), "tools/list");
  McpIncoming note = ParseMcpMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_FALSE(note.error);
  EXPECT_FALSE(note.IsRequest());
  McpIncoming response = ParseMcpMessage(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  EXPECT_FALSE(response.error);
  EXPECT_FALSE(response.IsRequest());
}

class McpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<HarnessEnv> harness = HarnessEnv::Discover();
    ASSERT_TRUE(harness.ok()) << harness.status().message();
    judge_ = std::make_unique<InProcessJudge>(harness.value());
    EnvironmentOptions options;
    options.state_dir = dir_.path() / "state";
    options.judge.device = Device::kCpu;
    options.binary = fs::path(CUDA_AGENT_SOURCE_DIR) / "build" / "cuda-agent";
    options.env = harness.value();
    options.default_turn_limit = 4;
    Result<std::unique_ptr<Environment>> env = Environment::Open(options, *judge_);
    ASSERT_TRUE(env.ok()) << env.status().message();
    env_ = std::move(env).value();
    mcp_ = std::make_unique<McpServer>(
        *env_, McpOptions{.task = kTask, .device = "cpu", .policy = "", .server_version = "test"});
  }
  void TearDown() override {
    mcp_.reset();
    if (env_) env_->Shutdown(5);
  }

  std::string Started() {
    Result<std::string> made = mcp_->StartSession({});
    EXPECT_TRUE(made.ok());
    const std::string id = made.value();
    Json init = *mcp_->Handle(id, Initialize(1, "2025-06-18"));
    EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18") << init.dump();
    EXPECT_FALSE(mcp_->Handle(id, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
    return id;
  }

  TestDir dir_{"mcp"};
  std::unique_ptr<JudgeService> judge_;
  std::unique_ptr<Environment> env_;
  std::unique_ptr<McpServer> mcp_;
};

TEST_F(McpServerTest, NegotiatesTheProtocolVersion) {
  for (const auto& [asked, answered] :
       std::vector<std::pair<std::string, std::string>>{{"2024-11-05", "2024-11-05"},
                                                        {"2025-03-26", "2025-03-26"},
                                                        {"2025-11-25", "2025-11-25"},
                                                        {"2026-07-28", "2025-11-25"},
                                                        {"1.0", "2025-11-25"}}) {
    std::string id = mcp_->StartSession({}).value();
    Json init = *mcp_->Handle(id, Initialize(7, asked));
    EXPECT_EQ(init["id"], 7);
    EXPECT_EQ(init["result"]["protocolVersion"], answered) << asked;
    EXPECT_EQ(init["result"]["serverInfo"]["name"], "cuda-agent");
    EXPECT_EQ(init["result"]["capabilities"]["tools"]["listChanged"], false);
    EXPECT_NE(init["result"]["instructions"].get<std::string>().find("task"), std::string::npos);
    // Once is enough.
    EXPECT_EQ((*mcp_->Handle(id, Initialize(8, asked)))["error"]["code"], kJsonRpcInvalidRequest);
    EXPECT_TRUE(mcp_->EndSession(id));
  }
  std::string id = mcp_->StartSession({}).value();
  EXPECT_EQ((*mcp_->Handle(id, Request(1, "initialize")))["error"]["code"], kJsonRpcInvalidParams);
}

TEST_F(McpServerTest, RefusesWorkBeforeInitializeButAnswersPing) {
  std::string id = mcp_->StartSession({}).value();
  EXPECT_EQ((*mcp_->Handle(id, Request(1, "ping")))["result"], Json::object());
  Json early = *mcp_->Handle(id, Request(2, "tools/list"));
  EXPECT_EQ(early["error"]["code"], kJsonRpcInvalidRequest);
  EXPECT_EQ((*mcp_->Handle(id, Request(3, "server/discover")))["error"]["code"],
            kJsonRpcMethodNotFound);
  EXPECT_EQ((*mcp_->Handle("nope", Request(4, "ping")))["error"]["code"], kJsonRpcInvalidRequest);
}

TEST_F(McpServerTest, ListsTheAgentToolsAndTheEnvironmentTools) {
  std::string id = Started();
  Json tools = (*mcp_->Handle(id, Request(2, "tools/list")))["result"]["tools"];
  std::vector<std::string> names;
  for (const Json& tool : tools) {
    names.push_back(tool["name"]);
    EXPECT_EQ(tool["inputSchema"]["type"], "object") << tool.dump();
    EXPECT_FALSE(tool["description"].get<std::string>().empty());
  }
  std::vector<std::string> expected;
  for (const ToolSpec& spec : env_->Tools()) expected.push_back(spec.name);
  expected.insert(expected.end(), {"task", "grade", "evaluate"});
  EXPECT_EQ(names, expected);
  EXPECT_EQ(names.size(), 13u);
}

TEST_F(McpServerTest, CallsToolsInOneEnvironmentSession) {
  std::string id = Started();
  EXPECT_EQ(env_->StatusPage()["sessions"].size(), 0u);  // nothing opened by the handshake
  Json wrote =
      *mcp_->Handle(id, CallTool(3, "Write", {{"file_path", "notes.txt"}, {"content", "hi"}}));
  EXPECT_EQ(wrote["result"]["isError"], false) << wrote.dump();
  Json read = *mcp_->Handle(id, CallTool(4, "Bash", {{"command", "cat notes.txt"}}));
  EXPECT_EQ(read["result"]["isError"], false) << read.dump();
  EXPECT_NE(read["result"]["content"][0]["text"].get<std::string>().find("hi"), std::string::npos);
  ASSERT_EQ(env_->StatusPage()["sessions"].size(), 1u);
  std::string env_session = env_->StatusPage()["sessions"][0]["session_id"];

  // Tool failures are results; the model reads them.
  Json missing = *mcp_->Handle(id, CallTool(5, "Read", {{"file_path", "none.py"}}));
  EXPECT_EQ(missing["result"]["isError"], true);
  Json bad = *mcp_->Handle(id, CallTool(6, "Write", {{"content", 3}}));
  EXPECT_EQ(bad["result"]["isError"], true);
  // The turn limit (4) is reached: the environment's refusal is a result too.
  Json over = *mcp_->Handle(id, CallTool(7, "Read", {{"file_path", "notes.txt"}}));
  EXPECT_EQ(over["result"]["isError"], true) << over.dump();
  EXPECT_NE(over["result"]["content"][0]["text"].get<std::string>().find("turn_limit"),
            std::string::npos)
      << over.dump();

  // Protocol errors.
  EXPECT_EQ((*mcp_->Handle(id, CallTool(8, "Nope", Json::object())))["error"]["code"],
            kJsonRpcInvalidParams);
  EXPECT_EQ((*mcp_->Handle(id, Request(9, "tools/call", {{"arguments", {}}})))["error"]["code"],
            kJsonRpcInvalidParams);
  EXPECT_EQ((*mcp_->Handle(id, CallTool(10, "Read", Json::array())))["error"]["code"],
            kJsonRpcInvalidParams);
  EXPECT_EQ((*mcp_->Handle(id, Request(11, "resources/list")))["error"]["code"],
            kJsonRpcMethodNotFound);

  // Ending the MCP session closes the environment session.
  EXPECT_TRUE(mcp_->EndSession(id));
  EXPECT_FALSE(mcp_->EndSession(id));
  ApiResult<Json> status = env_->SessionStatus(env_session);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ((*status.value)["status"], "closed");
}

TEST_F(McpServerTest, TaskToolAnswersTheTaskAndTheRules) {
  std::string id = Started();
  Json task = *mcp_->Handle(id, CallTool(2, "task", Json::object()));
  std::string text = task["result"]["content"][0]["text"];
  EXPECT_EQ(task["result"]["isError"], false);
  EXPECT_NE(text.find("class Model"), std::string::npos);
  EXPECT_NE(text.find("SKILL.md"), std::string::npos);
}

TEST_F(McpServerTest, ABadTaskIsAToolErrorAndNoTaskIsRefused) {
  Result<std::string> bad =
      mcp_->StartSession({.task = "/no/such/task.py", .device = "", .policy = ""});
  ASSERT_TRUE(bad.ok());
  mcp_->Handle(bad.value(), Initialize(1, "2025-11-25"));
  Json call = *mcp_->Handle(bad.value(), CallTool(2, "Read", {{"file_path", "model.py"}}));
  EXPECT_EQ(call["result"]["isError"], true);
  EXPECT_NE(call["result"]["content"][0]["text"].get<std::string>().find("/no/such/task.py"),
            std::string::npos);
  McpServer no_default(*env_, {});
  EXPECT_FALSE(no_default.StartSession({}).ok());
}

TEST_F(McpServerTest, StdioAnswersLineByLine) {
  std::istringstream in(
      "{oops\n"
      "\n" +
      Initialize(1, "2025-11-25").dump() + "\n" +
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})" + "\n" +
      Request(2, "tools/list").dump() + "\r\n" + CallTool(3, "Nope", Json::object()).dump() + "\n");
  std::ostringstream out;
  ASSERT_TRUE(RunMcpStdio(*mcp_, {}, in, out).ok());
  std::vector<Json> lines;
  std::istringstream answers(out.str());
  for (std::string line; std::getline(answers, line);) lines.push_back(Json::parse(line));
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0]["error"]["code"], kJsonRpcParseError);
  EXPECT_EQ(lines[1]["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(lines[2]["result"]["tools"].size(), 13u);
  EXPECT_EQ(lines[3]["error"]["code"], kJsonRpcInvalidParams);
  EXPECT_EQ(mcp_->SessionCount(), 1u);  // left to the caller at end of input
}

HttpRequest Post(const std::string& body, std::map<std::string, std::string> headers = {}) {
  HttpRequest request;
  request.method = "POST";
  request.path = kMcpPath;
  request.body = body;
  request.headers = std::move(headers);
  return request;
}

std::string HeaderOf(const HttpResponse& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

TEST_F(McpServerTest, StreamableHttpStatusCodes) {
  EXPECT_EQ(HandleMcpHttp(*mcp_, Post("{oops")).status, 400);
  HttpResponse no_session = HandleMcpHttp(*mcp_, Post(Request(1, "tools/list").dump()));
  EXPECT_EQ(no_session.status, 400);
  EXPECT_EQ(Json::parse(no_session.body)["error"]["code"], kJsonRpcInvalidRequest);
  EXPECT_EQ(HandleMcpHttp(*mcp_, Post(Initialize(1, "2025-11-25").dump(),
                                      {{"origin", "http://evil.example"}, {"host", "h:1"}}))
                .status,
            403);
  EXPECT_EQ(HandleMcpHttp(*mcp_, Post(Initialize(1, "2025-11-25").dump(),
                                      {{"origin", "http://h:9"}, {"host", "h:1"}}))
                .status,
            200);
  HttpRequest get;
  get.method = "GET";
  get.path = kMcpPath;
  HttpResponse got = HandleMcpHttp(*mcp_, get);
  EXPECT_EQ(got.status, 405);
  EXPECT_EQ(HeaderOf(got, "Allow"), "POST, DELETE");

  size_t before = mcp_->SessionCount();
  HttpResponse init = HandleMcpHttp(*mcp_, Post(Initialize(1, "2025-11-25").dump()));
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(init.content_type, "application/json");
  std::string session = HeaderOf(init, kMcpSessionHeader);
  EXPECT_EQ(session.size(), 32u);
  EXPECT_EQ(mcp_->SessionCount(), before + 1);
  // A failed handshake leaves no session.
  HttpResponse failed = HandleMcpHttp(*mcp_, Post(Request(1, "initialize").dump()));
  EXPECT_EQ(Json::parse(failed.body)["error"]["code"], kJsonRpcInvalidParams);
  EXPECT_EQ(HeaderOf(failed, kMcpSessionHeader), "");
  EXPECT_EQ(mcp_->SessionCount(), before + 1);

  std::map<std::string, std::string> h = {{"mcp-session-id", session},
                                          {"mcp-protocol-version", "2025-11-25"}};
  HttpResponse note =
      HandleMcpHttp(*mcp_, Post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", h));
  EXPECT_EQ(note.status, 202);
  EXPECT_EQ(note.body, "");
  EXPECT_EQ(HandleMcpHttp(*mcp_, Post(Request(2, "tools/list").dump(), h)).status, 200);
  auto old = h;
  old["mcp-protocol-version"] = "2023-01-01";
  EXPECT_EQ(HandleMcpHttp(*mcp_, Post(Request(3, "tools/list").dump(), old)).status, 400);

  HttpRequest del;
  del.method = "DELETE";
  del.path = kMcpPath;
  del.headers = h;
  EXPECT_EQ(HandleMcpHttp(*mcp_, del).status, 204);
  EXPECT_EQ(HandleMcpHttp(*mcp_, del).status, 404);
  EXPECT_EQ(HandleMcpHttp(*mcp_, Post(Request(4, "ping").dump(), h)).status, 404);

  // The task in the URL.
  HttpRequest named = Post(Initialize(1, "2025-11-25").dump());
  named.query["task"] = "/no/such/task.py";
  HttpResponse named_init = HandleMcpHttp(*mcp_, named);
  ASSERT_EQ(named_init.status, 200);
  std::map<std::string, std::string> nh = {
      {"mcp-session-id", HeaderOf(named_init, kMcpSessionHeader)}};
  HttpResponse call =
      HandleMcpHttp(*mcp_, Post(CallTool(2, "Read", {{"file_path", "model.py"}}).dump(), nh));
  Json result = Json::parse(call.body)["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find("/no/such/task.py"),
            std::string::npos);
}

TEST_F(McpServerTest, ServeMountsMcpBehindTheToken) {
  HttpApi api(*env_, {.token = "secret",
                      .status_token = "peek",
                      .max_body_bytes = 1 << 20,
                      .version = "t",
                      .mcp = mcp_.get()});
  HttpResponse refused = api.Handle(Post(Initialize(1, "2025-11-25").dump()));
  EXPECT_EQ(refused.status, 401);
  // The status token opens the status page only.
  HttpResponse peek =
      api.Handle(Post(Initialize(1, "2025-11-25").dump(), {{"authorization", "Bearer peek"}}));
  EXPECT_EQ(peek.status, 401);
  EXPECT_NE(peek.body.find("opens only the status page"), std::string::npos) << peek.body;
  HttpResponse wrong =
      api.Handle(Post(Initialize(1, "2025-11-25").dump(), {{"authorization", "Bearer nope"}}));
  EXPECT_EQ(wrong.status, 401);
  HttpResponse init =
      api.Handle(Post(Initialize(1, "2025-11-25").dump(), {{"authorization", "Bearer secret"}}));
  ASSERT_EQ(init.status, 200) << init.body;
  EXPECT_EQ(HeaderOf(init, kMcpSessionHeader).size(), 32u);
  // Without an McpServer, /mcp is no route of the HTTP API.
  HttpApi plain(
      *env_,
      {.token = "", .status_token = "", .max_body_bytes = 1 << 20, .version = "t", .mcp = nullptr});
  EXPECT_EQ(plain.Handle(Post(Initialize(1, "2025-11-25").dump())).status, 404);
}

}  // namespace
}  // namespace cuda_agent
