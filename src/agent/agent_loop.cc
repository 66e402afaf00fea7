// agent_loop.cc — the ReAct loop and the trajectory writer (agent_loop.h).
#include "agent/agent_loop.h"

#include <chrono>
#include <cmath>
#include <cstring>

namespace cuda_agent {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Json UsageJson(const TokenUsage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"cached_prompt_tokens", usage.cached_prompt_tokens}};
}

}  // namespace

TrajectoryWriter::~TrajectoryWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status TrajectoryWriter::Open(const fs::path& path) {
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr)
    return Internal("cannot open " + path.string() + ": " + std::strerror(errno));
  started_ = Now();
  return OkStatus();
}

void TrajectoryWriter::Write(const std::string& type, Json record) {
  if (file_ == nullptr) return;
  Json line = {{"version", kTrajectoryVersion},
               {"type", type},
               {"time", std::round((Now() - started_) * 1000) / 1000}};
  for (auto& [key, value] : record.items()) line[key] = value;
  std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

std::string SummariseCall(const ToolCall& call, size_t max_chars) {
  std::string detail;
  Result<Json> args = ParseJson(call.arguments_text, "arguments");
  if (!args.ok() || !args->is_object()) {
    detail = "(invalid arguments)";
  } else {
    for (const char* key : {"command", "file_path", "pattern", "id"}) {
      if (args->contains(key) && args.value()[key].is_string()) {
        detail = args.value()[key].get<std::string>();
        break;
      }
    }
    if (call.name == "TodoWrite" && args->contains("todos") && args.value()["todos"].is_array()) {
      detail = std::to_string(args.value()["todos"].size()) + " items";
    }
  }
  for (char& c : detail) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  std::string text = call.name + (detail.empty() ? "" : ": " + detail);
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  return text;
}

std::string TaskMessage(const std::string& model_py, const std::string& device,
                        const std::string& workspace) {
  return "Your task: make the PyTorch program in model.py faster with your own " +
         std::string(device == "cpu" ? "C++ kernels (CPU mode)" : "CUDA kernels") +
         ", following SKILL.md (the system prompt). The workspace is " + workspace +
         " (the current directory of your commands). Write kernels/ and model_new.py, then use "
         "`bash utils/compile.sh`, `python3 -m utils.verification` and `python3 -m "
         "utils.profiling` "
         "until the extension is correct and as fast as you can make it. Your final workspace is "
         "judged. When you are done, answer without calling a tool.\n\nmodel.py:\n```python\n" +
         model_py + (model_py.empty() || model_py.back() == '\n' ? "" : "\n") + "```\n";
}

LoopSummary RunReactLoop(LlmClient& client, const std::vector<ToolSpec>& specs,
                         const ToolCaller& call_tool, const LoopConfig& config,
                         TrajectoryWriter& trajectory,
                         const std::function<void(const TurnProgress&)>& on_turn) {
  LoopSummary summary;
  const double started = Now();
  ContextBudget budget(config.budget);
  std::vector<ChatMessage> messages(1);
  messages[0].role = "user";
  messages[0].content = config.task_message;
  for (int turn = 1; summary.stop_reason.empty(); ++turn) {
    if (turn > config.max_turns) {
      summary.stop_reason = "max_turns";
      break;
    }
    if (config.interrupted != nullptr && config.interrupted->load()) {
      summary.stop_reason = "interrupted";
      break;
    }
    if (config.time_limit_s > 0 && Now() - started >= config.time_limit_s) {
      summary.stop_reason = "time_limit";
      break;
    }
    const double turn_started = Now();
    ShrinkReport fit = budget.Fit(config.system_prompt, specs, &messages);
    if (!fit.elided.empty()) {
      summary.elided_observations += static_cast<int>(fit.elided.size());
      trajectory.Write("context_elided", {{"turn", turn},
                                          {"messages", fit.elided},
                                          {"estimated_tokens", fit.estimated_tokens},
                                          {"limit", budget.Limit()}});
    }
    if (!fit.fits) {
      summary.stop_reason = "context_budget";
      trajectory.Write(
          "context_exhausted",
          {{"turn", turn}, {"estimated_tokens", fit.estimated_tokens}, {"limit", budget.Limit()}});
      break;
    }
    ChatRequest request{.system = config.system_prompt,
                        .messages = messages,
                        .tools = specs,
                        .max_output_tokens = static_cast<int>(config.budget.max_output_tokens),
                        .temperature = config.temperature};
    Result<ChatResponse> reply = client.Chat(request);
    if (!reply.ok()) {
      summary.stop_reason = "llm_error: " + reply.status().message();
      trajectory.Write("llm_error", {{"turn", turn},
                                     {"code", StatusCodeName(reply.status().code())},
                                     {"message", reply.status().message()}});
      break;
    }
    ChatResponse& answer = reply.value();
    answer.message.role = "assistant";
    for (size_t k = 0; k < answer.message.tool_calls.size(); ++k) {
      ToolCall& call = answer.message.tool_calls[k];
      if (call.id.empty()) call.id = "call_" + std::to_string(turn) + "_" + std::to_string(k + 1);
    }
    budget.Observe(config.system_prompt, specs, messages, answer.usage);
    summary.turns = turn;
    summary.llm_s += answer.seconds;
    summary.llm_attempts += answer.attempts;
    if (answer.usage.prompt_tokens > 0) {
      summary.tokens_in += answer.usage.prompt_tokens;
    } else {
      summary.tokens_in += budget.Estimate(config.system_prompt, specs, messages);
      summary.tokens_estimated = true;
    }
    if (answer.usage.completion_tokens > 0) {
      summary.tokens_out += answer.usage.completion_tokens;
    } else {
      summary.tokens_out += static_cast<long>(RequestChars("", {}, {answer.message}) / 4);
      summary.tokens_estimated = true;
    }
    Json calls = Json::array();
    for (const ToolCall& call : answer.message.tool_calls) {
      calls.push_back({{"id", call.id}, {"name", call.name}, {"arguments", call.arguments_text}});
    }
    trajectory.Write("assistant", {{"turn", turn},
                                   {"content", answer.message.content},
                                   {"tool_calls", calls},
                                   {"stop_reason", answer.stop_reason},
                                   {"usage", UsageJson(answer.usage)},
                                   {"llm_seconds", answer.seconds},
                                   {"attempts", answer.attempts}});
    messages.push_back(answer.message);
    TurnProgress progress;
    progress.turn = turn;
    progress.max_turns = config.max_turns;
    for (const ToolCall& call : answer.message.tool_calls) {
      const double call_started = Now();
      Observation observation = call_tool(call.name, call.arguments_text);
      ++summary.tool_calls;
      ++progress.tool_calls;
      if (observation.is_error) {
        ++summary.tool_errors;
        ++progress.tool_errors;
      }
      progress.last_tool = SummariseCall(call);
      trajectory.Write("observation", {{"turn", turn},
                                       {"tool_call_id", call.id},
                                       {"tool", call.name},
                                       {"text", observation.text},
                                       {"is_error", observation.is_error},
                                       {"seconds", Now() - call_started}});
      ChatMessage tool_message;
      tool_message.role = "tool";
      tool_message.content = observation.text;
      tool_message.tool_call_id = call.id;
      tool_message.is_error = observation.is_error;
      messages.push_back(std::move(tool_message));
    }
    progress.turn_s = Now() - turn_started;
    trajectory.Write("turn", {{"turn", turn},
                              {"wall_s", progress.turn_s},
                              {"llm_seconds", answer.seconds},
                              {"tool_calls", progress.tool_calls}});
    if (on_turn) on_turn(progress);
    if (answer.message.tool_calls.empty()) summary.stop_reason = "model_finished";
  }
  summary.wall_s = Now() - started;
  trajectory.Write("stop", {{"reason", summary.stop_reason}, {"turns", summary.turns}});
  return summary;
}

}  // namespace cuda_agent
