// status_page_test.cc — the status page's HTML from a status JSON: counts, tables, escaping, the
// chart's bars, and a page for an empty or malformed status (the browser test is
// tests/server/test_mcp.py).
#include "server/status_page.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Json SampleStatus() {
  return {{"now", 1000000.0},
          {"health",
           {{"version", "0.1.0"},
            {"sessions_open", 2},
            {"devices",
             {{{"device", "cpu"}, {"state", "ok"}, {"queue_depth", 3}, {"running", 1}},
              {{"device", "cuda"}, {"state", "ok"}, {"queue_depth", 4}, {"running", 0}}}}}},
          {"calls_last_minute", 17},
          {"sessions",
           {{{"session_id", "s1"},
             {"task", "relu_scale"},
             {"device", "cpu"},
             {"calls", 5},
             {"turn_limit", 150},
             {"expires_in_s", 1800}},
            {{"session_id", "s3"},
             {"task", {{"source", "import torch  # a long inline program"}, {"name", "mine"}}},
             {"device", "cpu"},
             {"calls", 1},
             {"turn_limit", 150},
             {"expires_in_s", 60}},
            {{"session_id", "s2"},
             {"task", "<script>alert(1)</script>"},
             {"device", "cpu"},
             {"calls", 0},
             {"turn_limit", 150},
             {"expires_in_s", 60}}}},
          {"recent_grades",
           {{{"session_id", "s1"},
             {"task", "relu_scale"},
             {"reward", 2},
             {"reason", "correct, 1.52x vs eager"},
             {"at", 999990.0}},
            {{"job_id", "j7"},
             {"task", "relu_scale"},
             {"reward", -1},
             {"reason", "build failed: a.cpp:1: error: expected ';' & more"},
             {"at", 999000.0}},
            {{"session_id", "s3"}, {"reward", nullptr}, {"reason", "task error"}, {"at", 0}}}},
          {"throughput", {{"bucket_s", 300}, {"counts", {0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 3, 1}}}}};
}

TEST(StatusPage, ShowsCountsTablesAndBars) {
  std::string html = StatusPageHtml(SampleStatus(), 7);
  EXPECT_NE(html.find("<meta http-equiv=\"refresh\" content=\"7\">"), std::string::npos);
  EXPECT_NE(html.find("id=\"sessions-open\">2<"), std::string::npos);
  EXPECT_NE(html.find("id=\"queue-total\">7<"), std::string::npos);  // 3 + 4
  EXPECT_NE(html.find("id=\"calls-last-minute\">17<"), std::string::npos);
  EXPECT_NE(html.find("version 0.1.0"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr><td>s"), 3u);                   // the three open sessions
  EXPECT_NE(html.find("<td>mine</td>"), std::string::npos);  // an inline task by its name
  EXPECT_EQ(html.find("a long inline program"), std::string::npos);
  EXPECT_NE(html.find("5 / 150"), std::string::npos);
  EXPECT_NE(html.find("in 30 min"), std::string::npos);
  EXPECT_NE(html.find("correct, 1.52x vs eager"), std::string::npos);
  EXPECT_NE(html.find("10 s ago"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num r-pos\">2</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num r-neg\">-1</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num r-none\">none</td>"), std::string::npos);
  EXPECT_NE(html.find(">j7<"), std::string::npos);  // a job's grade names the job
  // One bar per bucket; the total says 7 judgements in the hour.
  EXPECT_EQ(Count(html, "class=\"bar\""), 12u);
  EXPECT_NE(html.find("7 judgements in the last hour, per 5 min"), std::string::npos);
  // No external assets: nothing is fetched but the page's own links.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(StatusPage, EscapesWhatItShows) {
  std::string html = StatusPageHtml(SampleStatus());
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("expected &#39;;&#39; &amp; more"), std::string::npos);
}

TEST(StatusPage, EmptyOrMalformedStatusStillRenders) {
  for (const Json& status : {Json::object(), Json(nullptr), Json::array(),
                             Json{{"health", 3}, {"sessions", "x"}, {"throughput", {1, 2}}}}) {
    std::string html = StatusPageHtml(status);
    EXPECT_NE(html.find("id=\"sessions-open\">0<"), std::string::npos) << status.dump();
    EXPECT_NE(html.find("no open sessions"), std::string::npos);
    EXPECT_NE(html.find("no grades yet"), std::string::npos);
    EXPECT_EQ(Count(html, "class=\"bar\""), 0u);
    EXPECT_NE(html.find("</html>"), std::string::npos);
  }
}

}  // namespace
}  // namespace cuda_agent
