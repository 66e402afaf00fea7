// request_checks.h — the one place the server validates what a request asks for: a task (a
// reference, or inline model.py source), a device and precision policy, candidate files, a
// session's limits, a call's ids. The faces (server/http_api, server/mcp) only check the wire's
// shape (JSON types, required fields) and translate; Environment runs these checks, once, for
// every face. Each check answers the value it checked or the 400 refusal that words the problem.
//
//   ApiResult<TaskInput> task = ParseTaskInput(body["task"]);
//   ApiResult<JudgeTarget> target = ResolveJudgeTarget("cpu", "", defaults);
//   if (!target.ok()) return *target.error;
#pragma once

#include <optional>
#include <string>

#include "common/json.h"
#include "judge/judge_options.h"
#include "server/api_result.h"
#include "task/task.h"
#include "workspace/candidate.h"

namespace cuda_agent {

// TaskInput is a request's task, checked: a reference as `judge --task` takes it, or the source of
// a model.py with an optional name ({"source": "...", "name"?: "..."}).
struct TaskInput {
  std::string reference;              // set for a reference
  std::optional<std::string> source;  // set for an inline task
  std::string name;                   // an inline task's name as given ("" when none)
};
ApiResult<TaskInput> ParseTaskInput(const Json& task);

// InlineTaskFileName: the file an inline task is written to: its name's letters, digits, '-', '_'
// and '.' (others become '_'; no leading dot; at most 64), "task" when none, ending in ".py".
std::string InlineTaskFileName(const std::string& name);

// LoadTaskInput: the Task a checked input names (a reference loaded, inline source shape-checked,
// named "inline" when it has no name).
ApiResult<Task> LoadTaskInput(const TaskInput& input);

// JudgeTarget: where and under which precision policy a judgement runs.
struct JudgeTarget {
  Device device = Device::kCpu;
  PrecisionPolicy policy;
};
// ResolveJudgeTarget checks a requested device and policy; empty ones take `defaults`'.
ApiResult<JudgeTarget> ResolveJudgeTarget(const std::string& device, const std::string& policy,
                                          const JudgeOptions& defaults);

// CandidateFromFiles: the candidate of {"kernels/a.cu": "...", "model_new.py": "..."}; refused when
// it is not such an object or holds no candidate file.
ApiResult<Candidate> CandidateFromFiles(const Json& files);

// CheckSessionLimits: a requested turn limit (0: the default; at most kMaxTurnLimit) and TTL (0:
// the default; at most kMaxTtlS).
inline constexpr int kMaxTurnLimit = 100000;
inline constexpr double kMaxTtlS = 7 * 24 * 3600.0;
std::optional<ApiError> CheckSessionLimits(int turn_limit, double ttl_s);

// CheckCallNames: a call's id (1 to kMaxCallIdChars printable characters, no spaces) and tool
// name (1 to kMaxToolNameChars).
inline constexpr size_t kMaxCallIdChars = 128;
inline constexpr size_t kMaxToolNameChars = 64;
std::optional<ApiError> CheckCallNames(const std::string& call_id, const std::string& tool);

}  // namespace cuda_agent
