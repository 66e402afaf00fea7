// filters.h — the named filters of rejection fine-tuning (PAPER.md §4: keep reward > 0; drop
// looping or redundant behaviour and invalid tool calls), each a small rule with its reason.
//
//   std::vector<std::unique_ptr<TrajectoryFilter>> filters = DefaultFilters(options);
//   for (auto& f : filters) if (auto why = f->Reject(t)) { Count(f->Name(), *why); break; }
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rft/trajectory.h"

namespace cuda_agent {

// FilterOptions are the thresholds of the filters (docs/rft.md has the defaults and why).
struct FilterOptions {
  std::optional<double> min_reward;  // keep reward >= this; nullopt: keep reward > 0
  bool keep_unfinished = false;      // keep episodes that did not end with an answer
  int max_identical_calls = 3;       // >= this many identical consecutive calls: removed
  int loop_repeats = 3;              // a block of 2..kMaxLoopPeriod calls repeated this often
  int max_turns = 150;               // assistant turns (0: no limit)
  long max_tokens = 131072;          // the largest context of the episode (0: no limit)
};

inline constexpr int kMaxLoopPeriod = 4;

// TrajectoryFilter is one rule: Reject says why a trajectory is removed, or nothing.
class TrajectoryFilter {
 public:
  virtual ~TrajectoryFilter() = default;
  virtual const char* Name() const = 0;
  virtual std::optional<std::string> Reject(const Trajectory& t) const = 0;
};

// DefaultFilters lists the filters in the order they are applied: no_reward, outcome,
// unfinished, invalid_tool_call, repeated_calls, loop, over_long. A trajectory is counted under
// the first filter that removes it.
std::vector<std::unique_ptr<TrajectoryFilter>> DefaultFilters(const FilterOptions& options);

// CallKey is a call's identity for the repetition filters: its name and its arguments in
// canonical JSON (key order and spacing do not matter), or the raw text when not JSON.
std::string CallKey(const TrajectoryToolCall& call);

// EstimatedTokens is the largest context of the episode: the provider's prompt + completion
// tokens of its largest request, or characters / 4 of the whole conversation when none reported.
long EstimatedTokens(const Trajectory& t);

}  // namespace cuda_agent
