// report.h — the renderers of a benchmark report (bench.h's BuildBenchReport), one file each:
// report.md (the paper's table, fast_p, every task, the failures), report.json (the report as is),
// report.html (the tables plus inline SVG charts: per-level bars, the speedup distribution, the
// fastest and slowest tasks with links to their candidates). The renderers read only the report.
//
//   Status s = WriteReports(report, "out/bench");   // report.md, report.json, report.html
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"

namespace cuda_agent {

class ReportRenderer {
 public:
  virtual ~ReportRenderer() = default;
  virtual std::string FileName() const = 0;
  // Render: links to candidates are made relative to `out_dir`, where the file will be written.
  virtual std::string Render(const Json& report, const fs::path& out_dir) const = 0;
};

std::unique_ptr<ReportRenderer> MakeMarkdownReport();  // report_markdown.cc
std::unique_ptr<ReportRenderer> MakeJsonReport();      // report_json.cc
std::unique_ptr<ReportRenderer> MakeHtmlReport();      // report_html.cc

// ReportRenderers: every renderer, in the order the files are written.
const std::vector<std::unique_ptr<ReportRenderer>>& ReportRenderers();

// WriteReports renders every report into `out_dir` (created), each file replaced atomically.
Status WriteReports(const Json& report, const fs::path& out_dir);

// --- Shared by the renderers ---

// ReportTable is a table of the report, built once and written by each renderer in its own syntax.
struct TableCell {
  std::string text;
  std::string link;  // relative to the report's folder; "" for none
};
struct ReportTable {
  std::string title;
  std::string note;  // a sentence under the title
  std::vector<std::string> header;
  std::vector<std::vector<TableCell>> rows;
};

// ReportTables: "Results" (the paper's table), "Correct tasks only", "fast_p", "Tasks" and, when
// some task did not pass, "Tasks that did not pass" (with the reasons); when the solver could not
// use some of its files (report["solver_inventory"]["unused"]), "Files not used".
std::vector<ReportTable> ReportTables(const Json& report, const fs::path& out_dir);

// FormatRate: "75.0%", or "–" for null. FormatTimes: "2.11×", or "–".
std::string FormatRate(const Json& rate);
std::string FormatTimes(const Json& speedup);
// ReportGroups: the metric groups a report shows, each level then overall; a suite without levels
// (every task at level 0) shows only the overall group.
std::vector<const Json*> ReportGroups(const Json& metrics);
// LevelLabel: "level 1", "overall", or "all" for tasks without a level.
std::string LevelLabel(const Json& level);
// CandidateLink is a task's candidate folder relative to `out_dir` ("" when it has none).
std::string CandidateLink(const Json& record, const fs::path& out_dir);
// RankingBaseline is the baseline the rankings and the distribution use: compile when measured.
std::string RankingBaseline(const Json& report);
// RankedBySpeedup: the correct tasks with a speedup against `baseline` ("eager" or "compile"),
// fastest first, the speedup as the metrics see it (a failed torch.compile counts as eager).
struct RankedTask {
  const Json* record;
  double speedup;
};
std::vector<RankedTask> RankedBySpeedup(const Json& report, const std::string& baseline);
// Headline: the run's one-paragraph description (suite, solver, device, policy, measure, versions)
// and whether it is complete.
std::string Headline(const Json& report);

}  // namespace cuda_agent
