// llm_command.cc — `cuda-agent llm`: one request (or a few turns) to a model spec with one dummy
// tool, `echo`, to check a spec before a long `solve`; the tests drive the LLM clients through it
// (docs/llm.md).
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/options.h"
#include "judge/judge.h"
#include "llm/llm_client.h"

namespace cuda_agent {
namespace {

const std::vector<OptionSpec>& LlmSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"model", true, "model spec: openai:URL#MODEL, anthropic:MODEL or replay:FILE", ""},
      {"prompt", true, "the user message",
       "Call the echo tool once with the text \"ping\", then say in one short sentence that you "
       "did."},
      {"system", true, "system prompt", "You are a terse assistant that tests tool calling."},
      {"turns", true, "requests at most: echo calls are answered and the model asked again", "1"},
      {"max-tokens", true, "output token limit per request", "1024"},
      {"temperature", true, "sampling temperature (default: the provider's)", ""},
      {"no-stream", false, "ask for the whole answer at once instead of streaming (SSE)", ""},
      {"json", false, "print the result as JSON", ""},
      {"timeout", true, "seconds for one HTTP attempt, streaming included", "600"},
      {"connect-timeout", true, "seconds to connect", "20"},
      {"stall-timeout", true, "seconds without a byte before an attempt fails", "120"},
      {"max-attempts", true, "attempts per request (retries on 429, 5xx, timeouts, broken streams)",
       "6"},
      {"backoff", true, "first wait between attempts in seconds, doubled each retry", "1"},
      {"backoff-max", true, "longest wait between attempts in seconds (Retry-After included)",
       "60"},
  };
  return specs;
}

int LlmUsageError(const std::string& message) {
  std::cerr << "cuda-agent llm: " << message << "\n\noptions:\n" << FormatHelp(LlmSpecs());
  return kExitUsage;
}

ToolSpec EchoTool() {
  return {
      "echo", "Echo the given text back. Call it to show that tool calling works.",
      Json{{"type", "object"},
           {"properties", {{"text", {{"type", "string"}, {"description", "the text to echo"}}}}},
           {"required", {"text"}}}};
}

// RunEcho answers one call the way an agent would: the text back, or an error observation.
ChatMessage RunEcho(const ToolCall& call) {
  ChatMessage result;
  result.role = "tool";
  result.tool_call_id = call.id;
  if (call.name != "echo") {
    result.content = "error: unknown tool '" + call.name + "' (the only tool is echo)";
    result.is_error = true;
    return result;
  }
  Json arguments = Json::parse(call.arguments_text, nullptr, /*allow_exceptions=*/false);
  if (!arguments.is_object() || !arguments.contains("text") || !arguments["text"].is_string()) {
    result.content = "error: the arguments must be a JSON object with a string \"text\", got: " +
                     call.arguments_text;
    result.is_error = true;
    return result;
  }
  result.content = arguments["text"].get<std::string>();
  return result;
}

Json UsageJson(const TokenUsage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"cached_prompt_tokens", usage.cached_prompt_tokens}};
}

Json TurnJson(const ChatResponse& reply, int streamed_pieces) {
  Json calls = Json::array();
  for (const ToolCall& call : reply.message.tool_calls) {
    calls.push_back({{"id", call.id}, {"name", call.name}, {"arguments", call.arguments_text}});
  }
  return {{"content", reply.message.content},  {"tool_calls", calls},
          {"stop_reason", reply.stop_reason},  {"usage", UsageJson(reply.usage)},
          {"attempts", reply.attempts},        {"seconds", reply.seconds},
          {"streamed_pieces", streamed_pieces}};
}

void PrintTurn(int number, const Json& turn) {
  std::cout << "turn " << number << "\n";
  std::cout << "  answer:      " << turn["content"].get<std::string>() << "\n";
  for (const Json& call : turn["tool_calls"]) {
    std::cout << "  tool call:   " << call["name"].get<std::string>() << " "
              << call["arguments"].get<std::string>() << "  [id " << call["id"].get<std::string>()
              << "]\n";
  }
  std::cout << "  stop reason: " << turn["stop_reason"].get<std::string>() << "\n";
  const Json& usage = turn["usage"];
  std::cout << "  tokens:      prompt " << usage["prompt_tokens"] << ", completion "
            << usage["completion_tokens"] << ", cached " << usage["cached_prompt_tokens"] << "\n";
  std::cout << "  attempts:    " << turn["attempts"] << "\n";
  std::ostringstream seconds;
  seconds.precision(3);
  seconds << std::fixed << turn["seconds"].get<double>();
  std::cout << "  seconds:     " << seconds.str() << "\n";
  if (turn["streamed_pieces"].get<int>() > 0)
    std::cout << "  streamed:    " << turn["streamed_pieces"] << " text pieces\n";
}

}  // namespace

