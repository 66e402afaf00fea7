// judge_args.cc — JudgeOptions as judge flags and the time limit of one judgement (judge_args.h).
#include "judge/judge_args.h"

namespace cuda_agent {

std::vector<std::string> JudgeOptionArgs(const JudgeOptions& options) {
  std::vector<std::string> args;
  for (const JudgeOptionField& f : JudgeOptionTable()) {
    const std::string flag = f.flag;
    if (flag == "device" || flag == "until" || flag == "policy" || f.kind == OptionKind::kSwitch)
      continue;
    std::string text = JudgeOptionText(options, flag);
    if (text.empty()) continue;  // an empty path or no sanitizer: the judge's default
    if ((flag == "cache-dir" || flag == "baseline-store") && text != "none")
      text = fs::absolute(text).string();
    args.insert(args.end(), {"--" + flag, text});
  }
  return args;
}

double JudgementTimeLimit(const JudgeOptions& options) {
  return options.build_timeout_s + 3 * options.trusted_timeout_s + 3 * options.candidate_timeout_s +
         60;
}

}  // namespace cuda_agent
