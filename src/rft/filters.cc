// filters.cc — the rejection fine-tuning filters (filters.h), one class per rule.
#include "rft/filters.h"

#include <set>
#include <sstream>

namespace cuda_agent {
namespace {

std::string FormatReward(double reward) {
  std::ostringstream out;
  out << reward;
  return out.str();
}

// All calls of a trajectory in order, with the turn each was made in.
std::vector<std::pair<int, const TrajectoryToolCall*>> Calls(const Trajectory& t) {
  std::vector<std::pair<int, const TrajectoryToolCall*>> calls;
  for (const TrajectoryStep& step : t.steps) {
    for (const TrajectoryToolCall& call : step.tool_calls) calls.push_back({step.turn, &call});
  }
  return calls;
}

class NoRewardFilter : public TrajectoryFilter {
 public:
  const char* Name() const override { return "no_reward"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    if (t.reward) return std::nullopt;
    return t.reward_source.empty() ? "no final judgement"
                                   : "reward null in " + t.reward_source + " (not a verdict)";
  }
};

class OutcomeFilter : public TrajectoryFilter {
 public:
  explicit OutcomeFilter(std::optional<double> min_reward) : min_reward_(min_reward) {}
  const char* Name() const override { return "outcome"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    if (!t.reward) return std::nullopt;
    double r = *t.reward;
    if (min_reward_ ? r >= *min_reward_ : r > 0) return std::nullopt;
    return "reward " + FormatReward(r) +
           (min_reward_ ? " < " + FormatReward(*min_reward_) : std::string(" <= 0"));
  }

 private:
  std::optional<double> min_reward_;
};

class UnfinishedFilter : public TrajectoryFilter {
 public:
  const char* Name() const override { return "unfinished"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    if (t.stop_reason == "model_finished") return std::nullopt;
    return "stopped by " +
           (t.stop_reason.empty() ? std::string("(no stop record)") : t.stop_reason) +
           ", not by the model's answer";
  }
};

// InvalidToolCallFilter: a call of a tool the episode did not offer, arguments that are not a JSON
// object, a required argument missing or an argument the tool's schema does not name.
class InvalidToolCallFilter : public TrajectoryFilter {
 public:
  const char* Name() const override { return "invalid_tool_call"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    for (const auto& [turn, call] : Calls(t)) {
      std::string where = "turn " + std::to_string(turn) + ": ";
      const Json* spec = nullptr;
      for (const Json& tool : t.tools) {
        if (tool.is_object() && tool.value("name", "") == call->name) spec = &tool;
      }
      if (spec == nullptr) return where + "unknown tool '" + call->name + "'";
      Json arguments = Json::parse(call->arguments.empty() ? "{}" : call->arguments, nullptr,
                                   /*allow_exceptions=*/false);
      if (arguments.is_discarded() || !arguments.is_object()) {
        return where + call->name + " arguments are not a JSON object";
      }
      const Json parameters = spec->value("parameters", Json::object());
      const Json properties = parameters.value("properties", Json::object());
      for (const Json& required : parameters.value("required", Json::array())) {
        if (required.is_string() && !arguments.contains(required.get<std::string>())) {
          return where + call->name + " without its required argument '" +
                 required.get<std::string>() + "'";
        }
      }
      if (properties.is_object()) {
        for (const auto& [key, value] : arguments.items()) {
          if (!properties.contains(key)) {
            return where + call->name + " with an argument its schema does not have: '" + key + "'";
          }
        }
      }
    }
    return std::nullopt;
  }
};

class RepeatedCallsFilter : public TrajectoryFilter {
 public:
  explicit RepeatedCallsFilter(int limit) : limit_(limit) {}
  const char* Name() const override { return "repeated_calls"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    auto calls = Calls(t);
    int run = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      run = i > 0 && CallKey(*calls[i].second) == CallKey(*calls[i - 1].second) ? run + 1 : 1;
      if (run >= limit_) {
        return std::to_string(run) + " identical consecutive " + calls[i].second->name +
               " calls ending at turn " + std::to_string(calls[i].first);
      }
    }
    return std::nullopt;
  }

