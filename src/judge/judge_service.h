// judge_service.h — how the rest of the system asks for a judgement without knowing where it runs.
// A JudgeRequest is self-contained (the task's source, the candidate's files, the options), so it
// can be judged in this process (InProcessJudge, the default on one host) or carried to a worker
// host by a queue (issue 20). The agent's session, `solve`, `bench` and `serve` all take a
// JudgeService&; none of them builds a judge command line.
//
//   InProcessJudge judge(env);
//   JudgeResult r = judge.Evaluate({.task = task, .candidate = candidate, .options = options});
#pragma once

#include <string>

#include "judge/judge.h"
#include "workspace/candidate.h"

namespace cuda_agent {

struct JudgeRequest {
  Task task;
  Candidate candidate;
  JudgeOptions options;
  // A workspace folder whose protected files (utils/, binding files, model.py) are checked against
  // the hashes recorded at `workspace init`; empty for candidates that arrive as data. With an
  // empty `candidate`, the candidate is read from this folder.
  fs::path workspace;
};

class JudgeService {
 public:
  virtual ~JudgeService() = default;
  // Evaluate judges one request. Never throws; every failure is a JudgeResult with a reason
  // (Outcome::kInternalError when the machinery, not the candidate, failed).
  virtual JudgeResult Evaluate(const JudgeRequest& request) = 0;
  // Describe names where judgements run ("in-process", "redis://host:6379/0"), for logs and health.
  virtual std::string Describe() const = 0;
};

// InProcessJudge runs the pipeline in this process (its harness jobs are child processes as
// always). Safe to call from several threads at once.
class InProcessJudge : public JudgeService {
 public:
  explicit InProcessJudge(HarnessEnv env) : judge_(std::move(env)) {}
  JudgeResult Evaluate(const JudgeRequest& request) override;
  std::string Describe() const override { return "in-process"; }

 private:
  Judge judge_;
};

}  // namespace cuda_agent
