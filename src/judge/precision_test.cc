// precision_test.cc — the policies' tables and the library-kernel name check.
#include "judge/precision.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

TEST(PrecisionTest, PaperIsTheFixedPublishedToleranceWithTorchDefaults) {
  Result<PrecisionPolicy> p = MakePrecisionPolicy("paper");
  ASSERT_TRUE(p.ok());
  Json tol = p->Tolerance();
  EXPECT_EQ(tol["mode"], "fixed");
  EXPECT_EQ(tol["limits"]["default"]["atol"], 1e-2);
  EXPECT_FALSE(tol["limits"]["default"].contains("rnorm"));
  EXPECT_TRUE(p->ToJson()["backend_flags"]["baselines"].is_null());
  EXPECT_FALSE(p->reject_reduced_precision_in_fp32);
  EXPECT_TRUE(p->ToJson().contains("note"));
  EXPECT_TRUE(p->fast_math) << "published candidates were built with --use_fast_math";
}

TEST(PrecisionTest, StrictPinsTf32OffEverywhereAndScales) {
  Result<PrecisionPolicy> p = MakePrecisionPolicy("strict");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Tolerance()["mode"], "scaled");
  for (const char* side : {"reference", "candidate", "baselines"}) {
    EXPECT_EQ(p->ToJson()["backend_flags"][side]["allow_tf32"], false) << side;
  }
  EXPECT_LT(p->limits.at("float32").rnorm.value(), 3e-4)
      << "a TF32 GEMM's relative norm error must fail";
  EXPECT_TRUE(p->reject_reduced_precision_in_fp32);
  EXPECT_FALSE(p->fast_math);
}

TEST(PrecisionTest, Tf32FairGivesTheBaselinesTf32AndLoosensFp32Only) {
  Result<PrecisionPolicy> strict = MakePrecisionPolicy("strict");
  Result<PrecisionPolicy> fair = MakePrecisionPolicy("tf32-fair");
  ASSERT_TRUE(fair.ok());
  EXPECT_TRUE(fair->baselines.allow_tf32);
  EXPECT_FALSE(fair->reference.allow_tf32);
  EXPECT_FALSE(fair->candidate.allow_tf32);
  EXPECT_GT(fair->limits.at("float32").rnorm.value(), 3e-4);
  EXPECT_EQ(fair->limits.at("float16").rtol, strict->limits.at("float16").rtol);
  EXPECT_FALSE(fair->reject_reduced_precision_in_fp32);
}

TEST(PrecisionTest, KernelbenchIsKernelBenchsToleranceWithTorchComputeAllowed) {
  Result<PrecisionPolicy> p = MakePrecisionPolicy("kernelbench");
  ASSERT_TRUE(p.ok());
  Json tol = p->Tolerance();
  EXPECT_EQ(tol["mode"], "fixed") << "KernelBench compares with torch.allclose";
  EXPECT_EQ(tol["limits"]["float32"]["atol"], 1e-4);
  EXPECT_EQ(tol["limits"]["float32"]["rtol"], 1e-4);
  EXPECT_EQ(tol["limits"]["float16"]["atol"], 1e-2);
  EXPECT_EQ(tol["limits"]["bfloat16"]["rtol"], 1e-2);
  EXPECT_FALSE(tol["limits"]["float32"].contains("rnorm"));
  for (const char* side : {"reference", "candidate", "baselines"}) {
    EXPECT_EQ(p->ToJson()["backend_flags"][side]["allow_tf32"], false) << side;
  }
  EXPECT_TRUE(p->rules.torch_compute);
  EXPECT_EQ(p->ToJson()["rules"]["torch_compute"], true);
  EXPECT_TRUE(p->rules.weights_by_position);
  EXPECT_EQ(p->ToJson()["rules"]["weights_by_position"], true);
  EXPECT_TRUE(p->reject_reduced_precision_in_fp32) << "TF32 is a backend switch";
  EXPECT_FALSE(p->fast_math);
  for (const char* other : {"paper", "strict", "tf32-fair"}) {
    EXPECT_FALSE(MakePrecisionPolicy(other)->rules.torch_compute) << other;
    EXPECT_FALSE(MakePrecisionPolicy(other)->rules.weights_by_position) << other;
  }
}

TEST(PrecisionTest, UnknownPolicyIsRefusedWithTheChoices) {
  Result<PrecisionPolicy> p = MakePrecisionPolicy("loose");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("paper, strict, tf32-fair, kernelbench"), std::string::npos);
}

}  // namespace
}  // namespace cuda_agent