 private:
  int limit_;
};

// LoopFilter: the same block of 2..kMaxLoopPeriod calls (not all the same call: that is
// repeated_calls) made `repeats` times in a row.
class LoopFilter : public TrajectoryFilter {
 public:
  explicit LoopFilter(int repeats) : repeats_(repeats) {}
  const char* Name() const override { return "loop"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    auto calls = Calls(t);
    std::vector<std::string> keys;
    for (const auto& call : calls) keys.push_back(CallKey(*call.second));
    for (size_t period = 2; period <= kMaxLoopPeriod; ++period) {
      const size_t span = period * static_cast<size_t>(repeats_);
      for (size_t start = 0; start + span <= keys.size(); ++start) {
        std::set<std::string> distinct(keys.begin() + start, keys.begin() + start + period);
        if (distinct.size() < 2) continue;
        bool repeats = true;
        for (size_t k = period; k < span && repeats; ++k) {
          repeats = keys[start + k] == keys[start + k % period];
        }
        if (repeats) {
          return "a block of " + std::to_string(period) + " calls repeated " +
                 std::to_string(repeats_) + " times from turn " +
                 std::to_string(calls[start].first);
        }
      }
    }
    return std::nullopt;
  }

 private:
  int repeats_;
};

class OverLongFilter : public TrajectoryFilter {
 public:
  OverLongFilter(int max_turns, long max_tokens) : max_turns_(max_turns), max_tokens_(max_tokens) {}
  const char* Name() const override { return "over_long"; }
  std::optional<std::string> Reject(const Trajectory& t) const override {
    int turns = 0;
    for (const TrajectoryStep& step : t.steps) turns += step.role == "assistant" ? 1 : 0;
    if (max_turns_ > 0 && turns > max_turns_) {
      return std::to_string(turns) + " turns > " + std::to_string(max_turns_);
    }
    long tokens = EstimatedTokens(t);
    if (max_tokens_ > 0 && tokens > max_tokens_) {
      return std::to_string(tokens) + " tokens > " + std::to_string(max_tokens_);
    }
    return std::nullopt;
  }

 private:
  int max_turns_;
  long max_tokens_;
};

}  // namespace

std::string CallKey(const TrajectoryToolCall& call) {
  Json arguments = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  // nlohmann's object keeps keys sorted, so dump() is canonical.
  return call.name + "\n" + (arguments.is_discarded() ? call.arguments : arguments.dump());
}

long EstimatedTokens(const Trajectory& t) {
  long reported = 0;
  size_t chars = t.system.size() + t.task_message.size() + t.tools.dump().size();
  for (const TrajectoryStep& step : t.steps) {
    reported = std::max(reported, step.prompt_tokens + step.completion_tokens);
    chars += step.content.size();
    for (const TrajectoryToolCall& call : step.tool_calls) {
      chars += call.name.size() + call.arguments.size();
    }
  }
  return reported > 0 ? reported : static_cast<long>(chars / 4);
}

std::vector<std::unique_ptr<TrajectoryFilter>> DefaultFilters(const FilterOptions& options) {
  std::vector<std::unique_ptr<TrajectoryFilter>> filters;
  filters.push_back(std::make_unique<NoRewardFilter>());
  filters.push_back(std::make_unique<OutcomeFilter>(options.min_reward));
  if (!options.keep_unfinished) filters.push_back(std::make_unique<UnfinishedFilter>());
  filters.push_back(std::make_unique<InvalidToolCallFilter>());
  filters.push_back(std::make_unique<RepeatedCallsFilter>(options.max_identical_calls));
  filters.push_back(std::make_unique<LoopFilter>(options.loop_repeats));
  filters.push_back(std::make_unique<OverLongFilter>(options.max_turns, options.max_tokens));
  return filters;
}

}  // namespace cuda_agent
