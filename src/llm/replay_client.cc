// replay_client.cc — the `replay:<file>` LlmClient: plays a JSONL script of assistant turns.
#include "llm/replay_client.h"

#include <sstream>

#include "common/fs.h"

namespace cuda_agent {
namespace {

constexpr const char* kScriptedError = "error";

Result<ToolCall> ParseToolCall(const Json& entry, const std::string& where, size_t index) {
  if (!entry.is_object())
    return InvalidArgument(where + ": tool_calls[" + std::to_string(index) + "] is not an object");
  ToolCall call;
  call.name = entry.value("name", "");
  if (call.name.empty())
    return InvalidArgument(where + ": tool_calls[" + std::to_string(index) + "] has no name");
  if (entry.contains("id") && entry["id"].is_string()) call.id = entry["id"].get<std::string>();
  const Json args = entry.contains("arguments") ? entry["arguments"] : Json::object();
  // A string is sent as is (it may be malformed on purpose); anything else is serialised.
  call.arguments_text = args.is_string() ? args.get<std::string>() : args.dump();
  return call;
}

class ReplayClient : public LlmClient {
 public:
  ReplayClient(std::string path, std::vector<ChatResponse> replies)
      : path_(std::move(path)), replies_(std::move(replies)) {}

  Result<ChatResponse> Chat(const ChatRequest& request) override {
    (void)request;
    if (next_ >= replies_.size()) {
      return NotFound("replay script exhausted after " + std::to_string(replies_.size()) +
                      " turns");
    }
    ChatResponse reply = replies_[next_++];
    if (reply.stop_reason == kScriptedError) return Internal(reply.message.content);
    // Call ids as a provider would give them, unique within the episode.
    for (ToolCall& call : reply.message.tool_calls) {
      if (call.id.empty())
        call.id = "call_" + std::to_string(next_) + "_" + std::to_string(++calls_);
    }
    return reply;
  }

  std::string Describe() const override { return "replay:" + path_; }

 private:
  std::string path_;
  std::vector<ChatResponse> replies_;
  size_t next_ = 0;
  size_t calls_ = 0;
};

}  // namespace

Result<std::vector<ChatResponse>> ParseReplayScript(const std::string& text,
                                                    const std::string& what) {
  std::vector<ChatResponse> replies;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
    const std::string where = what + ":" + std::to_string(number);
    Result<Json> parsed = ParseJson(line, where);
    if (!parsed.ok()) return InvalidArgument(parsed.status().message());
    const Json& turn = parsed.value();
    if (!turn.is_object()) return InvalidArgument(where + ": a turn must be a JSON object");
    ChatResponse reply;
    reply.message.role = "assistant";
    if (turn.contains("error")) {
      reply.stop_reason = kScriptedError;
      reply.message.content =
          turn["error"].is_string() ? turn["error"].get<std::string>() : turn["error"].dump();
      replies.push_back(std::move(reply));
      continue;
    }
    if (turn.contains("content") && !turn["content"].is_string()) {
      return InvalidArgument(where + ": \"content\" must be a string");
    }
    reply.message.content = turn.value("content", "");
    if (turn.contains("tool_calls")) {
      if (!turn["tool_calls"].is_array())
        return InvalidArgument(where + ": \"tool_calls\" must be an array");
      for (size_t i = 0; i < turn["tool_calls"].size(); ++i) {
        Result<ToolCall> call = ParseToolCall(turn["tool_calls"][i], where, i);
        if (!call.ok()) return call.status();
        reply.message.tool_calls.push_back(std::move(call).value());
      }
    }
    reply.stop_reason = reply.message.tool_calls.empty() ? "end_turn" : "tool_use";
    if (turn.contains("usage") && turn["usage"].is_object()) {
      reply.usage.prompt_tokens = turn["usage"].value("prompt_tokens", 0L);
      reply.usage.completion_tokens = turn["usage"].value("completion_tokens", 0L);
    }
    replies.push_back(std::move(reply));
  }
  return replies;
}

Result<std::unique_ptr<LlmClient>> MakeReplayClient(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return InvalidArgument("replay script: " + text.status().message());
  Result<std::vector<ChatResponse>> replies = ParseReplayScript(text.value(), path);
  if (!replies.ok()) return replies.status();
  return std::unique_ptr<LlmClient>(
      std::make_unique<ReplayClient>(path, std::move(replies).value()));
}

}  // namespace cuda_agent
