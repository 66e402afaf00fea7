// bench.cc — records from judgements, the bench run, the report model.
#include "eval/bench.h"

#include <set>

#include "store/database.h"

namespace cuda_agent {
namespace {

Json TimeOf(const Json& timing, const char* target) {
  if (!timing.is_object() || !timing.contains(target) || !timing[target].is_object()) return Json();
  Json t = timing[target].value("time_us", Json());
  return t.is_number() ? t : Json();
}

std::string Shorten(const std::string& text, size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() <= max ? line : line.substr(0, max) + "...";
}

std::string StatusOf(const JudgeResult& r) {
  switch (r.outcome) {
    case Outcome::kTaskError:
      return "task_error";
    case Outcome::kInternalError:
      return "internal_error";
    case Outcome::kVerdict:
      break;
  }
  return r.correct.value_or(false) && r.reward.has_value() ? "correct" : "failed";
}

std::string Summary(const Json& rec) {
  const std::string status = rec["status"];
  if (status == "correct") {
    std::string s = "correct, reward " + rec["reward"].dump();
    for (const char* target : {"eager", "compile"}) {
      const Json& v = rec["speedup_vs_" + std::string(target)];
      if (!v.is_number()) continue;
      char buf[48];
      std::snprintf(buf, sizeof(buf), ", %.2fx vs %s", v.get<double>(), target);
      s += buf;
    }
    return s;
  }
  if (status == "failed")
    return "failed at " + rec["stage"].get<std::string>() + ": " +
           Shorten(rec["reason"].get<std::string>(), 120);
  if (status == "missing") return Shorten(rec["reason"].get<std::string>(), 160);
  return (status == "task_error" ? "task error: " : "internal error: ") +
         Shorten(rec["reason"].get<std::string>(), 120);
}

std::optional<double> Number(const Json& j) {
  return j.is_number() ? std::optional<double>(j.get<double>()) : std::nullopt;
}

}  // namespace

std::string BenchRunId(const BenchRun& run) {
  return MakeRunId("bench", {run.suite, run.solver, run.policy, run.device});
}

Json BenchRunDescription(const BenchRun& run) {
  return {{"run_id", run.run_id},
          {"suite", run.suite},
          {"solver", run.solver},
          {"policy", run.policy},
          {"device", run.device},
          {"levels", run.levels},
          {"baselines", {{"eager", run.eager}, {"compile", run.compile}}}};
}

Json BenchRecord(const Solution& solution, const JudgeResult* r) {
  Json rec = {{"schema_version", kBenchSchemaVersion},
              {"reward", nullptr},
              {"stage", nullptr},
              {"error_kind", nullptr},
              {"candidate", nullptr},
              {"measure", nullptr},
              {"candidate_us", nullptr},
              {"eager_us", nullptr},
              {"compile_us", nullptr},
              {"compile_error", nullptr},
              {"speedup_vs_eager", nullptr},
              {"speedup_vs_compile", nullptr},
              {"env", nullptr},
              {"judge_seconds", nullptr},
              {"sample", solution.sample.empty() ? Json() : Json(solution.sample)}};
  if (!r) {
    rec["status"] = "missing";
    rec["reason"] = solution.note.empty() ? "no candidate" : solution.note;
  } else {
    rec["status"] = StatusOf(*r);
    rec["reason"] = r->reason;
    rec["reward"] = r->reward ? Json(*r->reward) : Json();
    rec["stage"] = StageName(r->stage);
    rec["error_kind"] = r->error_kind.empty() ? Json() : Json(r->error_kind);
    rec["candidate"] = {{"dir", solution.candidate_dir.string()},
                        {"hash", r->candidate.value("hash", Json())}};
    if (r->timing.is_object()) {
      rec["measure"] = r->timing.value("measure", Json());
      rec["candidate_us"] = TimeOf(r->timing, "candidate");
      rec["eager_us"] = TimeOf(r->timing, "eager");
      rec["compile_us"] = TimeOf(r->timing, "compile");
      rec["compile_error"] = r->timing.value("compile_error", Json());
      rec["speedup_vs_eager"] = r->timing.value("speedup_vs_eager", Json());
      rec["speedup_vs_compile"] = r->timing.value("speedup_vs_compile", Json());
    }
    const Json gpu = r->env.value("gpu", Json());
    rec["env"] = {{"gpu", gpu.is_object() ? gpu.value("name", Json()) : Json()},
                  {"torch_version", r->env.value("torch_version", Json())}};
    rec["judge_seconds"] = r->stage_seconds.value("total", Json());
  }
  rec["ok"] = rec["status"] == "correct";
  rec["summary"] = Summary(rec);
  return rec;
}

Json BestOfSamples(const std::vector<Json>& records) {
  if (records.empty()) {
    return {
        {"status", "missing"}, {"ok", false}, {"reason", "no sample"}, {"summary", "no sample"}};
  }
  auto rank = [](const Json& r) {
    const Json reward = r.value("reward", Json());
    const Json speedup = r.value("speedup_vs_eager", Json());
    return std::pair<double, double>(reward.is_number() ? reward.get<double>() : -2.0,
                                     speedup.is_number() ? speedup.get<double>() : 0.0);
  };
  size_t best = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].value("status", std::string()) == "internal_error") {
      best = i;  // not final: the task is judged again on resume
      break;
    }
    if (rank(records[i]) > rank(records[best])) best = i;
  }
  Json out = records[best];
  Json samples = Json::array();
  for (const Json& r : records) {
    samples.push_back({{"sample", r.value("sample", Json())},
                       {"status", r.value("status", Json())},
                       {"reward", r.value("reward", Json())},
                       {"speedup_vs_eager", r.value("speedup_vs_eager", Json())},
                       {"summary", r.value("summary", Json())}});
  }
  out["samples"] = samples;
  const Json label = out.value("sample", Json());
  out["summary"] = "best of " + std::to_string(records.size()) + " (sample " +
                   (label.is_string() ? label.get<std::string>() : std::string("?")) +
                   "): " + out.value("summary", std::string());
  return out;
}

