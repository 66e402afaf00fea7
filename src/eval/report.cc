// report.cc — the renderer list, writing the files, helpers shared by the renderers.
#include "eval/report.h"

#include <algorithm>

#include "eval/bench.h"
#include "eval/metrics.h"

namespace cuda_agent {

const std::vector<std::unique_ptr<ReportRenderer>>& ReportRenderers() {
  static const auto* renderers = [] {
    auto* v = new std::vector<std::unique_ptr<ReportRenderer>>();
    v->push_back(MakeMarkdownReport());
    v->push_back(MakeJsonReport());
    v->push_back(MakeHtmlReport());
    return v;
  }();
  return *renderers;
}

Status WriteReports(const Json& report, const fs::path& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return InvalidArgument("cannot create " + out_dir.string() + ": " + ec.message());
  const fs::path dir = fs::absolute(out_dir);
  for (const auto& r : ReportRenderers()) {
    if (Status s = WriteFileAtomic(dir / r->FileName(), r->Render(report, dir)); !s.ok()) return s;
  }
  return OkStatus();
}

std::string FormatRate(const Json& rate) {
  if (!rate.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * rate.get<double>());
  return buf;
}

std::string FormatTimes(const Json& speedup) {
  if (!speedup.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f×", speedup.get<double>());
  return buf;
}

std::vector<const Json*> ReportGroups(const Json& metrics) {
  std::vector<const Json*> groups;
  const Json& levels = metrics["levels"];
  const bool unlevelled = levels.size() == 1 && levels[0]["level"] == 0;
  if (!unlevelled) {
    for (const Json& g : levels) groups.push_back(&g);
  }
  groups.push_back(&metrics["overall"]);
  return groups;
}

std::string LevelLabel(const Json& level) {
  if (level.is_string()) return level.get<std::string>();
  if (level.is_number_integer() && level.get<int>() > 0) return "level " + level.dump();
  return "all";
}

std::string CandidateLink(const Json& record, const fs::path& out_dir) {
  const Json c = record.value("candidate", Json());
  if (!c.is_object() || !c.value("dir", Json()).is_string()) return "";
  fs::path dir = c["dir"].get<std::string>();
  if (dir.empty()) return "";
  // A single-file candidate (kernelbench: solver) links to the file, a folder with a slash.
  const std::string slash = dir.extension() == ".py" ? "" : "/";
  return fs::proximate(fs::absolute(dir), out_dir).generic_string() + slash;
}

std::string RankingBaseline(const Json& report) {
  const Json b = report["run"].value("baselines", Json::object());
  return b.value("compile", false) ? "compile" : "eager";
}

std::vector<RankedTask> RankedBySpeedup(const Json& report, const std::string& baseline) {
  const Baseline which = baseline == "compile" ? Baseline::kCompile : Baseline::kEager;
  std::vector<RankedTask> ranked;
  for (const Json& t : report["tasks"]) {
    if (std::optional<double> s = Speedup(ScoreFromRecord(t), which)) ranked.push_back({&t, *s});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedTask& a, const RankedTask& b) { return a.speedup > b.speedup; });
  return ranked;
}

std::string Headline(const Json& report) {
  const Json& run = report["run"];
  const Json& env = report["env"];
  std::string text = "Suite `" + run.value("suite", std::string()) + "`, solver `" +
                     run.value("solver", std::string()) + "`, device " +
                     run.value("device", std::string()) + ", precision policy " +
                     run.value("policy", std::string());
  if (env.is_object()) {
    if (env.value("gpu", Json()).is_string()) text += ", GPU " + env["gpu"].get<std::string>();
    if (env.value("torch_version", Json()).is_string())
      text += ", torch " + env["torch_version"].get<std::string>();
    if (env.value("measure", Json()).is_string())
      text += ", " + env["measure"].get<std::string>() + " time";
  }
  text += ". Run " + run.value("run_id", std::string()) + ", report of " +
          report.value("generated_at", std::string()) + ". ";
  const Json& c = report["counts"];
  if (report.value("complete", false)) {
    text += "Complete: " + c["tasks"].dump() + " tasks.";
  } else {
    text +=
        "Incomplete: " + c["pending"].dump() + " of " + c["tasks"].dump() + " tasks not run yet, " +
        c["internal_error"].dump() +
        " stopped by an internal error; re-run the same command to resume. Unfinished tasks count "
        "as failed below.";
  }
  return text;
}

}  // namespace cuda_agent

