// trajectory.h — agent episodes read back from their JSONL records (docs/agent.md, "Trajectory"),
// the input of `cuda-agent rft` (docs/rft.md).
//
// Accepted inputs: a folder (searched recursively for `trajectory.jsonl`, each with the
// `result.json` of its episode folder when present: `solve --out`, `bench`'s
// `<out>/workspaces/<task>/`), or a `.jsonl` file holding the records of one or more episodes
// back to back (each `episode` record starts a new one: `cat */trajectory.jsonl > all.jsonl`).
// A line that is not JSON, a `version` other than 1, an unknown record type, a record before any
// `episode` record: the problem is reported as FILE:LINE and the trajectory it belongs to is
// marked bad (rft skips it and counts it; `--strict` fails instead).
//
//   TrajectoryCorpus corpus = ReadTrajectories({"runs/"});
//   for (const Trajectory& t : corpus.trajectories) if (t.problems.empty()) Use(t);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"

namespace cuda_agent {

inline constexpr int kTrajectoryVersion = 1;

// TrajectoryToolCall is one call of an assistant turn, `arguments` exactly as the model sent them.
struct TrajectoryToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// TrajectoryStep is one message after the task message: an assistant turn or a tool observation.
struct TrajectoryStep {
  std::string role;  // "assistant" or "tool"
  int turn = 0;
  std::string content;                         // assistant text, or the observation text
  std::vector<TrajectoryToolCall> tool_calls;  // assistant only
  std::string tool_call_id;                    // tool only
  std::string tool;                            // tool only: the tool's name
  bool is_error = false;                       // tool only
  long prompt_tokens = 0;                      // assistant only: as the provider reported (0: none)
  long completion_tokens = 0;
};

// Trajectory is one episode: its setting, its messages and its outcome.
struct Trajectory {
  std::string source;    // "FILE:LINE" of its `episode` record
  fs::path episode_dir;  // the folder of trajectory.jsonl (empty for a concatenated JSONL)
  std::string task;
  std::string task_id;
  std::string system;
  std::string task_message;
  Json tools = Json::array();  // [{name, description, parameters}] as the episode offered them
  std::vector<TrajectoryStep> steps;
  std::string stop_reason;  // "" when no `stop` record was written
  int turns = 0;
  std::optional<double> reward;       // nullopt: no verdict (no judgement, or reward null)
  std::string reward_source;          // "result.json", "final_judgement" or ""
  std::vector<std::string> problems;  // "FILE:LINE: what" — a bad trajectory has at least one
};

// TrajectoryCorpus is what the inputs held; `problems` are those that belong to no trajectory
// (a record before any `episode` record, an unreadable file).
struct TrajectoryCorpus {
  std::vector<Trajectory> trajectories;
  std::vector<std::string> problems;
};

// ParseTrajectoryRecords reads the records of `text` (JSONL), named `file` in problems; `dir` is
// the episode folder whose result.json may hold the reward (empty: none).
TrajectoryCorpus ParseTrajectoryRecords(const std::string& text, const std::string& file,
                                        const fs::path& dir);

// ReadTrajectories reads every input (folders and .jsonl files), in the given order and, within a
// folder, in path order. A path that does not exist is an error (nothing is read).
Result<TrajectoryCorpus> ReadTrajectories(const std::vector<fs::path>& inputs);

}  // namespace cuda_agent
