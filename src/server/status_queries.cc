// status_queries.cc — the status page's sessions, recent judgements, throughput and call rate.
#include "server/status_queries.h"

namespace cuda_agent {
namespace {

Json ParsedOrNull(const std::string& text) {
  Result<Json> parsed = ParseJson(text, "stored value");
  return parsed.ok() ? parsed.value() : Json(nullptr);
}

}  // namespace

void CallMeter::Record(double now) {
  std::lock_guard<std::mutex> lock(mutex_);
  times_.push_back(now);
  while (!times_.empty() && times_.front() < now - 60) times_.pop_front();
}

size_t CallMeter::LastMinute(double now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (double t : times_) n += t >= now - 60 ? 1 : 0;
  return n;
}

std::string TaskLabel(const std::string& task_json) {
  Json task = ParsedOrNull(task_json);
  if (task.is_string()) return task.get<std::string>();
  if (task.is_object()) return task.value("name", std::string("(inline task)"));
  return task_json;
}

Json StatusPageJson(const StatusSources& sources, double now) {
  Json sessions = Json::array();
  for (const LiveView& s : sources.sessions.Open()) {
    sessions.push_back({{"session_id", s.id},
                        {"status", s.status},
                        {"task", s.task},
                        {"device", s.device},
                        {"calls", s.calls_used},
                        {"turn_limit", s.turn_limit},
                        {"busy", s.busy},
                        {"expires_in_s", s.expires_at - now}});
  }
  Json recent = Json::array();
  if (Result<std::vector<JudgementRow>> rows = sources.store.RecentJudgements(kRecentJudgements);
      rows.ok()) {
    for (const JudgementRow& r : rows.value()) {
      recent.push_back({{r.is_job ? "job_id" : "session_id", r.id},
                        {"task", TaskLabel(r.task)},
                        {"reward", ParsedOrNull(r.reward)},
                        {"reason", r.reason},
                        {"at", r.at}});
    }
  }
  std::vector<int64_t> buckets(kThroughputBuckets, 0);
  if (Result<std::vector<double>> times =
          sources.store.JudgementTimes(now - kThroughputBucketS * kThroughputBuckets);
      times.ok()) {
    for (double at : times.value()) {
      int index = kThroughputBuckets - 1 - static_cast<int>((now - at) / kThroughputBucketS);
      if (index >= 0 && index < kThroughputBuckets) ++buckets[index];
    }
  }
  Json counts = Json::array();
  for (int64_t n : buckets) counts.push_back(n);
  return {{"health", sources.health},
          {"now", now},
          {"sessions", sessions},
          {"recent_grades", recent},
          {"throughput", {{"bucket_s", kThroughputBucketS}, {"counts", counts}}},
          {"calls_last_minute", sources.calls.LastMinute(now)},
          {"uptime_s", now - sources.started_at}};
}

}  // namespace cuda_agent
