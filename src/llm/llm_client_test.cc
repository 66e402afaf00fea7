// llm_client_test.cc — spec parsing, and the pure conversions of both providers: request JSON,
// answers, streamed events, retry arithmetic. No network.
#include "llm/llm_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/host_environment.h"
#include "llm/anthropic_client.h"
#include "llm/http_client.h"
#include "llm/openai_client.h"

namespace cuda_agent {
namespace {

ChatMessage Message(const std::string& role, const std::string& content,
                    const std::string& tool_call_id = "", bool is_error = false) {
  ChatMessage m;
  m.role = role;
  m.content = content;
  m.tool_call_id = tool_call_id;
  m.is_error = is_error;
  return m;
}

// A conversation with everything: text, two tool calls (one with invalid JSON arguments), their
// results (one an error), and a user message after them.
ChatRequest Conversation() {
  ChatRequest request;
  request.system = "be brief";
  request.messages.push_back(Message("user", "list files"));
  ChatMessage assistant = Message("assistant", "Looking.");
  assistant.tool_calls = {{"call_a", "Bash", R"({"command":"ls"})"},
                          {"call_b", "Read", R"({"path": "x)"}};
  request.messages.push_back(assistant);
  request.messages.push_back(Message("tool", "a.py\nb.py", "call_a"));
  request.messages.push_back(Message("tool", "error: bad JSON", "call_b", true));
  request.messages.push_back(Message("user", "go on"));
  ChatMessage calls_only = Message("assistant", "");
  calls_only.tool_calls = {{"call_c", "Bash", R"({"command":"pwd"})"}};
  request.messages.push_back(calls_only);
  request.messages.push_back(Message("tool", "/w", "call_c"));
  request.tools = {{"Bash", "run a command",
                    Json{{"type", "object"}, {"properties", {{"command", {{"type", "string"}}}}}}}};
  request.max_output_tokens = 123;
  return request;
}

std::vector<SseEvent> Events(std::initializer_list<std::pair<std::string, std::string>> list) {
  std::vector<SseEvent> out;
  for (const auto& [event, data] : list) out.push_back({event, data, ""});
  return out;
}

// --- specs -------------------------------------------------------------------------------------

TEST(MakeLlmClientTest, BadSpecsNameTheProblemAndAGoodExample) {
  for (const std::string spec :
       {"", "gpt4", "openai:", "openai:http://127.0.0.1:8000/v1", "openai:127.0.0.1:8000/v1#m",
        "openai:http://127.0.0.1/v1#", "openai:http://#m", "anthropic:", "replay:", "mistral:x"}) {
    Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(spec, {});
    ASSERT_FALSE(client.ok()) << spec;
    EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument) << spec;
    EXPECT_NE(client.status().message().find("openai:http://127.0.0.1:8000/v1#"), std::string::npos)
        << client.status().message();
  }
}

TEST(MakeLlmClientTest, OpenAiSpec) {
  Result<std::unique_ptr<LlmClient>> client =
      MakeLlmClient("openai:http://127.0.0.1:8000/v1/#Qwen/Qwen3-8B", {});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ(client.value()->Describe(), "openai:Qwen/Qwen3-8B at http://127.0.0.1:8000/v1");
}

TEST(MakeLlmClientTest, AnthropicNeedsAKeyUnlessLoopback) {
  unsetenv("ANTHROPIC_API_KEY");
  CaptureHostEnvironment();
  setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com", 1);
  CaptureHostEnvironment();
  Result<std::unique_ptr<LlmClient>> remote = MakeLlmClient("anthropic:claude-x", {});
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(remote.status().message().find("ANTHROPIC_API_KEY"), std::string::npos);

  setenv("ANTHROPIC_BASE_URL", "http://localhost:9/", 1);
  CaptureHostEnvironment();
  Result<std::unique_ptr<LlmClient>> local = MakeLlmClient("anthropic:claude-x", {});
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(local.value()->Describe(), "anthropic:claude-x at http://localhost:9/");

  setenv("ANTHROPIC_BASE_URL", "ftp://x", 1);
  CaptureHostEnvironment();
  EXPECT_EQ(MakeLlmClient("anthropic:claude-x", {}).status().code(), StatusCode::kInvalidArgument);
  unsetenv("ANTHROPIC_BASE_URL");
  CaptureHostEnvironment();
}

TEST(HttpClientTest, LoopbackUrls) {
  EXPECT_TRUE(IsLoopbackUrl("http://127.0.0.1:8000/v1"));
  EXPECT_TRUE(IsLoopbackUrl("http://LOCALHOST"));
  EXPECT_TRUE(IsLoopbackUrl("https://[::1]:443/x"));
  EXPECT_FALSE(IsLoopbackUrl("https://api.anthropic.com"));
  EXPECT_FALSE(IsLoopbackUrl("http://127example.com"));
  EXPECT_FALSE(IsLoopbackUrl("localhost:80"));
}

TEST(AnthropicClientTest, MessagesUrl) {
  EXPECT_EQ(AnthropicMessagesUrl("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(AnthropicMessagesUrl("http://h:1/"), "http://h:1/v1/messages");
  EXPECT_EQ(AnthropicMessagesUrl("http://h:1/v1"), "http://h:1/v1/messages");
}

// --- retry arithmetic --------------------------------------------------------------------------

TEST(RetryRulesTest, RetryableStatuses) {
  for (int status : {408, 409, 429, 500, 502, 503, 529})
    EXPECT_TRUE(IsRetryableHttpStatus(status)) << status;
  for (int status : {200, 400, 401, 403, 404, 422})
    EXPECT_FALSE(IsRetryableHttpStatus(status)) << status;
}

TEST(RetryRulesTest, BackoffDoublesHonoursRetryAfterAndIsCapped) {
  LlmOptions options;
  options.backoff_initial_s = 0.5;
  options.backoff_max_s = 5;
  EXPECT_DOUBLE_EQ(BackoffSeconds(1, options, -1), 0.5);
  EXPECT_DOUBLE_EQ(BackoffSeconds(2, options, -1), 1.0);
  EXPECT_DOUBLE_EQ(BackoffSeconds(3, options, -1), 2.0);
  EXPECT_DOUBLE_EQ(BackoffSeconds(10, options, -1), 5.0);
  EXPECT_DOUBLE_EQ(BackoffSeconds(1, options, 3), 3.0);
  EXPECT_DOUBLE_EQ(BackoffSeconds(1, options, 30), 5.0);
  EXPECT_DOUBLE_EQ(BackoffSeconds(3, options, 0), 2.0);
}

TEST(RetryRulesTest, RetryAfterHeaders) {
  EXPECT_DOUBLE_EQ(RetryAfterSeconds({{"retry-after", "7"}}), 7);
  EXPECT_DOUBLE_EQ(RetryAfterSeconds({{"retry-after", "1.5"}}), 1.5);
  EXPECT_DOUBLE_EQ(RetryAfterSeconds({{"retry-after-ms", "250"}, {"retry-after", "9"}}), 0.25);
  EXPECT_DOUBLE_EQ(RetryAfterSeconds({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}), -1);
  EXPECT_DOUBLE_EQ(RetryAfterSeconds({}), -1);
}

TEST(RetryRulesTest, ErrorMessagesOfEveryShape) {
  EXPECT_EQ(
      ErrorMessageFromBody(R"({"error":{"message":"bad key","type":"invalid_request_error"}})"),
      "invalid_request_error: bad key");
  EXPECT_EQ(ErrorMessageFromBody(
                R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
            "overloaded_error: Overloaded");
  EXPECT_EQ(ErrorMessageFromBody(R"({"object":"error","message":"model not found"})"),
            "model not found");
  EXPECT_EQ(ErrorMessageFromBody(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(ErrorMessageFromBody("<html>502 Bad Gateway</html>"), "<html>502 Bad Gateway</html>");
  EXPECT_EQ(ErrorMessageFromBody(""), "(empty body)");
  EXPECT_LE(ErrorMessageFromBody(std::string(5000, 'x')).size(), 310u);
}

// --- OpenAI ------------------------------------------------------------------------------------

TEST(OpenAiClientTest, RequestBody) {
  Json body =
      OpenAiRequestBody(Conversation(), "qwen", /*stream=*/true, /*max_completion_tokens=*/false);
  EXPECT_EQ(body["model"], "qwen");
  EXPECT_EQ(body["max_tokens"], 123);
  EXPECT_FALSE(body.contains("max_completion_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  const Json& m = body["messages"];
  ASSERT_EQ(m.size(), 8u);
  EXPECT_EQ(m[0], (Json{{"role", "system"}, {"content", "be brief"}}));
  EXPECT_EQ(m[1], (Json{{"role", "user"}, {"content", "list files"}}));
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_EQ(m[2]["content"], "Looking.");
  ASSERT_EQ(m[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[2]["tool_calls"][0],
            (Json{{"id", "call_a"},
                  {"type", "function"},
                  {"function", {{"name", "Bash"}, {"arguments", R"({"command":"ls"})"}}}}));
  EXPECT_EQ(m[2]["tool_calls"][1]["function"]["arguments"], R"({"path": "x)");
  EXPECT_EQ(m[3], (Json{{"role", "tool"}, {"tool_call_id", "call_a"}, {"content", "a.py\nb.py"}}));
  EXPECT_EQ(m[4]["tool_call_id"], "call_b");
  EXPECT_EQ(m[5], (Json{{"role", "user"}, {"content", "go on"}}));
  EXPECT_TRUE(m[6]["content"].is_null());
  EXPECT_EQ(m[7]["tool_call_id"], "call_c");
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "Bash");
  EXPECT_EQ(body["tools"][0]["function"]["description"], "run a command");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["properties"]["command"]["type"], "string");

  ChatRequest plain;
  plain.messages.push_back(Message("user", "hi"));
  plain.temperature = 0;
  Json official = OpenAiRequestBody(plain, "gpt", /*stream=*/false, /*max_completion_tokens=*/true);
  EXPECT_EQ(official["max_completion_tokens"], 8192);
  EXPECT_FALSE(official.contains("max_tokens"));
  EXPECT_EQ(official["temperature"], 0.0);
  EXPECT_FALSE(official.contains("stream"));
  EXPECT_FALSE(official.contains("tools"));
  EXPECT_EQ(official["messages"].size(), 1u);  // no empty system message
}

TEST(OpenAiClientTest, ParsesAnAnswer) {
  Result<ChatResponse> r =
      ParseOpenAiResponse(R"({"choices":[{"index":0,"message":{"role":"assistant",
      "content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"ls"}},
      {"type":"function","function":{"name":"Read","arguments":{"path":"a"}}}]},"finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":50,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":32}}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message.role, "assistant");
  EXPECT_EQ(r->message.content, "");
  ASSERT_EQ(r->message.tool_calls.size(), 2u);
  EXPECT_EQ(r->message.tool_calls[0].id, "c1");
  EXPECT_EQ(r->message.tool_calls[0].arguments_text,
            "{\"command\": \"ls");  // invalid JSON passes through
  EXPECT_EQ(r->message.tool_calls[1].id, "call_1");
  EXPECT_EQ(r->message.tool_calls[1].arguments_text, R"({"path":"a"})");
  EXPECT_EQ(r->stop_reason, "tool_use");
  EXPECT_EQ(r->usage.prompt_tokens, 50);
  EXPECT_EQ(r->usage.completion_tokens, 7);
  EXPECT_EQ(r->usage.cached_prompt_tokens, 32);
}

TEST(OpenAiClientTest, StopReasons) {
  EXPECT_EQ(OpenAiStopReason("tool_calls"), "tool_use");
  EXPECT_EQ(OpenAiStopReason("stop"), "end_turn");
  EXPECT_EQ(OpenAiStopReason("length"), "max_tokens");
  EXPECT_EQ(OpenAiStopReason("content_filter"), "content_filter");
}

TEST(OpenAiClientTest, MalformedAnswersAreErrors) {
  EXPECT_FALSE(ParseOpenAiResponse("{\"choices\": [").ok());
  EXPECT_FALSE(ParseOpenAiResponse("[]").ok());
  EXPECT_FALSE(ParseOpenAiResponse(R"({"choices":[]})").ok());
  EXPECT_FALSE(ParseOpenAiResponse(R"({"error":{"message":"x"}})").ok());
}

TEST(OpenAiClientTest, AssemblesAStream) {
  std::string seen;
  std::unique_ptr<StreamAssembler> s = NewOpenAiStream([&](const std::string& t) { seen += t; });
  auto chunk = [](const std::string& delta, const std::string& finish = "null") {
    return R"({"choices":[{"index":0,"delta":)" + delta + R"(,"finish_reason":)" + finish + "}]}";
  };
  for (
      const SseEvent& e : Events({
          {"", chunk(R"({"role":"assistant","content":""})")},
          {"", chunk(R"({"content":"Hel"})")},
          {"", chunk(R"({"content":"lo"})")},
          {"",
           chunk(
               R"({"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"Bash","arguments":""}}]})")},
          {"",
           chunk(
               R"({"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"Read","arguments":"{\"pa"}}]})")},
          {"", chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]})")},
          {"", chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"and\": \"ls\"}"}}]})")},
          {"", chunk(R"({"tool_calls":[{"index":1,"function":{"arguments":"th\": \"x"}}]})")},
          {"", chunk("{}", "\"tool_calls\"")},
          {"", R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}})"},
      })) {
    ASSERT_TRUE(s->OnEvent(e).ok()) << e.data;
  }
  EXPECT_FALSE(s->Finished());
  ASSERT_TRUE(s->OnEvent({"", "[DONE]", ""}).ok());
  EXPECT_TRUE(s->Finished());
  ChatResponse r = s->Take();
  EXPECT_EQ(r.message.content, "Hello");
  EXPECT_EQ(seen, "Hello");
  ASSERT_EQ(r.message.tool_calls.size(), 2u);
  EXPECT_EQ(r.message.tool_calls[0].id, "c0");
  EXPECT_EQ(r.message.tool_calls[0].name, "Bash");
  EXPECT_EQ(r.message.tool_calls[0].arguments_text, R"({"command": "ls"})");
  EXPECT_EQ(r.message.tool_calls[1].name, "Read");
  EXPECT_EQ(r.message.tool_calls[1].arguments_text, R"({"path": "x)");
  EXPECT_EQ(r.stop_reason, "tool_use");
  EXPECT_EQ(r.usage.prompt_tokens, 9);
  EXPECT_EQ(r.usage.completion_tokens, 4);
}

