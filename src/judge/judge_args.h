// judge_args.h — JudgeOptions as the judge's command-line flags, for whoever runs `cuda-agent
// judge|build` as a process on a session's behalf (the agent's judge gateway), so those commands
// judge with the same timeouts, cache, store and measurement settings as the in-process grade.
// The flag names are the ones `judge` reads (docs/cli.md).
//
//   std::vector<std::string> argv = {binary, "judge", "--candidate", ws, ...};
//   std::vector<std::string> flags = JudgeOptionArgs(options);   // --timeout 180 --checks 5 ...
//   argv.insert(argv.end(), flags.begin(), flags.end());
//   run.timeout_seconds = JudgementTimeLimit(options);
#pragma once

#include <string>
#include <vector>

#include "judge/judge.h"

namespace cuda_agent {

// JudgeOptionArgs renders every option of the table (judge_options.h) except the device, the
// precision policy, the stage (callers name those themselves) and --keep-work: --checks,
// --sampled-checks, --warmup, --timeout, --baselines, --timed-queues, ... Paths are made absolute;
// empty paths and an empty sanitizer are left out (the judge's defaults apply).
std::vector<std::string> JudgeOptionArgs(const JudgeOptions& options);

// JudgementTimeLimit bounds one whole judgement from its per-job timeouts: the compiler, the
// trusted jobs (reference, eager and torch.compile baselines) and the candidate's jobs (verify,
// profile, sanitizer), plus a minute for the rest. A process running a judgement gets this long.
double JudgementTimeLimit(const JudgeOptions& options);

}  // namespace cuda_agent
