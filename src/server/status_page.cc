// status_page.cc — a minimal status page: the counts and the raw status JSON, escaped. A hook: the
// full page (tables, refresh) is built on top of StatusPageHtml by the status page's owner.
#include "server/status_page.h"

namespace cuda_agent {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string StatusPageHtml(const Json& status) {
  const Json health = status.value("health", Json::object());
  std::string html =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>cuda-agent serve</title></head>"
      "<body>\n<h1>cuda-agent serve</h1>\n<p>";
  html += "version " + Escape(health.value("version", std::string())) + " · ";
  html += std::to_string(health.value("sessions_open", 0)) + " sessions open · ";
  html += std::to_string(health.value("queue_depth", 0)) + " judgements queued · ";
  html += std::to_string(status.value("calls_last_minute", 0)) + " calls in the last minute";
  html += "</p>\n<pre>" + Escape(status.dump(2, ' ', false, Json::error_handler_t::replace)) +
          "</pre>\n<p>API: <a href=\"/v1/openapi.json\">/v1/openapi.json</a></p>\n</body></html>\n";
  return html;
}

}  // namespace cuda_agent
