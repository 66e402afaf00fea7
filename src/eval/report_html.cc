// report_html.cc — report.html: one self-contained page (no scripts, no external files) with the
// headline, three inline SVG charts — pass and faster-than rates per level, the distribution of
// speedups, the fastest and slowest tasks linked to their candidates — and the report's tables.
// The chart colours are fixed (kPassColour, ...) so that a screenshot test can find them.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/text.h"
#include "eval/report.h"

namespace cuda_agent {
namespace {

constexpr const char* kPassColour = "#2e7d32";     // green
constexpr const char* kEagerColour = "#1565c0";    // blue
constexpr const char* kCompileColour = "#ef6c00";  // orange
constexpr const char* kHistColour = "#6a1b9a";     // purple
constexpr const char* kFailedColour = "#9e9e9e";   // grey
constexpr const char* kFastColour = "#00897b";     // teal
constexpr const char* kSlowColour = "#c62828";     // red

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string Rect(double x, double y, double w, double h, const char* fill,
                 const std::string& title) {
  return "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(w, 0.0)) +
         "\" height=\"" + Num(std::max(h, 0.0)) + "\" fill=\"" + fill + "\"><title>" +
         HtmlEscape(title) + "</title></rect>";
}

std::string Text(double x, double y, const std::string& text, const char* anchor = "middle",
                 int size = 12) {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + anchor +
         "\" font-size=\"" + std::to_string(size) + "\">" + HtmlEscape(text) + "</text>";
}

// Rate: the pass rate (baseline null) or the faster-than rate against a baseline; 0 when absent.
double Rate(const Json& group, const char* baseline) {
  Json r = !baseline                     ? group.value("pass_rate", Json())
           : group[baseline].is_object() ? group[baseline].value("faster_rate", Json())
                                         : Json();
  return r.is_number() ? r.get<double>() : 0.0;
}

// LevelBars: per level and overall, the pass rate and the faster-than rates as bars (0–100%).
std::string LevelBars(const Json& metrics) {
  const std::vector<const Json*> groups = ReportGroups(metrics);
  const double W = 760, H = 300, left = 50, top = 30, plot_w = W - left - 20, plot_h = 220;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" role=\"img\" aria-label=\"pass and faster-than rates per level\">";
  for (int pct = 0; pct <= 100; pct += 25) {
    double y = top + plot_h * (1 - pct / 100.0);
    s << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << Num(y) << "\" y2=\""
      << Num(y) << "\" stroke=\"#ddd\"/>"
      << Text(left - 6, y + 4, std::to_string(pct) + "%", "end", 11);
  }
  const struct {
    const char* label;
    const char* baseline;
    const char* colour;
  } series[] = {{"pass", nullptr, kPassColour},
                {"faster than eager", "eager", kEagerColour},
                {"faster than compile", "compile", kCompileColour}};
  const double group_w = plot_w / groups.size(), bar_w = group_w * 0.8 / 3;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Json& g = *groups[i];
    const double x0 = left + i * group_w + group_w * 0.1;
    if (g["tasks"] == 0) s << Text(x0 + 1.5 * bar_w, top + plot_h - 6, "no tasks", "middle", 11);
    for (int k = 0; k < 3 && g["tasks"] != 0; ++k) {
      if (series[k].baseline && !g[series[k].baseline].is_object()) continue;
      double rate = Rate(g, series[k].baseline), h = plot_h * rate, x = x0 + k * bar_w;
      s << Rect(x + 2, top + plot_h - h, bar_w - 4, h, series[k].colour,
                LevelLabel(g["level"]) + ": " + series[k].label + " " + FormatRate(rate))
        << Text(x + bar_w / 2, top + plot_h - h - 4, FormatRate(rate), "middle", 10);
    }
    s << Text(x0 + 1.5 * bar_w, top + plot_h + 16,
              LevelLabel(g["level"]) + " (" + g["tasks"].dump() + ")");
  }
  for (int k = 0; k < 3; ++k) {
    double x = left + k * 190;
    s << Rect(x, H - 22, 14, 14, series[k].colour, series[k].label)
      << Text(x + 20, H - 10, series[k].label, "start", 12);
  }
  s << "</svg>";
  return s.str();
}

// SpeedupHistogram: how many correct tasks fall into each speedup band, plus the failed tasks.
std::string SpeedupHistogram(const Json& report, const std::string& baseline) {
  const std::vector<double> edges = {0.5, 0.8, 0.95, 1.05, 1.25, 1.5, 2, 4};
  std::vector<std::string> labels = {"<0.5×",    "0.5–0.8", "0.8–0.95", "0.95–1.05", "1.05–1.25",
                                     "1.25–1.5", "1.5–2",   "2–4",      "≥4×",       "failed"};
  std::vector<int> counts(labels.size(), 0);
  for (const RankedTask& t : RankedBySpeedup(report, baseline)) {
    size_t bin = std::upper_bound(edges.begin(), edges.end(), t.speedup) - edges.begin();
    ++counts[bin];
  }
  for (const Json& t : report["tasks"])
    counts.back() += t.value("status", std::string()) != "correct";
  const int max_count = std::max(1, *std::max_element(counts.begin(), counts.end()));
  const double W = 760, H = 280, left = 40, top = 20, plot_w = W - left - 20, plot_h = 200;
  const double bin_w = plot_w / labels.size();
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" role=\"img\" aria-label=\"speedup distribution\">"
    << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << top + plot_h
    << "\" y2=\"" << top + plot_h << "\" stroke=\"#444\"/>";
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool failed = i + 1 == labels.size();
    double h = plot_h * counts[i] / max_count, x = left + i * bin_w;
    s << Rect(x + 4, top + plot_h - h, bin_w - 8, h, failed ? kFailedColour : kHistColour,
              labels[i] + ": " + std::to_string(counts[i]) + " tasks")
      << Text(x + bin_w / 2, top + plot_h - h - 4, std::to_string(counts[i]), "middle", 11)
      << Text(x + bin_w / 2, top + plot_h + 16, labels[i], "middle", 11);
  }
  s << Text(left + plot_w / 2, H - 12,
            "speedup vs " + baseline + " of the correct tasks (and the failed ones)")
    << "</svg>";
  return s.str();
}