namespace cuda_agent {
namespace {

Json Versus(const Json& group, const char* baseline, const char* field) {
  const Json& v = group[baseline];
  return v.is_object() ? v.value(field, Json()) : Json();
}

std::string Micros(const Json& us) {
  if (!us.is_number()) return "–";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", us.get<double>());
  return buf;
}

ReportTable ResultsTable(const Json& metrics) {
  ReportTable t{
      "Results",
      "Faster: correct and more than 5% faster, (t0 − t)/t0 > 0.05, as a share of all tasks. "
      "Geometric means over all tasks, a failed task counted as 1.0× (the original program "
      "keeps running). Overall weights each level by its number of tasks.",
      {"level", "tasks", "pass", "faster than eager", "faster than compile", "geomean vs eager",
       "geomean vs compile"},
      {}};
  for (const Json* g : ReportGroups(metrics)) {
    t.rows.push_back({{LevelLabel((*g)["level"]), ""},
                      {(*g)["tasks"].dump(), ""},
                      {FormatRate((*g)["pass_rate"]), ""},
                      {FormatRate(Versus(*g, "eager", "faster_rate")), ""},
                      {FormatRate(Versus(*g, "compile", "faster_rate")), ""},
                      {FormatTimes(Versus(*g, "eager", "geomean_all")), ""},
                      {FormatTimes(Versus(*g, "compile", "geomean_all")), ""}});
  }
  return t;
}

ReportTable CorrectOnlyTable(const Json& metrics) {
  ReportTable t{"Correct tasks only",
                "Geometric means over the correct tasks only; overall weights each level's mean by "
                "its number of tasks.",
                {"level", "correct", "geomean vs eager", "geomean vs compile"},
                {}};
  for (const Json* g : ReportGroups(metrics)) {
    t.rows.push_back({{LevelLabel((*g)["level"]), ""},
                      {(*g)["correct"].dump(), ""},
                      {FormatTimes(Versus(*g, "eager", "geomean_correct")), ""},
                      {FormatTimes(Versus(*g, "compile", "geomean_correct")), ""}});
  }
  return t;
}

ReportTable FastPTable(const Json& metrics) {
  ReportTable t{
      "fast_p",
      "Share of all tasks that are correct with a speedup above p (KernelBench's fast_p is the "
      "eager row: fast_0, fast_1, fast_2, ...).",
      {"level", "vs"},
      {}};
  for (const Json& p : metrics["fast_p_thresholds"])
    t.header.push_back("p = " + FastPKey(p.get<double>()));
  for (const Json* g : ReportGroups(metrics)) {
    for (const char* baseline : {"eager", "compile"}) {
      const Json& v = (*g)[baseline];
      if (!v.is_object()) continue;
      std::vector<TableCell> row = {{LevelLabel((*g)["level"]), ""}, {baseline, ""}};
      for (const Json& p : metrics["fast_p_thresholds"]) {
        row.push_back({FormatRate(v["fast_p"].value(FastPKey(p.get<double>()), Json())), ""});
      }
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

ReportTable TasksTable(const Json& report, const fs::path& out_dir) {
  const Json& env = report["env"];
  const std::string unit =
      env.is_object() && env.value("measure", Json()) == "device" ? " (device µs)" : " (µs)";
  ReportTable t{"Tasks",
                "Each task's name links to its candidate.",
                {"task", "status", "reward", "candidate" + unit, "eager" + unit, "compile" + unit,
                 "vs eager", "vs compile"},
                {}};
  for (const Json& task : report["tasks"]) {
    t.rows.push_back({{task["task"].value("name", std::string()), CandidateLink(task, out_dir)},
                      {task.value("status", std::string()), ""},
                      {task.value("reward", Json()).is_number() ? task["reward"].dump() : "–", ""},
                      {Micros(task.value("candidate_us", Json())), ""},
                      {Micros(task.value("eager_us", Json())), ""},
                      {Micros(task.value("compile_us", Json())), ""},
                      {FormatTimes(task.value("speedup_vs_eager", Json())), ""},
                      {FormatTimes(task.value("speedup_vs_compile", Json())), ""}});
  }
  return t;
}

ReportTable NotPassedTable(const Json& report, const fs::path& out_dir) {
  std::string note =
      "Each counts as failed in every rate and as 1.0× in the all-task geometric means.";
  const Json& fallback = report["conventions"]["compile_fallback_tasks"];
  if (!fallback.empty()) {
    note += " torch.compile failed on " + std::to_string(fallback.size()) +
            " correct task(s), whose compile time is therefore the eager time:";
    for (const Json& name : fallback) note += " " + name.get<std::string>();
    note += ".";
  }
  ReportTable t{"Tasks that did not pass", note, {"task", "status", "reason"}, {}};
  for (const Json& task : report["tasks"]) {
    if (task.value("status", std::string()) == "correct") continue;
    t.rows.push_back({{task["task"].value("name", std::string()), CandidateLink(task, out_dir)},
                      {task.value("status", std::string()), ""},
                      {task.value("summary", std::string()), ""}});
  }
  return t;
}

// UnusedFilesTable: the files the solver read but could not use (kernelbench: solver), with why.
ReportTable UnusedFilesTable(const Json& report) {
  const Json inv = report.value("solver_inventory", Json::object());
  const Json summary = inv.value("summary", Json());
  std::string note = "Files in the solver's folder that no task's candidate comes from, and why.";
  if (summary.is_object()) {
    note = "The solver read " + summary.value("dir", std::string()) + " (layout " +
           summary.value("layout", std::string()) + "): " + summary["files"].dump() +
           " solution files of " + summary["problems"].dump() + " problems of the suite, " +
           summary["judged_files"].dump() + " judged (--sample " +
           summary.value("sample", std::string()) + "). " + note;
  }
  ReportTable t{"Files not used", note, {"file", "reason"}, {}};
  for (const Json& u : inv.value("unused", Json::array())) {
    t.rows.push_back(
        {{u.value("file", std::string()), ""}, {u.value("reason", std::string()), ""}});
  }
  return t;
}

}  // namespace

std::vector<ReportTable> ReportTables(const Json& report, const fs::path& out_dir) {
  const Json& metrics = report["metrics"];
  std::vector<ReportTable> tables = {ResultsTable(metrics), CorrectOnlyTable(metrics),
                                     FastPTable(metrics), TasksTable(report, out_dir)};
  ReportTable not_passed = NotPassedTable(report, out_dir);
  if (!not_passed.rows.empty()) tables.push_back(std::move(not_passed));
  ReportTable unused = UnusedFilesTable(report);
  if (!unused.rows.empty()) tables.push_back(std::move(unused));
  return tables;
}

}  // namespace cuda_agent
