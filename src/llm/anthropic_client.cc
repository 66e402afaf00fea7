// anthropic_client.cc — the Anthropic Messages protocol.
#include "llm/anthropic_client.h"

#include <cstdlib>
#include <map>

#include "common/host_environment.h"
#include "llm/http_client.h"

namespace cuda_agent {
namespace {

constexpr const char* kDefaultBaseUrl = "https://api.anthropic.com";
constexpr const char* kApiVersion = "2023-06-01";

std::string StringOr(const Json& object, const char* key, const std::string& fallback = "") {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return fallback;
  return object[key].get<std::string>();
}

long LongOr(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return 0;
  return object[key].get<long>();
}

// AddUsage folds a usage object into `usage`. Anthropic's input_tokens excludes cached tokens: the
// prompt total adds the cache reads and writes.
void AddUsage(const Json& usage, TokenUsage* out) {
  if (!usage.is_object()) return;
  long input = LongOr(usage, "input_tokens");
  long cache_read = LongOr(usage, "cache_read_input_tokens");
  long cache_write = LongOr(usage, "cache_creation_input_tokens");
  if (usage.contains("input_tokens")) out->prompt_tokens = input + cache_read + cache_write;
  if (usage.contains("cache_read_input_tokens")) out->cached_prompt_tokens = cache_read;
  if (usage.contains("output_tokens")) out->completion_tokens = LongOr(usage, "output_tokens");
}

// ToolInput is the `input` object of a tool_use block for a call from the history. A call whose
// arguments were not a JSON object is kept visible to the model under one key.
Json ToolInput(const std::string& arguments_text) {
  if (arguments_text.empty()) return Json::object();
  Json parsed = Json::parse(arguments_text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) return parsed;
  return {{"invalid_arguments", arguments_text}};
}

std::string StopReason(const std::string& reason) {
  if (reason == "stop_sequence") return "end_turn";
  return reason;  // end_turn, tool_use, max_tokens pass as they are
}

class AnthropicStream : public StreamAssembler {
 public:
  explicit AnthropicStream(std::function<void(const std::string&)> on_text)
      : on_text_(std::move(on_text)) {
    response_.message.role = "assistant";
  }

  Status OnEvent(const SseEvent& event) override {
    if (event.data.empty()) return OkStatus();
    Json data = Json::parse(event.data, nullptr, /*allow_exceptions=*/false);
    if (data.is_discarded() || !data.is_object()) {
      return InvalidArgument("event data is not a JSON object: " + event.data.substr(0, 200));
    }
    std::string type = StringOr(data, "type", event.event);
    if (type == "message_start") {
      if (data.contains("message") && data["message"].is_object())
        AddUsage(data["message"].value("usage", Json()), &response_.usage);
    } else if (type == "content_block_start") {
      int index = data.value("index", 0);
      const Json block = data.value("content_block", Json::object());
      Block& b = blocks_[index];
      b.type = StringOr(block, "type");
      if (b.type == "text") {
        AppendText(StringOr(block, "text"));
      } else if (b.type == "tool_use") {
        b.call.id = StringOr(block, "id");
        b.call.name = StringOr(block, "name");
        if (block.contains("input") && block["input"].is_object() && !block["input"].empty()) {
          b.start_input = block["input"].dump();
        }
      }
    } else if (type == "content_block_delta") {
      int index = data.value("index", 0);
      const Json delta = data.value("delta", Json::object());
      std::string delta_type = StringOr(delta, "type");
      if (delta_type == "text_delta") {
        AppendText(StringOr(delta, "text"));
      } else if (delta_type == "input_json_delta") {
        blocks_[index].call.arguments_text += StringOr(delta, "partial_json");
      }
    } else if (type == "message_delta") {
      if (data.contains("delta") && data["delta"].is_object()) {
        std::string reason = StringOr(data["delta"], "stop_reason");
        if (!reason.empty()) response_.stop_reason = StopReason(reason);
      }
      AddUsage(data.value("usage", Json()), &response_.usage);
    } else if (type == "message_stop") {
      finished_ = true;
    } else if (type == "error") {
      return Internal("the server sent an error mid-stream: " + ErrorMessageFromBody(event.data));
    }
    // ping, content_block_stop and unknown events need nothing.
    return OkStatus();
  }

  bool Finished() const override { return finished_; }

  ChatResponse Take() override {
    for (auto& [index, block] : blocks_) {
      if (block.type != "tool_use") continue;
      ToolCall call = block.call;
      if (call.arguments_text.empty())
        call.arguments_text = block.start_input.empty() ? "{}" : block.start_input;
      if (call.id.empty()) call.id = GeneratedToolCallId(index);
      response_.message.tool_calls.push_back(call);
    }
    blocks_.clear();
    return std::move(response_);
  }

 private:
  struct Block {
    std::string type;
    ToolCall call;
    std::string start_input;
  };

  void AppendText(const std::string& text) {
    if (text.empty()) return;
    response_.message.content += text;
    if (on_text_) on_text_(text);
  }

  std::function<void(const std::string&)> on_text_;
  ChatResponse response_;
  std::map<int, Block> blocks_;
  bool finished_ = false;
};

class AnthropicProtocol : public ChatProtocol {
 public:
  AnthropicProtocol(std::string base_url, std::string model, std::string key)
      : base_url_(std::move(base_url)), model_(std::move(model)), key_(std::move(key)) {}

  std::string Describe() const override { return "anthropic:" + model_ + " at " + base_url_; }
  std::string Url() const override { return AnthropicMessagesUrl(base_url_); }

