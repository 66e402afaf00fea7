// report_test.cc — the three renderers on a small report: the paper's table, links relative to the
// report folder, escaping, empty levels, charts, and the files written.
#include "eval/report.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"
#include "eval/bench.h"

namespace cuda_agent {
namespace {

Json Record(const std::string& status, double cand, double eager, double compile,
            const std::string& dir) {
  Json r = {{"status", status},
            {"ok", status == "correct"},
            {"summary", status + " <b>|x"},
            {"reward", status == "correct" ? Json(3) : Json(-1)},
            {"candidate", dir.empty() ? Json() : Json{{"dir", dir}, {"hash", "h"}}},
            {"measure", "device"},
            {"candidate_us", nullptr},
            {"eager_us", eager},
            {"compile_us", compile},
            {"compile_error", nullptr},
            {"speedup_vs_eager", nullptr},
            {"speedup_vs_compile", nullptr},
            {"env", {{"gpu", "NVIDIA H100"}, {"torch_version", "2.11"}}}};
  if (status == "correct") {
    r["candidate_us"] = cand;
    r["speedup_vs_eager"] = eager / cand;
    r["speedup_vs_compile"] = compile / cand;
  }
  return r;
}

Task T(const std::string& name, int level) {
  Task t;
  t.name = name;
  t.id = name;
  t.level = level;
  return t;
}

Json SmallReport(const fs::path& candidates) {
  BenchRun run{"bench-1", "/kb", "solutions:/s", "strict", "cuda", {1, 2, 3}, true, true, {}};
  std::vector<Task> tasks = {T("level1/1_Fast<op>", 1), T("level1/2_Slow", 1),
                             T("level2/3_Broken", 2)};
  std::map<std::string, Json> records = {
      {"level1/1_Fast<op>",
       Record("correct", 25, 100, 50, (candidates / "level1/1_Fast").string())},
      {"level1/2_Slow", Record("correct", 100, 50, 50, (candidates / "level1/2_Slow").string())},
      {"level2/3_Broken", Record("failed", 0, 0, 0, (candidates / "level2/3_Broken").string())}};
  records["level2/3_Broken"]["summary"] = "failed <b>|x it's \"broken\"";
  return BuildBenchReport(run, tasks, records);
}

TEST(ReportTest, FilesTheSolverCouldNotUseAreListedAndFilesLinkedWithoutASlash) {
  Json report = SmallReport("/work/results/sol");
  report["tasks"][0]["candidate"]["dir"] = "/work/results/run/level_1_problem_1_sample_0_kernel.py";
  std::string md = MakeMarkdownReport()->Render(report, "/work/results/out");
  EXPECT_EQ(md.find("Files not used"), std::string::npos) << md;  // none: no table
  EXPECT_NE(md.find("(<../run/level_1_problem_1_sample_0_kernel.py>)"), std::string::npos) << md;
  report["solver_inventory"] = {
      {"summary",
       {{"dir", "/runs/r"},
        {"layout", "run"},
        {"files", 3},
        {"problems", 2},
        {"judged_files", 2},
        {"sample", "0"}}},
      {"unused", {{{"file", "/runs/r/notes.py"}, {"reason", "not a KernelBench solution name"}}}}};
  md = MakeMarkdownReport()->Render(report, "/work/results/out");
  EXPECT_NE(md.find("Files not used"), std::string::npos) << md;
  EXPECT_NE(md.find("The solver read /runs/r (layout run): 3 solution files of 2 problems of the "
                    "suite, 2 judged (--sample 0)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| /runs/r/notes.py | not a KernelBench solution name |"), std::string::npos)
      << md;
  EXPECT_NE(MakeHtmlReport()->Render(report, "/work/results/out").find("/runs/r/notes.py"),
            std::string::npos);
}

TEST(ReportTest, MarkdownHasThePapersTableAndRelativeLinks) {
  const fs::path out = "/work/results/out";
  std::string md = MakeMarkdownReport()->Render(SmallReport("/work/results/sol"), out);
  // level 1: 2 tasks, both correct; 4x and 0.5x vs eager (geomean 1.41), 2x and 0.5x vs compile
  // (1.00).
  EXPECT_NE(md.find("| level 1 | 2 | 100.0% | 50.0% | 50.0% | 1.41× | 1.00× |"), std::string::npos)
      << md;
  // level 2: the failed task; level 3 asked for but empty.
  EXPECT_NE(md.find("| level 2 | 1 | 0.0% | 0.0% | 0.0% | 1.00× | 1.00× |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| level 3 | 0 | – | – | – | – | – |"), std::string::npos) << md;
  // overall: 2 of 3 pass, geomean over all three (failed = 1x): (4 · 0.5 · 1)^(1/3) = 1.26 vs
  // eager, (2 · 0.5 · 1)^(1/3) = 1 vs compile.
  EXPECT_NE(md.find("| overall | 3 | 66.7% | 33.3% | 33.3% | 1.26× | 1.00× |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("[level1/2_Slow](<../sol/level1/2_Slow/>)"), std::string::npos) << md;
  EXPECT_NE(md.find("failed <b>\\|x"), std::string::npos) << md;  // pipes escaped in cells
  EXPECT_NE(md.find("GPU NVIDIA H100"), std::string::npos);
  // fast_p vs compile over 2x, 0.5x and a failure: p = 0.5 is strict, so 0.5x counts only for p =
  // 0.
  EXPECT_NE(md.find("| overall | compile | 66.7% | 33.3% | 33.3% | 33.3% | 33.3% | 0.0% |"),
            std::string::npos)
      << md;
}

TEST(ReportTest, HtmlHasThreeChartsLinksAndEscapedNames) {
  std::string html = MakeHtmlReport()->Render(SmallReport("/r/sol"), "/r/out");
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++svgs;
  EXPECT_EQ(svgs, 3u);
  for (const char* colour : {"#2e7d32", "#1565c0", "#ef6c00", "#6a1b9a", "#00897b", "#c62828"}) {
    EXPECT_NE(html.find(colour), std::string::npos) << colour;
  }
  EXPECT_NE(html.find("<a href=\"../sol/level1/1_Fast/\">"), std::string::npos);
  EXPECT_NE(html.find("level1/1_Fast&lt;op&gt;"), std::string::npos);
  EXPECT_EQ(html.find("1_Fast<op>"), std::string::npos);
  EXPECT_NE(html.find("it&#39;s &quot;broken&quot;"),
            std::string::npos);  // common/text.h's escaper
  EXPECT_EQ(html.find("it's"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find(">no tasks</text>"), std::string::npos);  // level 3: asked for, empty
}

TEST(ReportTest, JsonIsTheReportAndFilesAreWritten) {
  Json report = SmallReport("/r/sol");
  EXPECT_EQ(Json::parse(MakeJsonReport()->Render(report, "/x")), report);
  TestDir dir("report");
  ASSERT_TRUE(WriteReports(report, dir.path() / "nested").ok());
  for (const char* f : {"report.md", "report.json", "report.html"}) {
    EXPECT_GT(fs::file_size(dir.path() / "nested" / f), 500u) << f;
  }
}

TEST(ReportTest, UnlevelledSuiteShowsOnlyOverallAndNoCorrectTaskIsSaid) {
  BenchRun run{"bench-2", "/tasks", "solutions:/s", "strict", "cpu", {}, true, false, {}};
  std::map<std::string, Json> records = {{"a", Record("failed", 0, 0, 0, "")}};
  Json report = BuildBenchReport(run, {T("a", 0)}, records);
  EXPECT_EQ(ReportGroups(report["metrics"]).size(), 1u);
  std::string md = MakeMarkdownReport()->Render(report, "/o");
  EXPECT_EQ(md.find("| all |"), std::string::npos) << md;
  EXPECT_NE(md.find("| overall | 1 | 0.0% | 0.0% | – | 1.00× | – |"), std::string::npos) << md;
  std::string html = MakeHtmlReport()->Render(report, "/o");
  EXPECT_NE(html.find("No correct task to rank."), std::string::npos);
  EXPECT_NE(html.find("Speedup distribution (vs eager)"), std::string::npos);
}

TEST(ReportTest, RankingsUseTheMetricsSpeedupIncludingTheCompileFallback) {
  Json report = SmallReport("/r/sol");
  Json& fast = report["tasks"][0];
  fast["compile_us"] = nullptr;
  fast["speedup_vs_compile"] = nullptr;
  fast["compile_error"] = "torch.compile raised";
  std::vector<RankedTask> ranked = RankedBySpeedup(report, "compile");
  ASSERT_EQ(ranked.size(), 2u);  // the failed task is not ranked
  EXPECT_EQ(ranked[0].record, &report["tasks"][0]);
  EXPECT_DOUBLE_EQ(ranked[0].speedup, 4.0);  // compile = eager = 100 us, candidate 25 us
  EXPECT_DOUBLE_EQ(ranked[1].speedup, 0.5);
}

TEST(ReportTest, FormattingHelpers) {
  EXPECT_EQ(FormatRate(0.988), "98.8%");
  EXPECT_EQ(FormatRate(Json()), "–");
  EXPECT_EQ(FormatTimes(2.114), "2.11×");
  EXPECT_EQ(LevelLabel(3), "level 3");
  EXPECT_EQ(LevelLabel("overall"), "overall");
  EXPECT_EQ(CandidateLink({{"candidate", nullptr}}, "/o"), "");
}

}  // namespace
}  // namespace cuda_agent
