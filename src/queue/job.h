// job.h — a judge job as it travels through Redis (docs/scaling.md, "The queue"): a JudgeRequest
// made self-contained and versioned (task source, candidate files, the options that travel), its
// content-hashed id, the Redis keys of one deployment, and the JudgeResult read back from JSON.
//
//   Result<JudgeJob> job = MakeJob(request);              // at the submitter
//   std::string text = job->ToJson().dump();              // XADD ... job <text>
//   Result<JudgeJob> back = JobFromJson(ParseJson(text, "job").value());   // at the worker
//   JudgeRequest again = back->Request(local_options);
#pragma once

#include <string>

#include "common/device.h"
#include "common/json.h"
#include "judge/judge_service.h"

namespace cuda_agent {

inline constexpr int kJobVersion = 1;

// QueueKeys names every key of one deployment. A device has its own stream, so a CPU worker never
// receives a CUDA job.
struct QueueKeys {
  static std::string Stream(Device device);      // cuda-agent:jobs:<device>
  static std::string DeadLetter(Device device);  // cuda-agent:dead:<device>
  static constexpr const char* kGroup = "workers";
  static std::string Result(const std::string& job_id);    // the stored result (SET NX)
  static std::string Done(const std::string& job_id);      // a list pushed once the result is set
  static std::string Attempts(const std::string& job_id);  // hash: last consumer, last error
  static std::string Worker(const std::string& worker);    // hash: heartbeat and consumers (TTL)
  static constexpr const char* kWorkers = "cuda-agent:workers";  // set of worker hash keys
};

struct JudgeJob {
  int version = kJobVersion;
  std::string id;
  Task task;
  Candidate candidate;
  JudgeOptions options;  // only the fields that travel (OptionsToJson); the rest are the worker's
  double submitted_at = 0;  // unix seconds
  // noop: the no-op benchmark mode (`cuda-agent queue bench --noop`): a worker answers the job at
  // once without judging it, so submit → result measures the queue alone. Part of the id.
  bool noop = false;

  Json ToJson() const;
  // Request is the job as a JudgeRequest: the travelling options over `local` (cache folder,
  // baseline store, build jobs, sandbox of the worker host).
  JudgeRequest Request(const JudgeOptions& local) const;
};

// MakeJob builds the job of a request; a workspace-folder request is read into a Candidate value
// (its protected files cannot be checked on another host, so they are checked here first by the
// caller or not at all).
Result<JudgeJob> MakeJob(const JudgeRequest& request);

// JobId: 24 hex digits of SHA-256 over the version, task id and code, candidate hash, the
// travelling options and the no-op mark. Equal requests have equal ids, so a result is judged once
// and shared.
std::string JobId(const Task& task, const Candidate& candidate, const JudgeOptions& options,
                  bool noop = false);

// JobFromJson checks every field and names the first that is missing or wrong.
Result<JudgeJob> JobFromJson(const Json& j);

// OptionsToJson / OptionsFromJson: the JudgeOptions that travel with a job (device, stage, checks,
// timing, timeouts, policy, reward, sanitizer, baseline policy). Fields of the worker host (paths,
// build jobs, sandbox, memory limits) never travel; OptionsFromJson takes them from `local`.
Json OptionsToJson(const JudgeOptions& options);
Result<JudgeOptions> OptionsFromJson(const Json& j, const JudgeOptions& local);

// JudgeResultFromJson reads JudgeResult::ToJson() back.
Result<JudgeResult> JudgeResultFromJson(const Json& j);

// NoopResult is the answer to a no-op job: no reward, error_kind "noop".
JudgeResult NoopResult(Device device);

// FailedResult is an internal-error JudgeResult (a job that could not be judged).
JudgeResult FailedResult(const std::string& kind, const std::string& reason, Device device);

}  // namespace cuda_agent
