// status_page.cc — the HTML and SVG of the status page (status_page.h).
#include "server/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "common/text.h"

namespace cuda_agent {
namespace {

constexpr int kChartWidth = 720;
constexpr int kChartHeight = 180;
constexpr int kChartLeft = 40;  // room for the y axis labels
constexpr int kChartBottom = 24;

constexpr const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2430; background: #f7f8fa; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 24px 0 8px; }
.meta { color: #5b6472; font-size: 12px; }
.cards { display: flex; gap: 16px; margin-top: 16px; }
.card { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 12px 16px; min-width: 140px; }
.card .n { font-size: 28px; font-weight: 600; }
.card .l { color: #5b6472; font-size: 12px; }
table { border-collapse: collapse; background: #fff; border: 1px solid #dde1e7; min-width: 480px; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid #eef0f3; font-size: 13px; }
th { background: #f0f2f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.r-neg { color: #b42318; font-weight: 600; } .r-pos { color: #067647; font-weight: 600; }
.r-none { color: #5b6472; }
.empty { color: #5b6472; font-style: italic; }
svg { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; }
)";

std::string Text(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) return "";
  const Json& value = object[key];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

double Number(const Json& object, const char* key, double fallback = 0) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return fallback;
  return object[key].get<double>();
}

// TaskText: a task as the environment keeps it (a reference, or {"source", "name"?}) in one line.
std::string TaskText(const Json& object) {
  if (!object.is_object() || !object.contains("task")) return "";
  const Json& task = object["task"];
  if (task.is_object()) return task.value("name", std::string("(inline task)"));
  return Text(object, "task");
}

const Json& List(const Json& status, const char* key) {
  static const Json kEmpty = Json::array();
  if (!status.is_object() || !status.contains(key) || !status[key].is_array()) return kEmpty;
  return status[key];
}

// Ago renders a time before `now` as "12 s ago", "3 min ago", "2 h ago".
std::string Ago(double then, double now) {
  if (then <= 0) return "";
  double s = std::max(0.0, now - then);
  char text[32];
  if (s < 120) {
    snprintf(text, sizeof text, "%.0f s ago", s);
  } else if (s < 7200) {
    snprintf(text, sizeof text, "%.0f min ago", s / 60);
  } else {
    snprintf(text, sizeof text, "%.1f h ago", s / 3600);
  }
  return text;
}

// In renders a time still to come: "in 12 min", "in 2.5 h".
std::string In(const Json& seconds_left) {
  if (!seconds_left.is_number()) return "";
  double s = seconds_left.get<double>();
  char text[32];
  if (s < 0) return "due";
  if (s < 7200) {
    snprintf(text, sizeof text, "in %.0f min", s / 60);
  } else {
    snprintf(text, sizeof text, "in %.1f h", s / 3600);
  }
  return text;
}

std::string RewardCell(const Json& grade) {
  if (!grade.contains("reward") || !grade["reward"].is_number()) {
    return "<td class=\"num r-none\">none</td>";
  }
  double reward = grade["reward"].get<double>();
  char text[32];
  snprintf(text, sizeof text, "%g", reward);
  return std::string("<td class=\"num ") + (reward < 0 ? "r-neg" : "r-pos") + "\">" + text +
         "</td>";
}

void Card(std::ostringstream& html, const std::string& id, const std::string& number,
          const std::string& label) {
  html << "<div class=\"card\"><div class=\"n\" id=\"" << id << "\">" << HtmlEscape(number)
       << "</div><div class=\"l\">" << HtmlEscape(label) << "</div></div>";
}

void SessionsTable(std::ostringstream& html, const Json& status) {
  const Json& sessions = List(status, "sessions");
  html << "<h2>Open sessions</h2>";
  if (sessions.empty()) {
    html << "<p class=\"empty\">no open sessions</p>";
    return;
  }
  html << "<table id=\"sessions\"><tr><th>session</th><th>task</th><th>device</th>"
          "<th>calls</th><th>expires</th></tr>";
  for (const Json& s : sessions) {
    html << "<tr><td>" << HtmlEscape(Text(s, "session_id")) << "</td><td>"
         << HtmlEscape(TaskText(s)) << "</td><td>" << HtmlEscape(Text(s, "device"))
         << "</td><td class=\"num\">" << HtmlEscape(Text(s, "calls"));
    if (!Text(s, "turn_limit").empty()) html << " / " << HtmlEscape(Text(s, "turn_limit"));
    html << "</td><td>" << HtmlEscape(In(s.value("expires_in_s", Json(nullptr)))) << "</td></tr>";
  }
  html << "</table>";
}

void DevicesTable(std::ostringstream& html, const Json& health) {
  const Json& devices = List(health, "devices");
  html << "<h2>Devices</h2>";
  if (devices.empty()) {
    html << "<p class=\"empty\">no devices reported</p>";
    return;
  }
  html << "<table id=\"devices\"><tr><th>device</th><th>state</th><th>queue depth</th>"
          "<th>running</th></tr>";
  for (const Json& d : devices) {
    html << "<tr><td>" << HtmlEscape(Text(d, "device")) << "</td><td>"
         << HtmlEscape(Text(d, "state")) << "</td><td class=\"num queue-depth\">"
         << HtmlEscape(Text(d, "queue_depth")) << "</td><td class=\"num\">"
         << HtmlEscape(Text(d, "running")) << "</td></tr>";
  }
  html << "</table>";
}

void GradesTable(std::ostringstream& html, const Json& status, double now) {
  const Json& grades = List(status, "recent_grades");
  html << "<h2>Recent grades</h2>";
  if (grades.empty()) {
    html << "<p class=\"empty\">no grades yet</p>";
    return;
  }
  html << "<table id=\"grades\"><tr><th>when</th><th>session / job</th><th>task</th>"
          "<th>reward</th><th>reason</th></tr>";
  for (const Json& g : grades) {
    std::string who = Text(g, "session_id");
    if (who.empty()) who = Text(g, "job_id");
    html << "<tr><td>" << HtmlEscape(Ago(Number(g, "at"), now)) << "</td><td>" << HtmlEscape(who)
         << "</td><td>" << HtmlEscape(TaskText(g)) << "</td>" << RewardCell(g)
         << "<td class=\"reason\">" << HtmlEscape(Text(g, "reason")) << "</td></tr>";
  }
  html << "</table>";
}

// ThroughputChart draws one bar per bucket, oldest on the left, with the y axis in judgements.
void ThroughputChart(std::ostringstream& html, const Json& status) {
  Json throughput =
      status.is_object() && status.contains("throughput") ? status["throughput"] : Json::object();
  const Json& counts = List(throughput, "counts");
  double bucket_s = Number(throughput, "bucket_s", 300);
  double total = 0;
  double peak = 0;
  for (const Json& c : counts) {
    double v = c.is_number() ? c.get<double>() : 0;
    total += v;
    peak = std::max(peak, v);
  }
  html << "<h2>Throughput, last hour</h2><p class=\"meta\" id=\"throughput-total\">"
       << static_cast<long>(total) << " judgements in the last hour, per "
       << static_cast<long>(bucket_s / 60) << " min</p>";
  const int plot_w = kChartWidth - kChartLeft - 8;
  const int plot_h = kChartHeight - kChartBottom - 8;
  const double top = std::max(1.0, std::ceil(peak));
  html << "<svg id=\"throughput\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kChartWidth
       << "\" height=\"" << kChartHeight << "\" viewBox=\"0 0 " << kChartWidth << " "
       << kChartHeight << "\" role=\"img\" aria-label=\"judgements per bucket\">";
  const int base_y = 8 + plot_h;
  html << "<line x1=\"" << kChartLeft << "\" y1=\"" << base_y << "\" x2=\"" << kChartLeft + plot_w
       << "\" y2=\"" << base_y << "\" stroke=\"#8a94a3\"/>";
  html << "<line x1=\"" << kChartLeft << "\" y1=\"8\" x2=\"" << kChartLeft << "\" y2=\"" << base_y
       << "\" stroke=\"#8a94a3\"/>";
  html << "<text x=\"" << kChartLeft - 6
       << "\" y=\"14\" font-size=\"11\" text-anchor=\"end\" "
          "fill=\"#5b6472\">"
       << static_cast<long>(top) << "</text><text x=\"" << kChartLeft - 6 << "\" y=\"" << base_y
       << "\" font-size=\"11\" text-anchor=\"end\" fill=\"#5b6472\">0</text>";
  const size_t n = counts.size();
  if (n > 0) {
    const double slot = static_cast<double>(plot_w) / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) {
      double v = counts[i].is_number() ? counts[i].get<double>() : 0;
      double h = v / top * plot_h;
      char bar[256];
      snprintf(bar, sizeof bar,
               "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "fill=\"#2f6fde\"><title>%g</title></rect>",
               kChartLeft + i * slot + slot * 0.15, base_y - h, slot * 0.7, h, v);
      html << bar;
    }
  }
  html << "<text x=\"" << kChartLeft << "\" y=\"" << kChartHeight - 6
       << "\" font-size=\"11\" fill=\"#5b6472\">1 h ago</text><text x=\"" << kChartLeft + plot_w
       << "\" y=\"" << kChartHeight - 6
       << "\" font-size=\"11\" text-anchor=\"end\" fill=\"#5b6472\">now</text></svg>";
}

}  // namespace

std::string StatusPageHtml(const Json& status, int refresh_s) {
  double now = Number(status, "now", static_cast<double>(std::time(nullptr)));
  const Json health =
      status.is_object() && status.contains("health") ? status["health"] : Json::object();
  std::ostringstream html;
  html << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
       << "<meta http-equiv=\"refresh\" content=\"" << refresh_s << "\">"
       << "<title>cuda-agent serve</title><style>" << kStyle << "</style></head><body>";
  html << "<h1>cuda-agent serve</h1><p class=\"meta\">version "
       << HtmlEscape(Text(health, "version")) << " · refreshes every " << refresh_s
       << " s · <a href=\"/v1/health\">/v1/health</a></p>";
  long queued = 0;
  for (const Json& d : List(health, "devices"))
    queued += static_cast<long>(Number(d, "queue_depth"));
  html << "<div class=\"cards\">";
  const std::string sessions_open = Text(health, "sessions_open");
  Card(html, "sessions-open", sessions_open.empty() ? "0" : sessions_open, "open sessions");
  Card(html, "queue-total", std::to_string(queued), "judgements queued");
  Card(html, "grades-count", std::to_string(List(status, "recent_grades").size()), "recent grades");
  if (!Text(status, "calls_last_minute").empty()) {
    Card(html, "calls-last-minute", Text(status, "calls_last_minute"), "tool calls, last minute");
  }
  html << "</div>";
  ThroughputChart(html, status);
  SessionsTable(html, status);
  DevicesTable(html, health);
  GradesTable(html, status, now);
  html << "</body></html>\n";
  return html.str();
}

}  // namespace cuda_agent
