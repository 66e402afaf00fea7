// judge_result.h — the verdict on one candidate: reward, where the judge stopped and why, and the
// evidence (compiler errors, mismatches, times, kernels, environment). Machines read ToJson()
// (versioned by schema_version, documented in docs/judge-result.md); agents read ToText().
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

namespace cuda_agent {

inline constexpr int kJudgeSchemaVersion = 1;

// The start of the reason of a judgement without the static rules (JudgeResult::static_skipped).
inline constexpr const char* kStaticSkippedNote =
    "static rules skipped (test only: --test-skip-static), not a verdict; ";

// Stage names where a judgement can stop, in order.
enum class Stage { kTask, kStatic, kBuild, kVerify, kProfile, kDone };
const char* StageName(Stage stage);
Result<Stage> ParseStage(const std::string& name);

// Outcome says whether a verdict was reached or something outside the candidate went wrong.
enum class Outcome {
  kVerdict,        // the candidate was judged (any reward)
  kTaskError,      // the task is malformed or does not run
  kInternalError,  // the judge's own machinery failed (harness missing, no GPU, ...)
};

struct JudgeResult {
  Outcome outcome = Outcome::kVerdict;
  std::optional<int> reward;    // absent when the judgement stopped early on request (--until)
  std::optional<bool> correct;  // absent before verification
  Stage stage = Stage::kStatic;
  std::string reason;
  std::string error_kind;  // short machine word when something failed

  Json task = Json::object();
  Json candidate = Json::object();
  Json policy = Json::object();
  Json build = nullptr;
  Json verify = nullptr;
  Json timing = nullptr;
  Json kernels = Json::array();
  Json violations = Json::array();  // static rules broken: [{rule, file, line, message}]
  Json env = Json::object();
  Json stage_seconds = Json::object();
  // The harness jobs that ran: {name, job, start_s, end_s, go_wait_seconds, phase_seconds,
  // error_kind}.
  Json jobs = Json::array();
  // The device leases the judgement held: {for, mode, asked_s, granted_s, released_s}, seconds
  // since the judgement began, which was at `started_unix_s` (wall clock: judgements of several
  // processes can be laid on one time line).
  Json leases = Json::array();
  double started_unix_s = 0;
  std::string device;
  std::string reward_schedule = "paper";
  // The static rules were skipped (the test-only JudgeOptions::test_skip_static): not a verdict.
  // The reward is then always absent, whatever the candidate did, and the one it would have got
  // is `unofficial_reward`; `correct`, `stage` and `error_kind` say where the run-time checks
  // stopped it.
  bool static_skipped = false;
  std::optional<int> unofficial_reward;

  // Fail records a verdict of −1 at `stage`.
  void Fail(Stage at, std::string kind, std::string why);
  // MarkStaticSkipped turns the result of a judgement without the static rules into a non-verdict:
  // static_skipped, the reward moved to unofficial_reward, the reason prefixed with a warning.
  void MarkStaticSkipped();
  Json ToJson() const;
  // ToText is a short report an agent can act on.
  std::string ToText() const;
  // StageSummary: where the judgement's time went, for logs — "build 1.2 s, verify 2.0 s, lease
  // wait 3.1 s, profile 0.5 s" (the stages that took 0.05 s or more, in pipeline order).
  std::string StageSummary() const;
};

}  // namespace cuda_agent
