// job.cc — the job's JSON form, its id, the queue's keys and JudgeResult read back from JSON.
#include "queue/job.h"

#include <chrono>

#include "common/hash.h"

namespace cuda_agent {
namespace {

constexpr const char* kPrefix = "cuda-agent:";

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Field readers that name the field and the expected type.
Status Expect(const Json& j, const char* key, Json::value_t type, const char* what) {
  if (!j.contains(key)) return InvalidArgument(std::string("missing field '") + key + "'");
  const Json& v = j[key];
  bool ok = v.type() == type || (type == Json::value_t::number_float && v.is_number()) ||
            (type == Json::value_t::number_integer && v.is_number_integer());
  if (!ok) return InvalidArgument(std::string("field '") + key + "' must be " + what);
  return OkStatus();
}

Result<std::string> GetString(const Json& j, const char* key) {
  if (Status s = Expect(j, key, Json::value_t::string, "a string"); !s.ok()) return s;
  return j[key].get<std::string>();
}

Result<double> GetNumber(const Json& j, const char* key) {
  if (Status s = Expect(j, key, Json::value_t::number_float, "a number"); !s.ok()) return s;
  return j[key].get<double>();
}

Result<int> GetInt(const Json& j, const char* key) {
  if (Status s = Expect(j, key, Json::value_t::number_integer, "an integer"); !s.ok()) return s;
  return j[key].get<int>();
}

Result<bool> GetBool(const Json& j, const char* key) {
  if (Status s = Expect(j, key, Json::value_t::boolean, "true or false"); !s.ok()) return s;
  return j[key].get<bool>();
}

Status Prefixed(const std::string& where, const Status& s) {
  return {s.code(), where + s.message()};
}

}  // namespace

std::string QueueKeys::Stream(Device device) {
  return std::string(kPrefix) + "jobs:" + DeviceName(device);
}
std::string QueueKeys::DeadLetter(Device device) {
  return std::string(kPrefix) + "dead:" + DeviceName(device);
}
std::string QueueKeys::Result(const std::string& job_id) {
  return std::string(kPrefix) + "result:" + job_id;
}
std::string QueueKeys::Done(const std::string& job_id) {
  return std::string(kPrefix) + "done:" + job_id;
}
std::string QueueKeys::Attempts(const std::string& job_id) {
  return std::string(kPrefix) + "attempts:" + job_id;
}
std::string QueueKeys::Worker(const std::string& worker) {
  return std::string(kPrefix) + "worker:" + worker;
}

Json OptionsToJson(const JudgeOptions& o) {
  Json j = Json::object();
  for (const JudgeOptionField& f : JudgeOptionTable()) {
    if (!f.travels()) continue;
    const std::string text = JudgeOptionText(o, f.flag);
    switch (f.kind) {
      case OptionKind::kInt:
        j[f.key] = std::stoll(text);
        break;
      case OptionKind::kNumber:
        j[f.key] = std::stod(text);
        break;
      case OptionKind::kOnOff:
        j[f.key] = text == "on";
        break;
      case OptionKind::kText:
      case OptionKind::kSwitch:
        j[f.key] = text;
        break;
    }
  }
  return j;
}

Result<JudgeOptions> OptionsFromJson(const Json& j, const JudgeOptions& local) {
  if (!j.is_object()) return InvalidArgument("field 'options' must be an object");
  JudgeOptions o = local;
  o.test_skip_static = false;  // test-only (cuda-agent judge --test-skip-static): never for a job
  // Each travelling option of the table (judge/judge_options.h), checked as its flag is; one
  // absent (a submitter of an older version) keeps the local value.
  for (const JudgeOptionField& f : JudgeOptionTable()) {
    if (!f.travels() || !j.contains(f.key)) continue;
    std::string text;
    switch (f.kind) {
      case OptionKind::kInt: {
        Result<int> v = GetInt(j, f.key);
        if (!v.ok()) return v.status();
        text = std::to_string(v.value());
        break;
      }
      case OptionKind::kNumber: {
        Result<double> v = GetNumber(j, f.key);
        if (!v.ok()) return v.status();
        text = Json(v.value()).dump();
        break;
      }
      case OptionKind::kOnOff: {
        Result<bool> v = GetBool(j, f.key);
        if (!v.ok()) return v.status();
        text = v.value() ? "on" : "off";
        break;
      }
      case OptionKind::kText:
      case OptionKind::kSwitch: {
        Result<std::string> v = GetString(j, f.key);
        if (!v.ok()) return v.status();
        text = v.value();
        break;
      }
    }
    if (Status s = SetJudgeOption(o, f.flag, text); !s.ok())
      return InvalidArgument(std::string("field '") + f.key + "': " + s.message());
  }
  return o;
}

std::string JobId(const Task& task, const Candidate& candidate, const JudgeOptions& options,
                  bool noop) {
  Sha256 h;
  h.Update("cuda-agent job v" + std::to_string(kJobVersion) + "\n");
  h.Update(task.id + "\n" + std::to_string(task.code.size()) + "\n");
  h.Update(task.code);
  h.Update("\n" + candidate.hash() + "\n");
  h.Update(OptionsToJson(options).dump());
  if (noop) h.Update("\nnoop");
  return h.HexDigest().substr(0, 24);
}

Result<JudgeJob> MakeJob(const JudgeRequest& request) {
  JudgeJob job;
  job.task = request.task;
  job.options = request.options;
  if (!request.workspace.empty()) {
    Result<Candidate> c = Candidate::FromFolder(request.workspace);
    if (!c.ok()) return c.status();
    job.candidate = std::move(c).value();
  } else {
    job.candidate = request.candidate;
  }
  job.id = JobId(job.task, job.candidate, job.options);
  job.submitted_at = UnixNow();
  return job;
}

Json JudgeJob::ToJson() const {
  Json j = {{"version", version},
            {"job_id", id},
            {"submitted_at", submitted_at},
            {"task",
             {{"id", task.id},
              {"name", task.name},
              {"code", task.code},
              {"path", task.source_path.string()},
              {"level", task.level},
              {"ops", task.ops},
              {"data_source", task.data_source}}},
            {"candidate", candidate.ToJson()},
            {"options", OptionsToJson(options)}};
  if (noop) j["noop"] = true;
  return j;
}

JudgeRequest JudgeJob::Request(const JudgeOptions& local) const {
  JudgeRequest r{.task = task, .candidate = candidate, .options = local, .workspace = {}};
  // The travelling fields over the local ones (the job's own were checked by JobFromJson).
  Result<JudgeOptions> merged = OptionsFromJson(OptionsToJson(options), local);
  if (merged.ok()) r.options = std::move(merged).value();
  return r;
}

Result<JudgeJob> JobFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("a job must be a JSON object");
  Result<int> version = GetInt(j, "version");
  if (!version.ok()) return version.status();
  if (version.value() != kJobVersion)
    return InvalidArgument("job version " + std::to_string(version.value()) +
                           " is not supported (this worker reads version " +
                           std::to_string(kJobVersion) + ")");
  JudgeJob job;
  Result<std::string> id = GetString(j, "job_id");
  if (!id.ok()) return id.status();
  job.id = id.value();
  if (j.contains("submitted_at") && j["submitted_at"].is_number())
    job.submitted_at = j["submitted_at"].get<double>();
  if (Status s = Expect(j, "task", Json::value_t::object, "an object"); !s.ok()) return s;
  const Json& t = j["task"];
  for (auto [key, field] : {std::pair{"id", &job.task.id},
                            {"name", &job.task.name},
                            {"code", &job.task.code},
                            {"data_source", &job.task.data_source}}) {
    Result<std::string> v = GetString(t, key);
    if (!v.ok()) return Prefixed("task: ", v.status());
    *field = v.value();
  }
  if (t.contains("path") && t["path"].is_string())
    job.task.source_path = t["path"].get<std::string>();
  Result<int> level = GetInt(t, "level");
  if (!level.ok()) return Prefixed("task: ", level.status());
  job.task.level = level.value();
  if (t.contains("ops")) {
    if (!t["ops"].is_array()) return InvalidArgument("task: field 'ops' must be a list of strings");
    for (const Json& op : t["ops"]) {
      if (!op.is_string()) return InvalidArgument("task: field 'ops' must be a list of strings");
      job.task.ops.push_back(op.get<std::string>());
    }
  }
  if (Status s = CheckTaskShape(job.task); !s.ok()) return Prefixed("task: ", s);
  if (Status s = Expect(j, "candidate", Json::value_t::object, "an object of file names"); !s.ok())
    return s;
  Result<Candidate> c = Candidate::FromJson(j["candidate"]);
  if (!c.ok()) return Prefixed("candidate: ", c.status());
  job.candidate = std::move(c).value();
  if (!j.contains("options")) return InvalidArgument("missing field 'options'");
  Result<JudgeOptions> o = OptionsFromJson(j["options"], JudgeOptions{});
  if (!o.ok()) return Prefixed("options: ", o.status());
  job.options = std::move(o).value();
  if (j.contains("noop")) {
    if (!j["noop"].is_boolean()) return InvalidArgument("field 'noop' must be true or false");
    job.noop = j["noop"].get<bool>();
  }
  std::string expected = JobId(job.task, job.candidate, job.options, job.noop);
  if (job.id != expected)
    return InvalidArgument("job_id " + job.id + " does not match its content (" + expected +
                           "): the job was changed on the way or made by another version");
  return job;
}

