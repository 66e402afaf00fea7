// baselines_run.cc — baseline records, their summary and text form.
#include "eval/baselines_run.h"

#include "eval/suite_runner.h"
#include "store/results_store.h"

namespace cuda_agent {
namespace {

Json Target(const Json& timing, const char* target, const char* field) {
  if (!timing.is_object() || !timing.contains(target) || !timing[target].is_object()) return Json();
  return timing[target].value(field, Json());
}

std::string Micros(const Json& us) {
  if (!us.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f us", us.get<double>());
  return buf;
}

std::string Describe(const Json& rec) {
  const std::string status = rec.value("status", std::string());
  if (status != "measured") {
    return (status == "task_error" ? "cannot run: " : "internal error: ") +
           rec.value("reason", std::string());
  }
  std::string text = "eager " + Micros(rec["eager_us"]);
  if (rec["compile_us"].is_number() || rec["compile_error"].is_string())
    text += ", compile " + Micros(rec["compile_us"]);
  if (rec["compile_error"].is_string())
    text += " (torch.compile failed: " + rec["compile_error"].get<std::string>() + ")";
  if (rec.value("stored", false)) text += " (stored earlier)";
  return text;
}

}  // namespace

std::string BaselinesRunId(const BaselineKey& key, bool eager, bool compile) {
  return MakeRunId("baselines",
                   {key.device, key.torch_version, key.policy, std::to_string(key.warmup),
                    std::to_string(key.iters), eager ? "eager" : "", compile ? "compile" : ""});
}

Json BaselinesRecord(const JudgeResult& r) {
  const Json& timing = r.timing;
  std::string status = r.outcome == Outcome::kVerdict     ? "measured"
                       : r.outcome == Outcome::kTaskError ? "task_error"
                                                          : "internal_error";
  Json rec = {
      {"status", status},
      {"ok", status == "measured"},
      {"reason", r.reason},
      {"device", r.device},
      {"measure", timing.is_object() ? timing.value("measure", Json()) : Json()},
      {"eager_us", Target(timing, "eager", "time_us")},
      {"compile_us", Target(timing, "compile", "time_us")},
      {"compile_seconds", Target(timing, "compile", "compile_seconds")},
      {"compile_error", timing.is_object() ? timing.value("compile_error", Json()) : Json()},
      {"env", r.env},
      {"stage_seconds", r.stage_seconds},
      {"stored", false}};
  rec["summary"] = Describe(rec);
  return rec;
}

Json StoredBaselinesRecord(const std::optional<StoredBaseline>& eager,
                           const std::optional<StoredBaseline>& compile) {
  Json rec = {
      {"status", "measured"},
      {"ok", true},
      {"reason", "baselines already stored"},
      {"device", nullptr},
      {"measure", nullptr},
      {"compile_error", nullptr},
      {"eager_us", eager ? eager->summary.value("time_us", Json()) : Json()},
      {"compile_us", compile ? compile->summary.value("time_us", Json()) : Json()},
      {"compile_seconds", compile ? compile->summary.value("compile_seconds", Json()) : Json()},
      {"env", nullptr},
      {"stage_seconds", Json::object()},
      {"stored", true}};
  rec["summary"] = Describe(rec);
  return rec;
}

Json BaselinesSummary(const std::vector<Task>& tasks, const std::map<std::string, Json>& records) {
  Json summary = {{"tasks", tasks.size()},
                  {"measured", 0},
                  {"pending", 0},
                  {"cannot_run", Json::array()},
                  {"compile_failed", Json::array()},
                  {"internal_errors", Json::array()}};
  for (const Task& t : tasks) {
    auto it = records.find(t.id);
    if (it == records.end() || !IsFinalRecord(it->second)) {
      summary["pending"] = summary["pending"].get<int>() + 1;
      if (it != records.end()) {
        summary["internal_errors"].push_back(
            {{"task", t.name}, {"reason", it->second.value("reason", "")}});
      }
      continue;
    }
    const Json& rec = it->second;
    if (rec.value("status", std::string()) != "measured") {
      summary["cannot_run"].push_back(
          {{"task", t.name}, {"reason", rec.value("reason", std::string())}});
      continue;
    }
    summary["measured"] = summary["measured"].get<int>() + 1;
    if (rec.value("compile_error", Json()).is_string()) {
      summary["compile_failed"].push_back({{"task", t.name}, {"reason", rec["compile_error"]}});
    }
  }
  return summary;
}

std::string FormatBaselinesLine(const Json& record) {
  return record["task"].value("name", std::string()) + ": " + Describe(record);
}

}  // namespace cuda_agent
