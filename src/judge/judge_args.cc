// judge_args.cc — JudgeOptions as judge flags and the time limit of one judgement (judge_args.h).
#include "judge/judge_args.h"

#include <charconv>

namespace cuda_agent {
namespace {

// Number writes the shortest text that reads back as the same double ("0.1", "180").
std::string Number(double value) {
  char text[64];
  auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

}  // namespace

std::vector<std::string> JudgeOptionArgs(const JudgeOptions& options) {
  std::string baselines = options.eager_baseline && options.compile_baseline ? "eager,compile"
                          : options.eager_baseline                           ? "eager"
                          : options.compile_baseline                         ? "compile"
                                                                             : "none";
  std::vector<std::string> args = {"--checks",
                                   std::to_string(options.checks),
                                   "--sampled-checks",
                                   std::to_string(options.sampled_checks),
                                   "--sampled-seconds",
                                   Number(options.sampled_checks_seconds),
                                   "--warmup",
                                   std::to_string(options.warmup),
                                   "--iters",
                                   std::to_string(options.iters),
                                   "--timeout",
                                   Number(options.candidate_timeout_s),
                                   "--task-timeout",
                                   Number(options.trusted_timeout_s),
                                   "--build-timeout",
                                   Number(options.build_timeout_s),
                                   "--build-jobs",
                                   std::to_string(options.build_jobs),
                                   "--baselines",
                                   baselines,
                                   "--reward",
                                   options.reward_schedule,
                                   "--baseline-drift",
                                   Number(options.baseline_drift),
                                   "--baseline-max-age",
                                   Number(options.baseline_max_age_hours)};
  if (!options.use_baseline_store) {
    args.insert(args.end(), {"--baseline-store", "none"});
  } else if (!options.baseline_store.empty()) {
    args.insert(args.end(), {"--baseline-store", fs::absolute(options.baseline_store).string()});
  }
  if (!options.sanitizer.empty()) args.insert(args.end(), {"--sanitize", options.sanitizer});
  if (!options.cache_dir.empty())
    args.insert(args.end(), {"--cache-dir", fs::absolute(options.cache_dir).string()});
  return args;
}

double JudgementTimeLimit(const JudgeOptions& options) {
  return options.build_timeout_s + 3 * options.trusted_timeout_s + 3 * options.candidate_timeout_s +
         60;
}

}  // namespace cuda_agent