// Extremes: the fastest and the slowest correct tasks as bars on a log scale around 1×, each name a
// link to the candidate.
std::string Extremes(const Json& report, const std::string& baseline, const fs::path& out_dir) {
  std::vector<RankedTask> ranked = RankedBySpeedup(report, baseline);
  constexpr size_t kEach = 10;
  std::vector<RankedTask> shown;
  if (ranked.size() <= 2 * kEach) {
    shown = ranked;
  } else {
    shown.assign(ranked.begin(), ranked.begin() + kEach);
    shown.insert(shown.end(), ranked.end() - kEach, ranked.end());
  }
  if (shown.empty()) return "<p>No correct task to rank.</p>";
  double span = 1;  // log2 range each side of 1×
  for (const RankedTask& t : shown) span = std::max(span, std::fabs(std::log2(t.speedup)));
  const double row_h = 22, W = 760, name_w = 300, plot_x = name_w + 10, plot_w = W - plot_x - 70;
  const double H = shown.size() * row_h + 30, mid = plot_x + plot_w / 2;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" role=\"img\" aria-label=\"fastest and slowest tasks\">"
    << "<line x1=\"" << mid << "\" x2=\"" << mid << "\" y1=\"0\" y2=\"" << H - 20
    << "\" stroke=\"#444\"/>" << Text(mid, H - 6, "1× (" + baseline + ")", "middle", 11);
  for (size_t i = 0; i < shown.size(); ++i) {
    const Json& t = *shown[i].record;
    const double v = shown[i].speedup, y = i * row_h + 4;
    const double len = plot_w / 2 * std::log2(v) / span;
    const std::string name = t["task"].value("name", std::string());
    const std::string link = CandidateLink(t, out_dir);
    s << "<a href=\"" << HtmlEscape(link) << "\">" << Text(name_w, y + 14, name, "end", 12)
      << "</a>"
      << Rect(len >= 0 ? mid : mid + len, y + 2, std::fabs(len), row_h - 6,
              v >= 1 ? kFastColour : kSlowColour, name + ": " + FormatTimes(v))
      << Text(len >= 0 ? mid + len + 4 : mid + len - 4, y + 14, FormatTimes(v),
              len >= 0 ? "start" : "end", 11);
  }
  s << "</svg>";
  return s.str();
}

std::string Table(const ReportTable& t) {
  std::ostringstream s;
  s << "<h2>" << HtmlEscape(t.title) << "</h2><p>" << HtmlEscape(t.note) << "</p><table><tr>";
  for (const std::string& h : t.header) s << "<th>" << HtmlEscape(h) << "</th>";
  s << "</tr>";
  for (const auto& row : t.rows) {
    s << "<tr>";
    for (const TableCell& c : row) {
      s << "<td>"
        << (c.link.empty()
                ? HtmlEscape(c.text)
                : "<a href=\"" + HtmlEscape(c.link) + "\">" + HtmlEscape(c.text) + "</a>")
        << "</td>";
    }
    s << "</tr>";
  }
  s << "</table>";
  return s.str();
}

class HtmlReport : public ReportRenderer {
 public:
  std::string FileName() const override { return "report.html"; }

  std::string Render(const Json& report, const fs::path& out_dir) const override {
    const std::string baseline = RankingBaseline(report);
    std::ostringstream h;
    h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cuda-agent "
         "bench: "
      << HtmlEscape(report["run"].value("suite", std::string())) << "</title><style>"
      << "body{font-family:sans-serif;margin:24px;max-width:1100px;color:#222}"
      << "table{border-collapse:collapse;margin-bottom:8px}td,th{border:1px solid #ccc;padding:3px "
         "8px;"
      << "font-size:13px;text-align:left}th{background:#f2f2f2}svg{display:block;margin:8px 0 24px}"
      << "</style></head><body>\n<h1>Benchmark report</h1>\n<p>" << HtmlEscape(Headline(report))
      << "</p>\n"
      << "<h2>Pass and faster-than rates per level</h2>\n"
      << LevelBars(report["metrics"]) << "\n"
      << "<h2>Speedup distribution (vs " << baseline << ")</h2>\n"
      << SpeedupHistogram(report, baseline) << "\n<h2>Fastest and slowest tasks (vs " << baseline
      << ")</h2>\n"
      << Extremes(report, baseline, out_dir) << "\n";
    for (const ReportTable& t : ReportTables(report, out_dir)) h << Table(t) << "\n";
    h << "</body></html>\n";
    return h.str();
  }
};

}  // namespace

std::unique_ptr<ReportRenderer> MakeHtmlReport() { return std::make_unique<HtmlReport>(); }

}  // namespace cuda_agent