TEST(OpenAiClientTest, BadStreamDataIsAnError) {
  EXPECT_FALSE(NewOpenAiStream({})->OnEvent({"", "{\"choices\": [", ""}).ok());
  EXPECT_FALSE(
      NewOpenAiStream({})->OnEvent({"", R"({"error":{"message":"overloaded"}})", ""}).ok());
}

// --- Anthropic ---------------------------------------------------------------------------------

TEST(AnthropicClientTest, RequestBody) {
  Json body = AnthropicRequestBody(Conversation(), "claude", /*stream=*/true);
  EXPECT_EQ(body["model"], "claude");
  EXPECT_EQ(body["system"], "be brief");
  EXPECT_EQ(body["max_tokens"], 123);
  EXPECT_EQ(body["stream"], true);
  EXPECT_FALSE(body.contains("temperature"));
  const Json& m = body["messages"];
  ASSERT_EQ(m.size(), 5u) << m.dump(1);
  EXPECT_EQ(m[0], (Json{{"role", "user"}, {"content", "list files"}}));
  EXPECT_EQ(m[1]["role"], "assistant");
  ASSERT_EQ(m[1]["content"].size(), 3u);
  EXPECT_EQ(m[1]["content"][0], (Json{{"type", "text"}, {"text", "Looking."}}));
  EXPECT_EQ(m[1]["content"][1], (Json{{"type", "tool_use"},
                                      {"id", "call_a"},
                                      {"name", "Bash"},
                                      {"input", {{"command", "ls"}}}}));
  EXPECT_EQ(m[1]["content"][2]["input"], (Json{{"invalid_arguments", R"({"path": "x)"}}));
  // Both results and the user's text after them share one user message.
  EXPECT_EQ(m[2]["role"], "user");
  ASSERT_EQ(m[2]["content"].size(), 3u);
  EXPECT_EQ(m[2]["content"][0],
            (Json{{"type", "tool_result"}, {"tool_use_id", "call_a"}, {"content", "a.py\nb.py"}}));
  EXPECT_EQ(m[2]["content"][1], (Json{{"type", "tool_result"},
                                      {"tool_use_id", "call_b"},
                                      {"content", "error: bad JSON"},
                                      {"is_error", true}}));
  EXPECT_EQ(m[2]["content"][2], (Json{{"type", "text"}, {"text", "go on"}}));
  EXPECT_EQ(m[3]["content"].size(), 1u);  // no empty text block before the call
  EXPECT_EQ(m[3]["content"][0]["type"], "tool_use");
  EXPECT_EQ(m[4]["content"][0]["tool_use_id"], "call_c");
  ASSERT_EQ(body["tools"].size(), 1u);
  EXPECT_EQ(body["tools"][0]["name"], "Bash");
  EXPECT_EQ(body["tools"][0]["description"], "run a command");
  EXPECT_EQ(body["tools"][0]["input_schema"]["properties"]["command"]["type"], "string");
}

TEST(AnthropicClientTest, ParsesAnAnswer) {
  Result<ChatResponse> r =
      ParseAnthropicResponse(R"({"type":"message","role":"assistant","content":[
      {"type":"text","text":"Sure."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],
      "stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->message.content, "Sure.");
  ASSERT_EQ(r->message.tool_calls.size(), 1u);
  EXPECT_EQ(r->message.tool_calls[0].id, "toolu_1");
  EXPECT_EQ(r->message.tool_calls[0].arguments_text, R"({"command":"ls"})");
  EXPECT_EQ(r->stop_reason, "tool_use");
  EXPECT_EQ(r->usage.prompt_tokens, 100);
  EXPECT_EQ(r->usage.cached_prompt_tokens, 90);
  EXPECT_EQ(r->usage.completion_tokens, 5);
  EXPECT_FALSE(ParseAnthropicResponse(R"({"type":"message","content":)").ok());
  EXPECT_FALSE(
      ParseAnthropicResponse(R"({"type":"error","error":{"type":"x","message":"y"}})").ok());
}

TEST(AnthropicClientTest, AssemblesAStream) {
  std::string seen;
  std::unique_ptr<StreamAssembler> s = NewAnthropicStream([&](const std::string& t) { seen += t; });
  for (
      const SseEvent& e : Events({
          {"message_start",
           R"({"type":"message_start","message":{"usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}})"},
          {"ping", R"({"type":"ping"})"},
          {"content_block_start",
           R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"},
          {"content_block_delta",
           R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi "}})"},
          {"content_block_delta",
           R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there"}})"},
          {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
          {"content_block_start",
           R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"Bash","input":{}}})"},
          {"content_block_delta",
           R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"comma"}})"},
          {"content_block_delta",
           R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"nd\": \"ls\"}"}})"},
          {"content_block_stop", R"({"type":"content_block_stop","index":1})"},
          {"content_block_start",
           R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_10","name":"Glob","input":{}}})"},
          {"content_block_stop", R"({"type":"content_block_stop","index":2})"},
          {"message_delta",
           R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":17}})"},
      })) {
    ASSERT_TRUE(s->OnEvent(e).ok()) << e.data;
  }
  EXPECT_FALSE(s->Finished());
  ASSERT_TRUE(s->OnEvent({"message_stop", R"({"type":"message_stop"})", ""}).ok());
  EXPECT_TRUE(s->Finished());
  ChatResponse r = s->Take();
  EXPECT_EQ(r.message.content, "Hi there");
  EXPECT_EQ(seen, "Hi there");
  ASSERT_EQ(r.message.tool_calls.size(), 2u);
  EXPECT_EQ(r.message.tool_calls[0].id, "toolu_9");
  EXPECT_EQ(r.message.tool_calls[0].arguments_text, R"({"command": "ls"})");
  EXPECT_EQ(r.message.tool_calls[1].arguments_text, "{}");
  EXPECT_EQ(r.stop_reason, "tool_use");
  EXPECT_EQ(r.usage.prompt_tokens, 25);
  EXPECT_EQ(r.usage.cached_prompt_tokens, 5);
  EXPECT_EQ(r.usage.completion_tokens, 17);
}

TEST(AnthropicClientTest, ErrorEventsAndBadDataAreErrors) {
  Status overloaded = NewAnthropicStream({})->OnEvent(
      {"error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
       ""});
  EXPECT_FALSE(overloaded.ok());
  EXPECT_NE(overloaded.message().find("Overloaded"), std::string::npos);
  EXPECT_FALSE(NewAnthropicStream({})->OnEvent({"content_block_delta", "{\"type\": ", ""}).ok());
}

}  // namespace
}  // namespace cuda_agent
