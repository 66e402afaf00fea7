// status_page.h — the HTML page `GET /` shows: what Environment::StatusPage() returns (sessions,
// device queues, recent grades, call rate), rendered for a person. The HTTP face only serves it;
// the page itself belongs to the status page's owner (issue 19's MCP/status work).
//
//   std::string html = StatusPageHtml(environment.StatusPage());
#pragma once

#include <string>

#include "common/json.h"

namespace cuda_agent {

// StatusPageHtml renders Environment::StatusPage()'s JSON as a self-contained HTML page.
std::string StatusPageHtml(const Json& status);

}  // namespace cuda_agent
