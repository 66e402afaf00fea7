// exit_status.h — the process exit statuses every command shares (docs/cli.md): a verdict (any
// reward) is 0, so a trainer never turns an infrastructure failure (4) into a −1 reward.
#pragma once

#include "judge/judge_result.h"

namespace cuda_agent {

inline constexpr int kExitVerdict = 0;
inline constexpr int kExitBuildFailed = 1;  // `cuda-agent build` only
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTaskError = 3;
inline constexpr int kExitInternal = 4;
inline constexpr int kExitLlmUnreachable = 5;  // `solve`: the model answered no request

// ExitStatusFor maps a judgement to the process exit status.
inline int ExitStatusFor(const JudgeResult& result) {
  switch (result.outcome) {
    case Outcome::kVerdict:
      return kExitVerdict;
    case Outcome::kTaskError:
      return kExitTaskError;
    case Outcome::kInternalError:
      return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace cuda_agent
