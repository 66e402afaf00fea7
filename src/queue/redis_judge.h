// redis_judge.h — a JudgeService whose judgements run on `cuda-agent worker` hosts: Evaluate turns
// the request into a job (queue/job.h), XADDs it to its device's stream and waits for the result
// that a worker stores once per job id. Safe to call from several threads (a connection each).
// When Redis goes away, submitting and waiting reconnect with backoff; a job lost with Redis (not
// in the stream, no result) is submitted again.
//
//   Result<std::unique_ptr<RedisJudge>> judge = RedisJudge::Connect({.url = "redis://10.0.0.5/0"});
//   if (!judge.ok()) Fail(judge.status());         // names the URL; does not hang
//   JudgeResult r = (*judge)->Evaluate(request);    // same contract as InProcessJudge
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "judge/judge_service.h"
#include "queue/redis_client.h"

namespace cuda_agent {

struct RedisJudgeOptions {
  std::string url;             // redis://host:port/db
  double wait_seconds = 7200;  // how long Evaluate waits for a result, reconnects included
  double poll_seconds = 1.0;   // how long one blocking wait for the notification lasts
  // The no-op benchmark mode (`cuda-agent queue bench --noop`): every job is marked noop and
  // workers answer it without judging, so Evaluate measures the queue alone. Never for real use.
  bool noop_benchmark = false;
};

class RedisJudge : public JudgeService {
 public:
  // Connect parses the URL and checks once that Redis answers (PING); a clear error otherwise.
  static Result<std::unique_ptr<RedisJudge>> Connect(RedisJudgeOptions options);

  JudgeResult Evaluate(const JudgeRequest& request) override;
  std::string Describe() const override { return url_.text; }

 private:
  RedisJudge(RedisJudgeOptions options, RedisUrl url)
      : options_(std::move(options)), url_(std::move(url)) {}
  std::unique_ptr<RedisClient> Take();
  void Give(std::unique_ptr<RedisClient> client);

  RedisJudgeOptions options_;
  RedisUrl url_;
  std::mutex mu_;
  std::vector<std::unique_ptr<RedisClient>> idle_;  // connections not in use
};

// SubmitJob adds a job's JSON to its stream unless a result for its id is stored already; the
// stream entry's id, or "" when the result was there. For RedisJudge and the queue benchmark.
Result<std::string> SubmitJob(RedisClient& redis, const std::string& job_id, Device device,
                              const std::string& job_json, RedisClient::Clock::time_point deadline);

// PollResult looks once for the stored result of `job_id` and, when there is none yet, blocks up to
// `poll_seconds` on its notification list; the result's JSON ({"result": JudgeResult, "worker",
// ...}), or null when it is not there yet.
Result<Json> PollResult(RedisClient& redis, const std::string& job_id, double poll_seconds,
                        RedisClient::Clock::time_point deadline);

}  // namespace cuda_agent
