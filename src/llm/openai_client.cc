// openai_client.cc — the OpenAI-compatible chat completions protocol.
#include "llm/openai_client.h"

#include <cstdlib>
#include <map>

#include "common/host_environment.h"
#include "llm/http_client.h"

namespace cuda_agent {
namespace {

std::string StringOr(const Json& object, const char* key, const std::string& fallback = "") {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return fallback;
  return object[key].get<std::string>();
}

long LongOr(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return 0;
  return object[key].get<long>();
}

// ArgumentsText keeps a string as sent; a server that sends an object gets it serialised.
std::string ArgumentsText(const Json& arguments) {
  if (arguments.is_string()) return arguments.get<std::string>();
  if (arguments.is_null()) return "";
  return arguments.dump();
}

TokenUsage ParseUsage(const Json& usage) {
  TokenUsage out;
  out.prompt_tokens = LongOr(usage, "prompt_tokens");
  out.completion_tokens = LongOr(usage, "completion_tokens");
  if (usage.is_object() && usage.contains("prompt_tokens_details")) {
    out.cached_prompt_tokens = LongOr(usage["prompt_tokens_details"], "cached_tokens");
  }
  return out;
}

Json ToolCallsJson(const std::vector<ToolCall>& calls) {
  Json out = Json::array();
  for (const ToolCall& call : calls) {
    out.push_back({{"id", call.id},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", call.arguments_text}}}});
  }
  return out;
}

class OpenAiStream : public StreamAssembler {
 public:
  explicit OpenAiStream(std::function<void(const std::string&)> on_text)
      : on_text_(std::move(on_text)) {
    response_.message.role = "assistant";
  }

  Status OnEvent(const SseEvent& event) override {
    if (event.data == "[DONE]") {
      finished_ = true;
      return OkStatus();
    }
    if (event.data.empty()) return OkStatus();
    Json chunk = Json::parse(event.data, nullptr, /*allow_exceptions=*/false);
    if (chunk.is_discarded() || !chunk.is_object()) {
      return InvalidArgument("event data is not a JSON object: " + event.data.substr(0, 200));
    }
    if (chunk.contains("error")) {
      return Internal("the server sent an error mid-stream: " + ErrorMessageFromBody(event.data));
    }
    if (chunk.contains("usage") && chunk["usage"].is_object())
      response_.usage = ParseUsage(chunk["usage"]);
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) return OkStatus();
    for (const Json& choice : chunk["choices"]) {
      if (!choice.is_object() || choice.value("index", 0) != 0) continue;
      std::string finish = StringOr(choice, "finish_reason");
      if (!finish.empty()) response_.stop_reason = OpenAiStopReason(finish);
      if (!choice.contains("delta") || !choice["delta"].is_object()) continue;
      const Json& delta = choice["delta"];
      std::string text = StringOr(delta, "content");
      if (!text.empty()) {
        response_.message.content += text;
        if (on_text_) on_text_(text);
      }
      if (!delta.contains("tool_calls") || !delta["tool_calls"].is_array()) continue;
      int position = 0;
      for (const Json& piece : delta["tool_calls"]) {
        if (!piece.is_object()) continue;
        int index = piece.contains("index") && piece["index"].is_number_integer()
                        ? piece["index"].get<int>()
                        : position;
        ++position;
        ToolCall& call = calls_[index];
        if (call.id.empty()) call.id = StringOr(piece, "id");
        if (piece.contains("function") && piece["function"].is_object()) {
          const Json& function = piece["function"];
          if (call.name.empty()) call.name = StringOr(function, "name");
          if (function.contains("arguments"))
            call.arguments_text += ArgumentsText(function["arguments"]);
        }
      }
    }
    return OkStatus();
  }

  bool Finished() const override { return finished_; }

  ChatResponse Take() override {
    for (auto& [index, call] : calls_) {
      if (call.id.empty()) call.id = GeneratedToolCallId(index);
      response_.message.tool_calls.push_back(call);
    }
    calls_.clear();
    return std::move(response_);
  }

 private:
  std::function<void(const std::string&)> on_text_;
  ChatResponse response_;
  std::map<int, ToolCall> calls_;  // by the stream's index, in order
  bool finished_ = false;
};

class OpenAiProtocol : public ChatProtocol {
 public:
  OpenAiProtocol(std::string base_url, std::string model, std::string key)
      : base_url_(std::move(base_url)), model_(std::move(model)), key_(std::move(key)) {
    while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  }

  std::string Describe() const override { return "openai:" + model_ + " at " + base_url_; }
  std::string Url() const override { return base_url_ + "/chat/completions"; }

  std::vector<std::string> Headers() const override {
    std::vector<std::string> headers = {"Content-Type: application/json",
                                        "Accept: application/json, text/event-stream"};
    if (!key_.empty()) headers.push_back("Authorization: Bearer " + key_);
    return headers;
  }

  Json RequestBody(const ChatRequest& request, bool stream) const override {
    bool official = base_url_.find("://api.openai.com") != std::string::npos;
    return OpenAiRequestBody(request, model_, stream, official);
  }

  Result<ChatResponse> ParseResponse(const std::string& body) const override {
    return ParseOpenAiResponse(body);
  }

  std::unique_ptr<StreamAssembler> NewStream(
      const std::function<void(const std::string&)>& on_text) const override {
    return NewOpenAiStream(on_text);
  }

 private:
  std::string base_url_;
  std::string model_;
  std::string key_;
};

}  // namespace

std::string OpenAiStopReason(const std::string& finish_reason) {
  if (finish_reason == "tool_calls" || finish_reason == "function_call") return "tool_use";
  if (finish_reason == "stop") return "end_turn";
  if (finish_reason == "length") return "max_tokens";
  return finish_reason;
}

Json OpenAiRequestBody(const ChatRequest& request, const std::string& model, bool stream,
                       bool max_completion_tokens) {
  Json messages = Json::array();
  if (!request.system.empty())
    messages.push_back({{"role", "system"}, {"content", request.system}});
  for (const ChatMessage& m : request.messages) {
    if (m.role == "tool") {
      messages.push_back(
          {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.content}});
    } else if (m.role == "assistant") {
      Json message = {{"role", "assistant"}};
      if (m.tool_calls.empty()) {
        message["content"] = m.content;
      } else {
        message["content"] = m.content.empty() ? Json(nullptr) : Json(m.content);
        message["tool_calls"] = ToolCallsJson(m.tool_calls);
      }
      messages.push_back(message);
    } else {
      messages.push_back({{"role", m.role}, {"content", m.content}});
    }
  }
  Json body = {{"model", model}, {"messages", messages}};
  body[max_completion_tokens ? "max_completion_tokens" : "max_tokens"] = request.max_output_tokens;
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const ToolSpec& tool : request.tools) {
      Json parameters = tool.parameters.is_null()
                            ? Json{{"type", "object"}, {"properties", Json::object()}}
                            : tool.parameters;
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", tool.name}, {"description", tool.description}, {"parameters", parameters}}}});
    }
    body["tools"] = tools;
  }
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

