// redis_judge.cc — submitting a job to Redis and waiting for its result.
#include "queue/redis_judge.h"

#include "common/log.h"
#include "queue/job.h"
#include "workspace/workspace.h"

namespace cuda_agent {
namespace {

using Clock = RedisClient::Clock;

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

Result<std::string> SubmitJob(RedisClient& redis, const std::string& job_id, Device device,
                              const std::string& job_json, Clock::time_point deadline) {
  Result<RedisReply> have = redis.Call({"EXISTS", QueueKeys::Result(job_id)}, deadline);
  if (!have.ok()) return have.status();
  if (have->integer == 1) return std::string();
  Result<RedisReply> added =
      redis.Call({"XADD", QueueKeys::Stream(device), "*", "id", job_id, "job", job_json}, deadline);
  if (!added.ok()) return added.status();
  if (added->kind != RedisReply::Kind::kString)
    return Internal("XADD to " + QueueKeys::Stream(device) +
                    " failed: " + ReplyText(added.value()));
  return added->str;
}

Result<Json> PollResult(RedisClient& redis, const std::string& job_id, double poll_seconds,
                        Clock::time_point deadline) {
  for (int look = 0; look < 2; ++look) {
    Result<RedisReply> got = redis.Call({"GET", QueueKeys::Result(job_id)}, deadline);
    if (!got.ok()) return got.status();
    if (got->kind == RedisReply::Kind::kString) {
      Result<Json> parsed = ParseJson(got->str, "the stored result of job " + job_id);
      if (!parsed.ok()) return parsed.status();
      return parsed;
    }
    if (look == 1) break;
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.3f", poll_seconds);
    Result<RedisReply> woke =
        redis.Call({"BLPOP", QueueKeys::Done(job_id), seconds}, deadline, poll_seconds + 5);
    if (!woke.ok()) return woke.status();
    if (woke->nil()) break;  // nothing within poll_seconds
  }
  return Json(nullptr);
}

Result<std::unique_ptr<RedisJudge>> RedisJudge::Connect(RedisJudgeOptions options) {
  Result<RedisUrl> url = ParseRedisUrl(options.url);
  if (!url.ok()) return url.status();
  RedisClient probe(url.value());
  if (Status s = probe.Connect(); !s.ok()) return s;
  Result<RedisReply> pong = probe.Call({"PING"}, Clock::now());
  if (!pong.ok()) return pong.status();
  if (pong->error())
    return FailedPrecondition("Redis at " + url->text + " refused PING: " + pong->str);
  std::unique_ptr<RedisJudge> judge(new RedisJudge(std::move(options), url.value()));
  return judge;
}

std::unique_ptr<RedisClient> RedisJudge::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.empty()) return std::make_unique<RedisClient>(url_);
  std::unique_ptr<RedisClient> c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void RedisJudge::Give(std::unique_ptr<RedisClient> client) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(client));
}

JudgeResult RedisJudge::Evaluate(const JudgeRequest& request) {
  Device device = request.options.device;
  // A workspace's protected files can only be checked where the workspace is: here.
  if (!request.workspace.empty() &&
      fs::exists(request.workspace / ".cuda-agent" / "workspace.json")) {
    if (Status intact = VerifyProtectedFiles(request.workspace); !intact.ok()) {
      JudgeResult r;
      r.device = DeviceName(device);
      r.Fail(Stage::kStatic, "tampering", intact.message());
      return r;
    }
  }
  Result<JudgeJob> job = MakeJob(request);
  if (!job.ok()) {
    JudgeResult r;
    r.device = DeviceName(device);
    r.Fail(Stage::kStatic, "candidate", "candidate: " + job.status().message());
    return r;
  }
  if (options_.noop_benchmark) {
    job->noop = true;
    job->id = JobId(job->task, job->candidate, job->options, /*noop=*/true);
  }
  const std::string job_json = job->ToJson().dump();
  const Clock::time_point deadline = After(options_.wait_seconds);
  std::unique_ptr<RedisClient> redis = Take();
  auto unreachable = [&](const Status& s) {
    return FailedResult("queue",
                        "internal error: no result for job " + job->id + " from " + url_.text +
                            " within " + std::to_string(static_cast<int>(options_.wait_seconds)) +
                            " s: " + s.message(),
                        device);
  };
  Result<std::string> entry = SubmitJob(*redis, job->id, device, job_json, deadline);
  if (!entry.ok()) return unreachable(entry.status());
  int reconnects = redis->reconnects();
  while (true) {
    Result<Json> stored = PollResult(*redis, job->id, options_.poll_seconds, deadline);
    if (!stored.ok()) return unreachable(stored.status());
    if (!stored->is_null()) {
      Give(std::move(redis));
      Result<JudgeResult> r = JudgeResultFromJson(stored->value("result", Json()));
      if (!r.ok())
        return FailedResult("queue",
                            "internal error: the stored result of job " + job->id +
                                " is unreadable: " + r.status().message(),
                            device);
      r->env["queue"] = {{"redis", url_.text},
                         {"job_id", job->id},
                         {"worker", stored->value("worker", "")},
                         {"consumer", stored->value("consumer", "")},
                         {"deliveries", stored->value("deliveries", 0)}};
      return std::move(r).value();
    }
    if (Clock::now() >= deadline) return unreachable(DeadlineExceeded("timed out"));
    // After Redis came back, the job may have been lost with it (not yet in its append-only
    // file): its entry is gone from the stream and no result was stored. Submit it again.
    if (redis->reconnects() != reconnects && !entry->empty()) {
      reconnects = redis->reconnects();
      Result<RedisReply> still = redis->Call(
          {"XRANGE", QueueKeys::Stream(device), entry.value(), entry.value()}, deadline);
      if (!still.ok()) return unreachable(still.status());
      if (still->array() && still->elements.empty()) {
        Result<RedisReply> have = redis->Call({"EXISTS", QueueKeys::Result(job->id)}, deadline);
        if (!have.ok()) return unreachable(have.status());
        if (have->integer == 0) {
          LogWarn("job " + job->id + " was lost by Redis at " + url_.text + "; submitting again");
          entry = SubmitJob(*redis, job->id, device, job_json, deadline);
          if (!entry.ok()) return unreachable(entry.status());
        }
      }
    }
  }
}

}  // namespace cuda_agent
