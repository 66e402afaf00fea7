// rft.h — rejection fine-tuning data: trajectories in, filters applied, SFT rows out with a report
// of what each filter removed and why (docs/rft.md).
//
//   RftOptions options;
//   options.inputs = {"runs/"};
//   Result<RftReport> report = RunRft(options, "out/");  // out/sft.jsonl, out/report.json
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "rft/filters.h"
#include "rft/trajectory.h"

namespace cuda_agent {

inline constexpr int kSftRowVersion = 1;

struct RftOptions {
  std::vector<fs::path> inputs;
  FilterOptions filters;
  bool strict = false;  // bad input fails the run instead of skipping its trajectory
};

// RftRemoval names one removed trajectory: where it came from, which filter, why.
struct RftRemoval {
  std::string source;
  std::string task;
  std::string filter;
  std::string reason;
};

struct RftReport {
  int trajectories = 0;  // read, bad ones included
  int kept = 0;
  std::map<std::string, int> removed;  // filter name (and "bad_input") → count
  std::vector<RftRemoval> removals;
  std::vector<std::string> problems;  // every bad-input problem, FILE:LINE first
  Json ToJson() const;
};

// SftRow renders a trajectory as one chat-messages row in OpenAI form: system, user (the task
// message), assistant turns with `tool_calls` [{id, type: "function", function: {name,
// arguments}}] (arguments as the JSON text the model sent), `tool` messages with their
// `tool_call_id`; `tools` as OpenAI function specs; `meta` (task, task_id, reward, source, turns).
Json SftRow(const Trajectory& t);

// FilterTrajectories applies the filters; the kept trajectories' rows go to `rows`.
RftReport FilterTrajectories(const TrajectoryCorpus& corpus, const RftOptions& options,
                             std::vector<Json>* rows);

// RunRft reads, filters and writes OUT/sft.jsonl and OUT/report.json. With `strict`, any bad
// input is an InvalidArgument naming the first problem (nothing is written).
Result<RftReport> RunRft(const RftOptions& options, const fs::path& out_dir);

}  // namespace cuda_agent
