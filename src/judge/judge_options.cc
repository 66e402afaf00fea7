// judge_options.cc — the option table of a judgement (judge_options.h): one row per option, with
// the code that reads and writes it.
#include "judge/judge_options.h"

#include <charconv>
#include <cmath>
#include <functional>

#include "judge/reward.h"

namespace cuda_agent {
namespace {

// Number writes the shortest text that reads back as the same double ("0.1", "180").
std::string Number(double value) {
  char text[64];
  auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

Status Bad(const std::string& flag, const std::string& text, const std::string& accepts) {
  return InvalidArgument("--" + flag + " expects " + accepts + ", got '" + text + "'");
}

// IntIn / NumberIn parse the whole of `text` and check its range.
Result<int> IntIn(const std::string& flag, const std::string& text, int low, int high) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low ||
      value > high) {
    return Bad(flag, text,
               "an integer from " + std::to_string(low) + " to " + std::to_string(high));
  }
  return value;
}

Result<double> NumberIn(const std::string& flag, const std::string& text, double low,
                        bool low_allowed) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < low ||
      (!low_allowed && value == low)) {
    return Bad(flag, text, std::string("a number ") + (low_allowed ? ">= " : "> ") + Number(low));
  }
  return value;
}

Result<bool> OnOff(const std::string& flag, const std::string& text) {
  if (text == "on" || text == "1" || text == "true") return true;
  if (text == "off" || text == "0" || text == "false") return false;
  return Bad(flag, text, "on or off");
}

const char* OnOffText(bool on) { return on ? "on" : "off"; }

struct Row {
  JudgeOptionField field;
  std::function<std::string(const JudgeOptions&)> get;
  std::function<Status(JudgeOptions&, const std::string&)> set;
};

// An int or number option bound to a field of JudgeOptions.
Row IntRow(JudgeOptionField field, int JudgeOptions::*member, int low, int high) {
  return {field, [member](const JudgeOptions& o) { return std::to_string(o.*member); },
          [field, member, low, high](JudgeOptions& o, const std::string& text) -> Status {
            Result<int> v = IntIn(field.flag, text, low, high);
            if (!v.ok()) return v.status();
            o.*member = v.value();
            return OkStatus();
          }};
}

Row NumberRow(JudgeOptionField field, double JudgeOptions::*member, bool zero_allowed) {
  return {field, [member](const JudgeOptions& o) { return Number(o.*member); },
          [field, member, zero_allowed](JudgeOptions& o, const std::string& text) -> Status {
            Result<double> v = NumberIn(field.flag, text, 0, zero_allowed);
            if (!v.ok()) return v.status();
            o.*member = v.value();
            return OkStatus();
          }};
}

Row OnOffRow(JudgeOptionField field, bool JudgeOptions::*member) {
  return {field, [member](const JudgeOptions& o) { return std::string(OnOffText(o.*member)); },
          [field, member](JudgeOptions& o, const std::string& text) -> Status {
            Result<bool> v = OnOff(field.flag, text);
            if (!v.ok()) return v.status();
            o.*member = v.value();
            return OkStatus();
          }};
}

