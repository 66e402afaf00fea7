// status_queries.h — what the status page (server/status_page.h renders it) shows, gathered from
// the rooms that hold it: the open sessions from the registry, the recent judgements and the
// hour's throughput from the store, the calls of the last minute from a CallMeter. Nothing here
// changes state; the page's JSON is assembled here and only rendered there.
//
//   CallMeter calls;  calls.Record(now);           // on every answered call
//   Json page = StatusPageJson({registry, store, calls, Health(), started_at}, now);
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>

#include "common/json.h"
#include "server/session_registry.h"
#include "store/session_store.h"

namespace cuda_agent {

// CallMeter counts the calls answered in the last minute (for the page's rate).
class CallMeter {
 public:
  void Record(double now);
  size_t LastMinute(double now) const;

 private:
  mutable std::mutex mutex_;
  std::deque<double> times_;  // the last minute's calls, oldest first
};

// StatusSources: the rooms the page reads, and /v1/health's JSON.
struct StatusSources {
  const SessionRegistry& sessions;
  SessionStore& store;
  const CallMeter& calls;
  Json health;
  double started_at = 0;  // Unix s
};

inline constexpr size_t kRecentJudgements = 20;
inline constexpr double kThroughputBucketS = 300;
inline constexpr int kThroughputBuckets = 12;

// StatusPageJson: {"health", "now", "sessions": [{"session_id", "status", "task", "device",
// "calls", "turn_limit", "busy", "expires_in_s"}] (the open ones: Live::IsOpen), "recent_grades":
// [{"session_id"|"job_id", "task", "reward", "reason", "at"}] (grades and finished evaluations,
// newest first, at most kRecentJudgements), "throughput": {"bucket_s", "counts": [oldest first]}
// (judgements per 5 minutes over the last hour), "calls_last_minute", "uptime_s"}.
Json StatusPageJson(const StatusSources& sources, double now);

// TaskLabel: a stored task (its JSON text: a reference string, or {"source", "name"?}) as one line.
std::string TaskLabel(const std::string& task_json);

}  // namespace cuda_agent