Result<JudgeResult> JudgeResultFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("a JudgeResult must be a JSON object");
  JudgeResult r;
  if (j.value("schema_version", 0) != kJudgeSchemaVersion)
    return InvalidArgument("JudgeResult schema_version " +
                           j.value("schema_version", Json()).dump() + " is not " +
                           std::to_string(kJudgeSchemaVersion));
  if (j.contains("reward") && j["reward"].is_number_integer()) r.reward = j["reward"].get<int>();
  if (j.contains("correct") && j["correct"].is_boolean()) r.correct = j["correct"].get<bool>();
  Result<Stage> stage = ParseStage(j.value("stage", ""));
  if (!stage.ok()) return stage.status();
  r.stage = stage.value();
  r.reason = j.value("reason", "");
  if (j.contains("error_kind") && j["error_kind"].is_string())
    r.error_kind = j["error_kind"].get<std::string>();
  std::string outcome = j.value("outcome", "");
  if (outcome == "verdict") {
    r.outcome = Outcome::kVerdict;
  } else if (outcome == "task_error") {
    r.outcome = Outcome::kTaskError;
  } else if (outcome == "internal_error") {
    r.outcome = Outcome::kInternalError;
  } else {
    return InvalidArgument("JudgeResult outcome '" + outcome + "' is unknown");
  }
  r.device = j.value("device", "");
  r.reward_schedule = j.value("reward_schedule", "paper");
  // A judgement without the static rules (a test's) stays marked: no reward, whatever it carries.
  if (j.contains("static_skipped") && j["static_skipped"].is_boolean() &&
      j["static_skipped"].get<bool>()) {
    r.static_skipped = true;
    r.reward.reset();
    if (j.contains("unofficial_reward") && j["unofficial_reward"].is_number_integer())
      r.unofficial_reward = j["unofficial_reward"].get<int>();
  }
  for (auto [key, field] : {std::pair{"task", &r.task},
                            {"candidate", &r.candidate},
                            {"policy", &r.policy},
                            {"build", &r.build},
                            {"verify", &r.verify},
                            {"timing", &r.timing},
                            {"kernels", &r.kernels},
                            {"violations", &r.violations},
                            {"env", &r.env},
                            {"stage_seconds", &r.stage_seconds},
                            {"jobs", &r.jobs}}) {
    if (j.contains(key)) *field = j[key];
  }
  return r;
}

JudgeResult NoopResult(Device device) {
  JudgeResult r;
  r.stage = Stage::kTask;
  r.error_kind = "noop";
  r.reason = "no-op benchmark mode: the job was not judged";
  r.device = DeviceName(device);
  return r;
}

JudgeResult FailedResult(const std::string& kind, const std::string& reason, Device device) {
  JudgeResult r;
  r.outcome = Outcome::kInternalError;
  r.stage = Stage::kTask;
  r.error_kind = kind;
  r.reason = reason;
  r.device = DeviceName(device);
  return r;
}

}  // namespace cuda_agent
