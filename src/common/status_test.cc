// status_test.cc — Status and Result<T>: codes and text, values and errors, and the Debug-build
// abort of value() on an error Result.
#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace cuda_agent {
namespace {

TEST(StatusTest, OkAndErrorText) {
  EXPECT_TRUE(OkStatus().ok());
  EXPECT_EQ(OkStatus().ToString(), "ok");
  Status s = NotFound("no such task: relu");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not_found: no such task: relu");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDeadlineExceeded), "deadline_exceeded");
}

TEST(ResultTest, HoldsAValueOrAStatus) {
  Result<std::string> good = std::string("kernel");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), "kernel");
  EXPECT_EQ(good->size(), 6u);
  Result<std::string> bad = InvalidArgument("bad flag");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(ResultTest, MovesOutAMoveOnlyValue) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> taken = std::move(r).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 7);
}

TEST(ResultDeathTest, ValueOfAnErrorAbortsInDebugBuilds) {
#ifdef NDEBUG
  GTEST_SKIP() << "the check is compiled only without NDEBUG (Debug builds)";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> bad = Internal("the build failed");
  EXPECT_DEATH((void)bad.value(), "error Result \\(internal: the build failed\\)");
  const Result<int> const_bad = NotFound("x");
  EXPECT_DEATH((void)const_bad.value(), "not_found: x");
  EXPECT_DEATH((void)std::move(bad).value(), "internal");
  Result<std::string> bad_string = Internal("y");
  EXPECT_DEATH((void)bad_string->size(), "internal: y");
#endif
}

}  // namespace
}  // namespace cuda_agent
