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

// The candidate's fingerprint of call n (warm-ups first) on input set `set`.
Json Call(int n, int warmup, int set, double v0, double v1) {
  Json a = Actual(v0, v1);
  a["call"] =
      n < warmup ? "warm-up call " + std::to_string(n) : "timed call " + std::to_string(n - warmup);
  a["input_set"] = set;
  return a;
}

// Two warm-up and three timed calls over 3 input sets (sets 0 1 2 0 1), the first 2 fingerprinted.
Json Timed() {
  return {{"input_sets", 3}, {"fingerprints", {Expected(1.0, 2.0), Expected(3.0, 4.0)}}};
}

TEST(TimedFingerprints, EveryCallOnAFingerprintedSetAgrees) {
  Json got = {Call(0, 2, 0, 1.0, 2.0), Call(1, 2, 1, 3.0, 4.0), Call(3, 2, 0, 1.0, 2.0),
              Call(4, 2, 1, 3.0, 4.005)};
  EXPECT_EQ(FirstTimedMismatch(Timed(), got, 2, 3), std::nullopt);
}

TEST(TimedFingerprints, AWrongCallIsNamedWithItsInputSet) {
  Json got = {Call(0, 2, 0, 1.0, 2.0), Call(1, 2, 1, 3.0, 4.0), Call(3, 2, 0, 1.0, 2.5),
              Call(4, 2, 1, 3.0, 4.0)};
  auto why = FirstTimedMismatch(Timed(), got, 2, 3);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("timed call 1 (input set 0)"), std::string::npos) << *why;
  EXPECT_NE(why->find("chunk 2 of 2"), std::string::npos) << *why;
}

TEST(TimedFingerprints, AMissingReorderedOrExtraFingerprintFails) {
  Json missing = {Call(0, 2, 0, 1.0, 2.0), Call(1, 2, 1, 3.0, 4.0), Call(3, 2, 0, 1.0, 2.0)};
  auto why = FirstTimedMismatch(Timed(), missing, 2, 3);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("timed call 2 (input set 1): the candidate's process wrote no fingerprint"),
            std::string::npos)
      << *why;
  // The entries of calls 3 and 4 swapped: each must be the fingerprint of its own call.
  Json swapped = {Call(0, 2, 0, 1.0, 2.0), Call(1, 2, 1, 3.0, 4.0), Call(4, 2, 1, 3.0, 4.0),
                  Call(3, 2, 0, 1.0, 2.0)};
  EXPECT_TRUE(FirstTimedMismatch(Timed(), swapped, 2, 3).has_value());
  Json extra = {Call(0, 2, 0, 1.0, 2.0), Call(1, 2, 1, 3.0, 4.0), Call(3, 2, 0, 1.0, 2.0),
                Call(4, 2, 1, 3.0, 4.0), Call(4, 2, 1, 3.0, 4.0)};
  EXPECT_TRUE(FirstTimedMismatch(Timed(), extra, 2, 3).has_value());
  EXPECT_TRUE(FirstTimedMismatch(Timed(), Json(), 2, 3).has_value());
}

TEST(TimedFingerprints, NoFingerprintedSetsNothingToCompare) {
  EXPECT_EQ(FirstTimedMismatch(Json::object(), Json::array(), 2, 3), std::nullopt);
}

}  // namespace
}  // namespace cuda_agent