Result<ChatResponse> ParseOpenAiResponse(const std::string& body) {
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object())
    return InvalidArgument("the answer is not a JSON object");
  if (parsed.contains("error"))
    return Internal("the server answered an error: " + ErrorMessageFromBody(body));
  if (!parsed.contains("choices") || !parsed["choices"].is_array() || parsed["choices"].empty() ||
      !parsed["choices"][0].is_object()) {
    return InvalidArgument("the answer has no choices[0]");
  }
  const Json& choice = parsed["choices"][0];
  if (!choice.contains("message") || !choice["message"].is_object()) {
    return InvalidArgument("the answer has no choices[0].message");
  }
  const Json& message = choice["message"];
  ChatResponse response;
  response.message.role = "assistant";
  response.message.content = StringOr(message, "content");
  if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
    size_t index = 0;
    for (const Json& call : message["tool_calls"]) {
      if (!call.is_object()) continue;
      ToolCall out;
      out.id = StringOr(call, "id", GeneratedToolCallId(index));
      if (call.contains("function") && call["function"].is_object()) {
        out.name = StringOr(call["function"], "name");
        if (call["function"].contains("arguments"))
          out.arguments_text = ArgumentsText(call["function"]["arguments"]);
      }
      response.message.tool_calls.push_back(out);
      ++index;
    }
  }
  response.stop_reason = OpenAiStopReason(StringOr(choice, "finish_reason"));
  if (parsed.contains("usage")) response.usage = ParseUsage(parsed["usage"]);
  return response;
}

std::unique_ptr<StreamAssembler> NewOpenAiStream(
    const std::function<void(const std::string&)>& on_text) {
  return std::make_unique<OpenAiStream>(on_text);
}

Result<std::unique_ptr<LlmClient>> MakeOpenAiClient(const std::string& base_url,
                                                    const std::string& model,
                                                    const LlmOptions& options) {
  if (Status s = HttpAvailable(); !s.ok()) return s;
  auto protocol =
      std::make_unique<OpenAiProtocol>(base_url, model, HostValue(HostVar::kOpenAiApiKey));
  return MakeHttpChatClient(std::move(protocol), options);
}

}  // namespace cuda_agent
