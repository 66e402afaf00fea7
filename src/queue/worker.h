// worker.h — `cuda-agent worker`: consumers of a device's job stream in the consumer group
// "workers" (one per GPU, or --consumers N on the CPU), the Streams pattern as Redis documents it:
// XREADGROUP → judge → store the result once (SET NX) → XACK. A dead worker's jobs are taken over
// with XAUTOCLAIM after the visibility timeout (a live worker renews its jobs meanwhile); a job
// delivered max_deliveries times without a result, or malformed, goes to the dead-letter stream
// with the reason, and its waiters get that reason as an internal-error result. Each judgement
// runs in a child process (`judge_command`), so a judgement that crashes or hangs costs one
// attempt, not the worker. Heartbeats and per-consumer state are a hash with a TTL
// (WorkerStates). When Redis goes away, every consumer reconnects with backoff.
//
//   std::atomic<bool> stop{false};          // set by SIGTERM: finish the current job, ack, return
//   WorkerOptions o; o.url = "redis://10.0.0.5:6379/0"; o.device = Device::kCuda;
//   o.gpus = {"0", "1"}; o.judge_command = {"/opt/cuda-agent/bin/cuda-agent", "__judge-job"};
//   Status s = RunWorker(o, stop);          // error at once when Redis is unreachable at start
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/device.h"
#include "common/json.h"
#include "common/status.h"
#include "judge/judge.h"

namespace cuda_agent {

struct WorkerOptions {
  std::string url;
  Device device = Device::kCpu;
  std::vector<std::string> gpus;  // CUDA: one consumer per GPU (its CUDA_VISIBLE_DEVICES)
  int consumers = 1;              // CPU: how many consumers; CUDA: how many per GPU
  std::string name;               // default <host>-<pid>
  double visibility_s = 60;       // a job idle this long in a consumer's hands is taken over
  int max_deliveries = 3;         // then the job goes to the dead-letter stream
  double job_timeout_s = 3600;    // a judgement running longer is killed (one failed attempt)
  double heartbeat_s = 5;         // state hash refresh; it expires after 3 heartbeats
  double result_ttl_s = 3600;     // stored results (shared by equal jobs meanwhile)
  double failed_ttl_s = 600;      // results that only carry a dead-letter reason
  // argv of a judgement; "--job FILE --out FILE" are appended (cuda-agent __judge-job ...).
  std::vector<std::string> judge_command;
  fs::path work_dir;  // job and result files of the judgements (default <cache>/dist)
};

// RunWorker runs the consumers until `stop` is set; then each finishes and acknowledges the job in
// hand. An error Status when Redis is unreachable at start (naming the URL) or the options are
// wrong.
Status RunWorker(const WorkerOptions& options, const std::atomic<bool>& stop);

// WorkerStates reads the live workers' hashes and the queues' lengths, for `/v1/health` and
// `cuda-agent queue status`: {"redis", "workers": [{name, host, pid, device, heartbeat_age_s,
// consumers: [{name, gpu, state, job_id, jobs_done, jobs_failed}]}], "queues": {device:
// {"waiting", "pending", "dead_letter"}}}.
Result<Json> WorkerStates(const std::string& url);

// DeadLetters lists the dead-letter stream of `device`, oldest first, at most `count`: [{entry,
// job_id, reason, deliveries, consumer, failed_at, job}] (job parsed when it is JSON).
Result<Json> DeadLetters(const std::string& url, Device device, int count);

// JudgeJobFile judges the job in `job_file` in this process (InProcessJudge) and writes
// {"result": JudgeResult} to `out_file`; the body of `cuda-agent __judge-job`. `local` gives the
// host's fields (cache folder, baseline store, build jobs). A job marked noop is not judged (the
// no-op benchmark mode of `cuda-agent queue bench --noop`).
Status JudgeJobFile(const fs::path& job_file, const fs::path& out_file, const JudgeOptions& local);

}  // namespace cuda_agent