int LlmCommand(const Args& args) {
  const std::vector<OptionSpec>& specs = LlmSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return LlmUsageError(a.status().message());
  if (!a->positional().empty())
    return LlmUsageError("unexpected argument '" + a->positional()[0] + "'");
  std::string spec = a->Get("model");
  if (spec.empty())
    return LlmUsageError("--model is required (e.g. openai:http://127.0.0.1:8000/v1#MODEL)");

  LlmOptions options;
  Result<int> turns = ParseIntFlag(a.value(), "turns");
  Result<int> max_tokens = ParseIntFlag(a.value(), "max-tokens");
  Result<int> max_attempts = ParseIntFlag(a.value(), "max-attempts");
  Result<double> timeout = ParseDoubleFlag(a.value(), "timeout");
  Result<double> connect_timeout = ParseDoubleFlag(a.value(), "connect-timeout");
  Result<double> stall_timeout = ParseDoubleFlag(a.value(), "stall-timeout");
  Result<double> backoff = ParseDoubleFlag(a.value(), "backoff", /*allow_zero=*/true);
  Result<double> backoff_max = ParseDoubleFlag(a.value(), "backoff-max", /*allow_zero=*/true);
  for (const Status& s :
       {turns.status(), max_tokens.status(), max_attempts.status(), timeout.status(),
        connect_timeout.status(), stall_timeout.status(), backoff.status(), backoff_max.status()}) {
    if (!s.ok()) return LlmUsageError(s.message());
  }
  if (turns.value() < 1) return LlmUsageError("--turns must be at least 1");
  if (max_attempts.value() < 1) return LlmUsageError("--max-attempts must be at least 1");
  options.max_attempts = max_attempts.value();
  options.request_timeout_s = timeout.value();
  options.connect_timeout_s = connect_timeout.value();
  options.stall_timeout_s = stall_timeout.value();
  options.backoff_initial_s = backoff.value();
  options.backoff_max_s = backoff_max.value();
  options.stream = !a->Has("no-stream");
  int streamed_pieces = 0;
  options.on_text = [&](const std::string&) { ++streamed_pieces; };

  ChatRequest request;
  request.system = a->Get("system");
  ChatMessage prompt;
  prompt.role = "user";
  prompt.content = a->Get("prompt");
  request.messages.push_back(prompt);
  request.tools = {EchoTool()};
  request.max_output_tokens = max_tokens.value();
  if (!a->Get("temperature").empty()) {
    Result<double> temperature = ParseDoubleFlag(a.value(), "temperature", /*allow_zero=*/true);
    if (!temperature.ok()) return LlmUsageError(temperature.status().message());
    request.temperature = temperature.value();
  }

  bool as_json = a->Has("json");
  Json out = {{"model", spec}, {"turns", Json::array()}};
  auto fail = [&](const Status& status) {
    std::cerr << "cuda-agent llm: " << status.message() << "\n";
    if (as_json) {
      out["ok"] = false;
      out["error"] = status.message();
      out["code"] = StatusCodeName(status.code());
      std::cout << out.dump(1, ' ', false, Json::error_handler_t::replace) << "\n";
    }
    return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  };

  Result<std::unique_ptr<LlmClient>> client = MakeLlmClient(spec, options);
  if (!client.ok()) return fail(client.status());
  LlmClient& llm = *client.value();
  out["provider"] = llm.Describe();
  if (!as_json) std::cout << "provider:      " << llm.Describe() << "\n";

  int attempts = 0;
  double seconds = 0;
  TokenUsage total;
  for (int turn = 1; turn <= turns.value(); ++turn) {
    streamed_pieces = 0;
    Result<ChatResponse> reply = llm.Chat(request);
    if (!reply.ok()) return fail(reply.status());
    Json turn_json = TurnJson(reply.value(), streamed_pieces);
    out["turns"].push_back(turn_json);
    if (!as_json) PrintTurn(turn, turn_json);
    attempts += reply->attempts;
    seconds += reply->seconds;
    total.prompt_tokens += reply->usage.prompt_tokens;
    total.completion_tokens += reply->usage.completion_tokens;
    total.cached_prompt_tokens += reply->usage.cached_prompt_tokens;
    if (reply->message.tool_calls.empty()) break;
    request.messages.push_back(reply->message);
    for (const ToolCall& call : reply->message.tool_calls)
      request.messages.push_back(RunEcho(call));
  }
  if (as_json) {
    const Json& last = out["turns"].back();
    out["ok"] = true;
    out["content"] = last["content"];
    out["tool_calls"] = last["tool_calls"];
    out["stop_reason"] = last["stop_reason"];
    out["usage"] = UsageJson(total);
    out["attempts"] = attempts;
    out["seconds"] = seconds;
    std::cout << out.dump(1, ' ', false, Json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace cuda_agent