  std::vector<std::string> Headers() const override {
    std::vector<std::string> headers = {"Content-Type: application/json",
                                        std::string("anthropic-version: ") + kApiVersion};
    if (!key_.empty()) headers.push_back("x-api-key: " + key_);
    return headers;
  }

  Json RequestBody(const ChatRequest& request, bool stream) const override {
    return AnthropicRequestBody(request, model_, stream);
  }

  Result<ChatResponse> ParseResponse(const std::string& body) const override {
    return ParseAnthropicResponse(body);
  }

  std::unique_ptr<StreamAssembler> NewStream(
      const std::function<void(const std::string&)>& on_text) const override {
    return NewAnthropicStream(on_text);
  }

 private:
  std::string base_url_;
  std::string model_;
  std::string key_;
};

}  // namespace

Json AnthropicRequestBody(const ChatRequest& request, const std::string& model, bool stream) {
  Json messages = Json::array();
  // AppendUserBlock adds a block to the last message when it is a user message, so that the results
  // of one turn's calls (and a user text after them) form one user message.
  auto append_user_block = [&](Json block) {
    if (!messages.empty() && messages.back()["role"] == "user") {
      Json& content = messages.back()["content"];
      if (content.is_string()) content = Json::array({{{"type", "text"}, {"text", content}}});
      content.push_back(std::move(block));
      return;
    }
    messages.push_back({{"role", "user"}, {"content", Json::array({std::move(block)})}});
  };
  for (const ChatMessage& m : request.messages) {
    if (m.role == "tool") {
      Json block = {
          {"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
      if (m.is_error) block["is_error"] = true;
      append_user_block(std::move(block));
    } else if (m.role == "assistant") {
      Json content = Json::array();
      if (!m.content.empty()) content.push_back({{"type", "text"}, {"text", m.content}});
      for (const ToolCall& call : m.tool_calls) {
        content.push_back({{"type", "tool_use"},
                           {"id", call.id},
                           {"name", call.name},
                           {"input", ToolInput(call.arguments_text)}});
      }
      if (content.empty()) content.push_back({{"type", "text"}, {"text", "(no answer)"}});
      messages.push_back({{"role", "assistant"}, {"content", content}});
    } else if (!messages.empty() && messages.back()["role"] == "user") {
      append_user_block({{"type", "text"}, {"text", m.content}});
    } else {
      messages.push_back({{"role", "user"}, {"content", m.content}});
    }
  }
  Json body = {{"model", model}, {"max_tokens", request.max_output_tokens}, {"messages", messages}};
  if (!request.system.empty()) body["system"] = request.system;
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const ToolSpec& tool : request.tools) {
      Json schema = tool.parameters.is_null()
                        ? Json{{"type", "object"}, {"properties", Json::object()}}
                        : tool.parameters;
      tools.push_back(
          {{"name", tool.name}, {"description", tool.description}, {"input_schema", schema}});
    }
    body["tools"] = tools;
  }
  if (stream) body["stream"] = true;
  return body;
}

Result<ChatResponse> ParseAnthropicResponse(const std::string& body) {
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object())
    return InvalidArgument("the answer is not a JSON object");
  if (StringOr(parsed, "type") == "error")
    return Internal("the server answered an error: " + ErrorMessageFromBody(body));
  if (!parsed.contains("content") || !parsed["content"].is_array()) {
    return InvalidArgument("the answer has no content array");
  }
  ChatResponse response;
  response.message.role = "assistant";
  size_t index = 0;
  for (const Json& block : parsed["content"]) {
    std::string type = StringOr(block, "type");
    if (type == "text") {
      response.message.content += StringOr(block, "text");
    } else if (type == "tool_use") {
      ToolCall call;
      call.id = StringOr(block, "id", GeneratedToolCallId(index));
      call.name = StringOr(block, "name");
      call.arguments_text = block.contains("input") ? block["input"].dump() : "{}";
      response.message.tool_calls.push_back(call);
    }
    ++index;
  }
  response.stop_reason = StopReason(StringOr(parsed, "stop_reason"));
  AddUsage(parsed.value("usage", Json()), &response.usage);
  return response;
}

std::unique_ptr<StreamAssembler> NewAnthropicStream(
    const std::function<void(const std::string&)>& on_text) {
  return std::make_unique<AnthropicStream>(on_text);
}

std::string AnthropicMessagesUrl(const std::string& base_url) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) return base + "/messages";
  return base + "/v1/messages";
}

Result<std::unique_ptr<LlmClient>> MakeAnthropicClient(const std::string& model,
                                                       const LlmOptions& options) {
  if (Status s = HttpAvailable(); !s.ok()) return s;
  const std::string& base_env = HostValue(HostVar::kAnthropicBaseUrl);
  std::string base = !base_env.empty() ? base_env : kDefaultBaseUrl;
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) {
    return InvalidArgument("$ANTHROPIC_BASE_URL must start with http:// or https://, got '" + base +
                           "'");
  }
  const std::string& key = HostValue(HostVar::kAnthropicApiKey);
  if (key.empty() && !IsLoopbackUrl(base)) {
    return FailedPrecondition("anthropic:" + model +
                              " needs $ANTHROPIC_API_KEY (unset); only a loopback "
                              "$ANTHROPIC_BASE_URL may go without a key");
  }
  auto protocol = std::make_unique<AnthropicProtocol>(base, model, key);
  return MakeHttpChatClient(std::move(protocol), options);
}

}  // namespace cuda_agent
