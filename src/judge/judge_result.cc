// judge_result.cc — JSON and text renderings of a JudgeResult.
#include "judge/judge_result.h"

#include <cstdio>
#include <sstream>
#include <utility>

namespace cuda_agent {

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kTask:
      return "task";
    case Stage::kStatic:
      return "static";
    case Stage::kBuild:
      return "build";
    case Stage::kVerify:
      return "verify";
    case Stage::kProfile:
      return "profile";
    case Stage::kDone:
      return "done";
  }
  return "unknown";
}

Result<Stage> ParseStage(const std::string& name) {
  for (Stage s : {Stage::kTask, Stage::kStatic, Stage::kBuild, Stage::kVerify, Stage::kProfile,
                  Stage::kDone}) {
    if (name == StageName(s)) return s;
  }
  return InvalidArgument("unknown stage '" + name + "' (expected build, verify or profile)");
}

void JudgeResult::Fail(Stage at, std::string kind, std::string why) {
  outcome = Outcome::kVerdict;
  reward = -1;
  stage = at;
  correct = false;  // a candidate that did not get through the judge did not compute the task
  error_kind = std::move(kind);
  reason = std::move(why);
}

void JudgeResult::MarkStaticSkipped() {
  if (static_skipped) return;
  static_skipped = true;
  unofficial_reward = reward;
  reward.reset();
  reason = std::string(kStaticSkippedNote) + reason;
}

Json JudgeResult::ToJson() const {
  Json j;
  j["schema_version"] = kJudgeSchemaVersion;
  j["reward"] = reward ? Json(*reward) : Json(nullptr);
  j["correct"] = correct ? Json(*correct) : Json(nullptr);
  j["stage"] = StageName(stage);
  j["reason"] = reason;
  j["error_kind"] = error_kind.empty() ? Json(nullptr) : Json(error_kind);
  j["outcome"] = outcome == Outcome::kVerdict     ? "verdict"
                 : outcome == Outcome::kTaskError ? "task_error"
                                                  : "internal_error";
  j["device"] = device;
  j["reward_schedule"] = reward_schedule;
  j["policy"] = policy;
  j["task"] = task;
  j["candidate"] = candidate;
  j["build"] = build;
  j["verify"] = verify;
  j["timing"] = timing;
  j["kernels"] = kernels;
  j["violations"] = violations;
  j["env"] = env;
  j["stage_seconds"] = stage_seconds;
  j["jobs"] = jobs;
  j["leases"] = leases;
  j["started_unix_s"] = started_unix_s;
  j["static_skipped"] = static_skipped;
  if (static_skipped) {
    j["unofficial_reward"] = unofficial_reward ? Json(*unofficial_reward) : Json(nullptr);
  }
  return j;
}

namespace {

std::string Us(const Json& v) {
  if (!v.is_number()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f us", v.get<double>());
  return buf;
}

std::string Ratio(const Json& v) {
  if (!v.is_number()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3fx", v.get<double>());
  return buf;
}

}  // namespace

std::string JudgeResult::StageSummary() const {
  static constexpr std::pair<const char*, const char*> kShown[] = {
      {"static", "static"},
      {"reference", "reference"},
      {"build", "build"},
      {"verify_ready_wait", "verify set-up wait"},
      {"verify", "verify"},
      {"lease_wait", "lease wait"},
      {"profile_ready_wait", "profile set-up wait"},
      {"profile_candidate", "profile"},
      {"profile_baselines", "baselines"},
      {"timed_checks", "timed checks"},
  };
  std::string out;
  for (const auto& [key, label] : kShown) {
    const Json v = stage_seconds.is_object() ? stage_seconds.value(key, Json()) : Json();
    if (!v.is_number() || v.get<double>() < 0.05) continue;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%s %.1f s", out.empty() ? "" : ", ", label, v.get<double>());
    out += buf;
  }
  return out;
}

std::string JudgeResult::ToText() const {
  std::ostringstream s;
  if (static_skipped) {
    s << "NOT A VERDICT: the static rules were skipped (test only); unofficial reward: "
      << (unofficial_reward ? std::to_string(*unofficial_reward) : std::string("none")) << "\n";
  }
  s << "reward: " << (reward ? std::to_string(*reward) : std::string("none (stopped early)"))
    << "   stage: " << StageName(stage) << "   device: " << device << "\n";
  s << "reason: " << reason << "\n";
  if (build.is_object() && build.contains("errors") && !build["errors"].empty()) {
    s << "compiler errors:\n";
    for (const auto& e : build["errors"]) s << "  " << e.value("text", "") << "\n";
  }
  if (violations.size() > 1) {
    s << "static rules broken:\n";
    for (const auto& v : violations) {
      s << "  " << v.value("rule", "") << ": " << v.value("file", "") << ":" << v.value("line", 0)
        << ": " << v.value("message", "") << "\n";
    }
  }
  if (verify.is_object() && verify.contains("checks")) {
    for (const auto& c : verify["checks"]) {
      if (!c.value("ok", true))
        s << "  check " << c.value("index", 0) + 1 << ": " << c.value("reason", "") << "\n";
    }
  }
  if (timing.is_object()) {
    s << "times (" << timing.value("measure", "") << ", median): candidate "
      << Us(timing["candidate"].value("time_us", Json()));
    for (const char* base : {"eager", "compile"}) {
      if (timing.contains(base) && timing[base].is_object()) {
        s << " | " << base << " " << Us(timing[base].value("time_us", Json()));
      }
    }
    s << "\nspeedup: vs eager " << Ratio(timing.value("speedup_vs_eager", Json()))
      << ", vs compile " << Ratio(timing.value("speedup_vs_compile", Json())) << "\n";
  }
  if (kernels.is_array() && !kernels.empty()) {
    s << "kernels:";
    int shown = 0;
    for (const auto& k : kernels) {
      if (shown++ == 5) break;
      s << "\n  " << k.value("name", "?") << " (" << k.value("calls", 0) << " calls, "
        << Us(k.value("total_us", Json())) << ")";
    }
    s << "\n";
  }
  return s.str();
}

}  // namespace cuda_agent
