// status_page.h — the page `cuda-agent serve` answers at `/`: open sessions, queue depth per
// device, recent grades with reward and reason, and judgements per 5 minutes over the last hour as
// an inline SVG chart. Plain HTML + SVG with no external assets; it reloads itself every few
// seconds. The data is Environment::StatusPage()'s JSON (gathered by server/status_queries.h);
// rendering it here keeps the rooms free of markup.
//
//   std::string html = StatusPageHtml(env.StatusPage());
#pragma once

#include <string>

#include "common/json.h"

namespace cuda_agent {

// StatusPageHtml renders the status JSON:
//   {"health": /v1/health's {"version", "sessions_open", "devices": [{"device", "state",
//              "queue_depth", "running"}], ...},
//    "now" (Unix s), "calls_last_minute",
//    "sessions": [{"session_id", "task", "device", "calls", "turn_limit", "expires_in_s"}],
//    "recent_grades": [{"session_id"|"job_id", "task", "reward", "reason", "at"}] (newest first),
//    "throughput": {"bucket_s", "counts": [oldest … newest]} (judgements per bucket, last hour)}
// Missing fields render as empty sections, never as an error.
std::string StatusPageHtml(const Json& status, int refresh_s = 5);

}  // namespace cuda_agent
