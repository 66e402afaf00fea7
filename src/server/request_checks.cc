// request_checks.cc — tasks, devices, policies, files, limits and ids, checked once.
#include "server/request_checks.h"

#include <cctype>
#include <cmath>

#include "common/device.h"
#include "judge/precision.h"

namespace cuda_agent {
namespace {

bool PrintableId(const std::string& id) {
  for (char c : id) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

ApiResult<TaskInput> ParseTaskInput(const Json& task) {
  TaskInput input;
  if (task.is_string()) {
    input.reference = task.get<std::string>();
    if (input.reference.empty()) return InvalidRequest("task must not be empty");
    return input;
  }
  if (!task.is_object()) {
    return InvalidRequest(
        "task must be a reference string or {\"source\": \"...\", \"name\"?: \"...\"}");
  }
  for (const auto& [key, value] : task.items()) {
    if (key != "source" && key != "name") {
      return InvalidRequest("task: unknown field '" + key +
                            "' (an inline task has source and name)");
    }
  }
  if (!task.contains("source") || !task["source"].is_string()) {
    return InvalidRequest("task.source must be the text of a model.py");
  }
  if (task.contains("name") && !task["name"].is_string()) {
    return InvalidRequest("task.name must be a string");
  }
  input.source = task["source"].get<std::string>();
  input.name = task.value("name", std::string());
  return input;
}

std::string InlineTaskFileName(const std::string& name) {
  std::string out;
  for (char c : name.empty() ? std::string("task") : name) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    out += keep ? c : '_';
  }
  while (!out.empty() && out.front() == '.') out.erase(out.begin());
  if (out.empty()) out = "task";
  out = out.substr(0, 64);
  if (out.size() < 3 || out.substr(out.size() - 3) != ".py") out += ".py";
  return out;
}

ApiResult<Task> LoadTaskInput(const TaskInput& input) {
  if (!input.source) {
    Result<Task> loaded = LoadTask(input.reference);
    if (!loaded.ok()) return InvalidRequest("task: " + loaded.status().message());
    return std::move(loaded).value();
  }
  Task task;
  task.code = *input.source;
  task.name = input.name.empty() ? "inline" : input.name;
  task.id = TaskIdForCode(task.code);
  if (Status s = CheckTaskShape(task); !s.ok()) return InvalidRequest("task: " + s.message());
  return task;
}

ApiResult<JudgeTarget> ResolveJudgeTarget(const std::string& device, const std::string& policy,
                                          const JudgeOptions& defaults) {
  const std::string device_text = device.empty() ? DeviceName(defaults.device) : device;
  Result<Device> parsed = ParseDevice(device_text);
  if (!parsed.ok()) return InvalidRequest("device '" + device_text + "' is not one of cuda, cpu");
  Result<PrecisionPolicy> precision =
      MakePrecisionPolicy(policy.empty() ? defaults.policy.name : policy);
  if (!precision.ok()) return InvalidRequest("policy: " + precision.status().message());
  return JudgeTarget{parsed.value(), precision.value()};
}

ApiResult<Candidate> CandidateFromFiles(const Json& files) {
  if (!files.is_object()) return InvalidRequest("files must be an object of file name to content");
  Result<Candidate> candidate = Candidate::FromJson(files);
  if (!candidate.ok()) return InvalidRequest("files: " + candidate.status().message());
  if (candidate->empty()) {
    return InvalidRequest("files: no candidate files (kernels/*, model_new.py)");
  }
  return std::move(candidate).value();
}

std::optional<ApiError> CheckSessionLimits(int turn_limit, double ttl_s) {
  if (turn_limit < 0 || turn_limit > kMaxTurnLimit) {
    return InvalidRequest("turn_limit must be between 1 and " + std::to_string(kMaxTurnLimit));
  }
  if (ttl_s < 0 || ttl_s > kMaxTtlS || std::isnan(ttl_s)) {
    return InvalidRequest("ttl_s must be a positive number of seconds, at most " +
                          std::to_string(static_cast<int>(kMaxTtlS)));
  }
  return std::nullopt;
}

std::optional<ApiError> CheckCallNames(const std::string& call_id, const std::string& tool) {
  if (call_id.empty() || call_id.size() > kMaxCallIdChars || !PrintableId(call_id)) {
    return InvalidRequest("call_id must be 1 to " + std::to_string(kMaxCallIdChars) +
                          " printable characters without spaces");
  }
  if (tool.empty() || tool.size() > kMaxToolNameChars) {
    return InvalidRequest("tool must name one of the session's tools (GET /v1/tools)");
  }
  return std::nullopt;
}

}  // namespace cuda_agent
