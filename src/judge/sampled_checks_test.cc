// sampled_checks_test.cc — the comparison of the sampled checks' fingerprints.
#include "judge/sampled_checks.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

// One sampled check's expected fingerprint: one float32 tensor of shape [4] in two chunks.
Json Expected(double v0, double v1, bool finite1 = true) {
  return {{"signature", "Tensor[float32](4,)"},
          {"tensors",
           {{{"path", "output"},
             {"shape", {4}},
             {"dtype", "float32"},
             {"value", {v0, v1}},
             {"finite", {true, finite1}},
             {"bound", {0.01, 0.01}}}}}};
}

Json Actual(double v0, double v1, bool finite1 = true, const std::string& dtype = "float32") {
  return {{"signature", "Tensor[" + dtype + "](4,)"},
          {"tensors",
           {{{"path", "output"},
             {"shape", {4}},
             {"dtype", dtype},
             {"value", {v0, v1}},
             {"finite", {true, finite1}}}}}};
}

Json Side(std::vector<Json> fingerprints) {
  return {{"count", fingerprints.size()}, {"fingerprints", fingerprints}};
}

TEST(SampledChecks, SumsWithinTheirBoundsAgree) {
  EXPECT_EQ(FirstSampledMismatch(Side({Expected(1.0, 2.0), Expected(3.0, 4.0)}),
                                 Side({Actual(1.005, 2.0), Actual(3.0, 3.991)})),
            std::nullopt);
}

TEST(SampledChecks, AChunkBeyondItsBoundNamesTheCheckAndTheChunk) {
  auto why = FirstSampledMismatch(Side({Expected(1.0, 2.0), Expected(3.0, 4.0)}),
                                  Side({Actual(1.0, 2.0), Actual(3.0, 4.5)}));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("sampled check 2/2"), std::string::npos) << *why;
  EXPECT_NE(why->find("chunk 2 of 2"), std::string::npos) << *why;
}

TEST(SampledChecks, NonFiniteWhereTheReferenceIsFiniteFails) {
  auto why = FirstSampledMismatch(Side({Expected(1.0, 2.0)}), Side({Actual(1.0, 2.0, false)}));
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("NaN or Inf"), std::string::npos) << *why;
}

TEST(SampledChecks, ChunksTheReferenceHasNonFiniteAreLeftToTheFullChecks) {
  EXPECT_EQ(
      FirstSampledMismatch(Side({Expected(1.0, 0.0, false)}), Side({Actual(1.0, 7.0, false)})),
      std::nullopt);
}

TEST(SampledChecks, AnotherDtypeOrCountOrMissingFileFails) {
  EXPECT_TRUE(
      FirstSampledMismatch(Side({Expected(1.0, 2.0)}), Side({Actual(1.0, 2.0, true, "float16")}))
          .has_value());
  EXPECT_TRUE(
      FirstSampledMismatch(Side({Expected(1.0, 2.0), Expected(1.0, 2.0)}), Side({Actual(1.0, 2.0)}))
          .has_value());
  EXPECT_TRUE(FirstSampledMismatch(Side({Expected(1.0, 2.0)}), Json()).has_value());
}

TEST(SampledChecks, NaNSumFails) {
  Json actual = Actual(1.0, 2.0);
  actual["tensors"][0]["value"][0] = nullptr;  // JSON has no NaN: a missing number is one
  EXPECT_TRUE(FirstSampledMismatch(Side({Expected(1.0, 2.0)}), Side({actual})).has_value());
}

}  // namespace
}  // namespace cuda_agent
