// exit_status_test.cc — a judgement's outcome decides the exit status, never its reward.
#include "cli/exit_status.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(ExitStatusTest, OutcomeDecidesTheStatus) {
  JudgeResult r;
  r.outcome = Outcome::kVerdict;
  r.reward = -1;
  EXPECT_EQ(ExitStatusFor(r), kExitVerdict) << "a failed candidate is still a verdict";
  r.outcome = Outcome::kTaskError;
  EXPECT_EQ(ExitStatusFor(r), kExitTaskError);
  r.outcome = Outcome::kInternalError;
  EXPECT_EQ(ExitStatusFor(r), kExitInternal);
}

}  // namespace
}  // namespace cuda_agent