TaskScore ScoreFromRecord(const Json& record) {
  TaskScore s;
  const Json task = record.value("task", Json::object());
  s.name = task.value("name", std::string());
  s.level = task.value("level", 0);
  s.correct = record.value("status", std::string()) == "correct";
  s.candidate_us = Number(record.value("candidate_us", Json()));
  s.eager_us = Number(record.value("eager_us", Json()));
  s.compile_us = Number(record.value("compile_us", Json()));
  if (!s.compile_us && record.value("compile_error", Json()).is_string()) s.compile_us = s.eager_us;
  return s;
}

Status RunBench(const BenchRun& run, const std::vector<Task>& tasks, Solver& solver,
                const JudgeFn& judge, ResultsStore& store, const SuiteRunOptions& options,
                std::unique_ptr<ProgressView> view) {
  if (Status s = store.BeginRun(run.run_id, BenchRunDescription(run)); !s.ok()) return s;
  auto work = [&](const Task& task) {
    Solution solution = solver.Solve(task);
    if (!solution.samples.empty()) {
      std::vector<Json> judged;
      for (const SolutionSample& sample : solution.samples) {
        Solution one{sample.candidate, solution.note, sample.label, {}};
        JudgeResult result = judge(task, sample.candidate);
        judged.push_back(BenchRecord(one, &result));
      }
      return BestOfSamples(judged);
    }
    if (solution.candidate_dir.empty()) return BenchRecord(solution, nullptr);
    JudgeResult result = judge(task, solution.candidate_dir);
    return BenchRecord(solution, &result);
  };
  return RunSuite(tasks, store, options, work, std::move(view));
}

Json BuildBenchReport(const BenchRun& run, const std::vector<Task>& tasks,
                      const std::map<std::string, Json>& records) {
  Json counts = {{"tasks", tasks.size()}, {"correct", 0},        {"failed", 0}, {"missing", 0},
                 {"task_error", 0},       {"internal_error", 0}, {"pending", 0}};
  Json rows = Json::array();
  Json env = nullptr;
  Json fallback = Json::array();
  std::vector<TaskScore> scores;
  std::set<int> levels(run.levels.begin(), run.levels.end());
  for (const Task& task : tasks) {
    levels.insert(task.level);
    auto it = records.find(task.id);
    Json rec = it != records.end()
                   ? it->second
                   : Json{{"status", "pending"}, {"ok", false}, {"summary", "not run yet"}};
    rec["task"] = TaskRef(task);  // the suite's name and level, whatever the record says
    const std::string status = rec.value("status", std::string("pending"));
    const std::string key =
        counts.contains(status) && status != "tasks" ? status : "internal_error";
    counts[key] = counts[key].get<int>() + 1;
    if (env.is_null() && rec.value("env", Json()).is_object()) {
      env = rec["env"];
      env["measure"] = rec.value("measure", Json());
    }
    if (status == "correct" && !rec.value("compile_us", Json()).is_number() &&
        rec.value("compile_error", Json()).is_string()) {
      fallback.push_back(task.name);
    }
    scores.push_back(ScoreFromRecord(rec));
    rows.push_back(std::move(rec));
  }
  MetricsOptions mo{run.eager, run.compile};
  SuiteMetrics metrics = ComputeMetrics(scores, {levels.begin(), levels.end()}, mo);
  const bool complete = counts["pending"] == 0 && counts["internal_error"] == 0;
  Json conventions = {
      {"faster",
       "correct and (t_baseline - t) / t_baseline > 0.05, strictly (the reward's rule); a "
       "share of all tasks"},
      {"geomean_all",
       "over all tasks; a failed, missing or unjudged task counts as 1.0x (the "
       "original program keeps running)"},
      {"geomean_correct", "over correct tasks only"},
      {"overall", "each level weighted by its number of tasks"},
      {"fast_p", "share of all tasks that are correct with speedup > p"},
      {"compile_fallback", "where torch.compile failed on a task, its time is the eager time"},
      {"compile_fallback_tasks", fallback}};
  Json run_json = BenchRunDescription(run);
  run_json["levels"] = Json(std::vector<int>(levels.begin(), levels.end()));
  return {
      {"schema_version", kBenchSchemaVersion},
      {"kind", "bench"},
      {"run", run_json},
      {"generated_at", UtcNow()},
      {"complete", complete},
      {"counts", counts},
      {"env", env},
      {"conventions", conventions},
      {"metrics", MetricsToJson(metrics)},
      {"solver_inventory", {{"summary", run.inventory.summary}, {"unused", run.inventory.unused}}},
      {"tasks", rows}};
}

}  // namespace cuda_agent