const std::vector<Row>& Rows() {
  using K = OptionKind;
  static const std::vector<Row> rows = {
      {{"device", "device", K::kText, "cuda or cpu"},
       [](const JudgeOptions& o) { return std::string(DeviceName(o.device)); },
       [](JudgeOptions& o, const std::string& text) -> Status {
         Result<Device> d = ParseDevice(text);
         if (!d.ok()) return d.status();
         o.device = d.value();
         return OkStatus();
       }},
      {{"until", "until", K::kText, "stop after: build, verify or profile"},
       [](const JudgeOptions& o) {
         return std::string(o.until == Stage::kDone ? "profile" : StageName(o.until));
       },
       [](JudgeOptions& o, const std::string& text) -> Status {
         Result<Stage> stage = ParseStage(text == "profile" ? "done" : text);
         if (!stage.ok() || (stage.value() != Stage::kBuild && stage.value() != Stage::kVerify &&
                             stage.value() != Stage::kDone)) {
           return Bad("until", text, "build, verify or profile");
         }
         o.until = stage.value();
         return OkStatus();
       }},
      {{"baselines", "baselines", K::kText,
        "baselines to time: eager,compile | eager | compile | none"},
       [](const JudgeOptions& o) {
         return std::string(o.eager_baseline && o.compile_baseline ? "eager,compile"
                            : o.eager_baseline                     ? "eager"
                            : o.compile_baseline                   ? "compile"
                                                                   : "none");
       },
       [](JudgeOptions& o, const std::string& text) -> Status {
         if (text != "eager,compile" && text != "compile,eager" && text != "eager" &&
             text != "compile" && text != "none") {
           return Bad("baselines", text, "eager,compile | eager | compile | none");
         }
         o.eager_baseline = text.find("eager") != std::string::npos;
         o.compile_baseline = text.find("compile") != std::string::npos;
         return OkStatus();
       }},
      IntRow({"checks", "checks", K::kInt, "verification input sets"}, &JudgeOptions::checks, 1,
             100000),
      IntRow({"sampled-checks", "sampled_checks", K::kInt,
              "most fingerprinted input sets (the timed calls', then fresh ones; flaky kernels; 0: "
              "none)"},
             &JudgeOptions::sampled_checks, 0, 10000),
      IntRow({"sampled-min", "sampled_min", K::kInt,
              "fewest fingerprinted input sets, whatever their time"},
             &JudgeOptions::sampled_min, 0, 10000),
      NumberRow({"sampled-seconds", "sampled_checks_seconds", K::kNumber,
                 "the reference's time for fingerprinted sets beyond --sampled-min"},
                &JudgeOptions::sampled_checks_seconds, /*zero_allowed=*/true),
      IntRow({"warmup", "warmup", K::kInt, "warm-up calls before timing"}, &JudgeOptions::warmup, 0,
             100000),
      IntRow({"iters", "iters", K::kInt, "timed calls"}, &JudgeOptions::iters, 1, 100000),
      NumberRow({"timeout", "candidate_timeout_s", K::kNumber,
                 "seconds for each process that runs candidate code"},
                &JudgeOptions::candidate_timeout_s, false),
      NumberRow({"task-timeout", "trusted_timeout_s", K::kNumber,
                 "seconds for reference and baseline processes"},
                &JudgeOptions::trusted_timeout_s, false),
      NumberRow(
          {"build-timeout", "build_timeout_s", K::kNumber, "seconds for each compiler invocation"},
          &JudgeOptions::build_timeout_s, false),
      IntRow({"build-jobs", "", K::kInt, "parallel compilations (0: all CPUs)"},
             &JudgeOptions::build_jobs, 0, 4096),
      {{"reward", "reward_schedule", K::kText, "reward schedule (docs/judge-result.md)"},
       [](const JudgeOptions& o) { return o.reward_schedule; },
       [](JudgeOptions& o, const std::string& text) -> Status {
         if (MakeRewardSchedule(text) == nullptr) return Bad("reward", text, "a reward schedule");
         o.reward_schedule = text;
         return OkStatus();
       }},
      {{"policy", "policy", K::kText,
        "precision policy: strict | tf32-fair | paper | kernelbench (docs/policies.md)"},
       [](const JudgeOptions& o) { return o.policy.name; },
       [](JudgeOptions& o, const std::string& text) -> Status {
         Result<PrecisionPolicy> p = MakePrecisionPolicy(text);
         if (!p.ok()) return InvalidArgument("--policy: " + p.status().message());
         o.policy = std::move(p).value();
         return OkStatus();
       }},
      {{"baseline-store", "", K::kText,
        "SQLite file of stored baseline times, or none (default: <cache-dir>/store.sqlite)"},
       [](const JudgeOptions& o) {
         return o.use_baseline_store ? o.baseline_store.string() : std::string("none");
       },
       [](JudgeOptions& o, const std::string& text) -> Status {
         o.use_baseline_store = text != "none";
         o.baseline_store = o.use_baseline_store ? fs::path(text) : fs::path();
         return OkStatus();
       }},
      NumberRow({"baseline-drift", "baseline_drift", K::kNumber,
                 "relative change of the device calibration that re-measures stored baselines"},
                &JudgeOptions::baseline_drift, false),
      NumberRow({"baseline-max-age", "baseline_max_age_hours", K::kNumber,
                 "hours after which stored baselines are re-measured (0: never)"},
                &JudgeOptions::baseline_max_age_hours, true),
      {{"sanitize", "sanitizer", K::kText,
        "CUDA: rerun check 1 under compute-sanitizer: memcheck | racecheck | initcheck | "
        "synccheck"},
       [](const JudgeOptions& o) { return o.sanitizer; },
       [](JudgeOptions& o, const std::string& text) -> Status {
         if (!text.empty() && text != "memcheck" && text != "racecheck" && text != "initcheck" &&
             text != "synccheck") {
           return Bad("sanitize", text, "memcheck, racecheck, initcheck or synccheck");
         }
         o.sanitizer = text;
         return OkStatus();
       }},
      {{"cache-dir", "", K::kText, "objects, toolchain and work folders"},
       [](const JudgeOptions& o) { return o.cache_dir.string(); },
       [](JudgeOptions& o, const std::string& text) -> Status {
         o.cache_dir = text;
         return OkStatus();
       }},
      {{"keep-work", "", K::kSwitch, "keep the judgement's work folder"},
       [](const JudgeOptions& o) { return std::string(o.keep_work ? "1" : ""); },
       [](JudgeOptions& o, const std::string& text) -> Status {
         o.keep_work = !text.empty() && text != "0";
         return OkStatus();
       }},
      IntRow({"timed-queues", "timed_queues", K::kInt,
              "hardware queues of a timed job's CUDA context (0: the driver's eight)"},
             &JudgeOptions::timed_queues, 0, 32),
      {{"profile-standby", "profile_standby", K::kText,
        "standby profile jobs: auto (on for cuda) | on | off"},
       [](const JudgeOptions& o) {
         return std::string(o.standby == StandbyMode::kAuto ? "auto"
                            : o.standby == StandbyMode::kOn ? "on"
                                                            : "off");
       },
       [](JudgeOptions& o, const std::string& text) -> Status {
         if (text == "auto") {
           o.standby = StandbyMode::kAuto;
           return OkStatus();
         }
         Result<bool> on = OnOff("profile-standby", text);
         if (!on.ok()) return Bad("profile-standby", text, "auto, on or off");
         o.standby = on.value() ? StandbyMode::kOn : StandbyMode::kOff;
         return OkStatus();
       }},
      OnOffRow({"keep-reference", "keep_reference", K::kOnOff,
                "keep a task's reference process for its next judgements"},
               &JudgeOptions::keep_reference),
      NumberRow({"keep-reference-idle", "keep_reference_idle_s", K::kNumber,
                 "seconds a kept reference waits unclaimed"},
                &JudgeOptions::keep_reference_idle_s, false),
      IntRow({"keep-reference-max", "keep_reference_max", K::kInt,
              "kept references that may wait at once per device"},
             &JudgeOptions::keep_reference_max, 1, 1024),
      {{"binding-clang", "", K::kText,
        "clang++ for binding files: auto (newest on PATH) | off (g++ only) | PATH"},
       [](const JudgeOptions& o) { return o.binding_clang; },
       [](JudgeOptions& o, const std::string& text) -> Status {
         if (text.empty()) return Bad("binding-clang", text, "auto, off or a path");
         o.binding_clang = text == "0" ? "off" : text;
         return OkStatus();
       }},
      {{"lease-gather", "", K::kText,
        "K,T: busy-device timings gather into batches of K or after T seconds (off)"},
       [](const JudgeOptions& o) {
         return o.lease_gather.on() ? std::to_string(o.lease_gather.timings) + "," +
                                          Number(o.lease_gather.max_wait_s)
                                    : std::string("off");
       },
       [](JudgeOptions& o, const std::string& text) -> Status {
         Result<LeaseGather> g = ParseLeaseGather(text == "off" ? "" : text);
         if (!g.ok()) return g.status();
         o.lease_gather = g.value();
         return OkStatus();
       }},
  };
  return rows;
}

const Row* FindRow(const std::string& flag) {
  for (const Row& row : Rows()) {
    if (flag == row.field.flag) return &row;
  }
  return nullptr;
}

}  // namespace

const std::vector<JudgeOptionField>& JudgeOptionTable() {
  static const std::vector<JudgeOptionField> table = [] {
    std::vector<JudgeOptionField> fields;
    for (const Row& row : Rows()) fields.push_back(row.field);
    return fields;
  }();
  return table;
}

Status SetJudgeOption(JudgeOptions& options, const std::string& flag, const std::string& text) {
  const Row* row = FindRow(flag);
  if (row == nullptr) return InvalidArgument("no judge option --" + flag);
  return row->set(options, text);
}

std::string JudgeOptionText(const JudgeOptions& options, const std::string& flag) {
  const Row* row = FindRow(flag);
  return row == nullptr ? std::string() : row->get(options);
}

bool StandbyWanted(const JudgeOptions& options) {
  return options.standby == StandbyMode::kAuto ? options.device == Device::kCuda
                                               : options.standby == StandbyMode::kOn;
}

}  // namespace cuda_agent
