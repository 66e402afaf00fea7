// calibration_drift_test.cc — the drift decision on noisy series of calibration samples, replayed
// as the judge uses it: each judgement adds its sample, decides, and re-measured baselines take the
// level as their new reference. Noise alone (small jitter, large jitter, one-sided load noise like
// the busy 2-core host's, single outliers) never re-measures; a different device or a 2x slowdown
// does on the fourth judgement after the change. The series come from a fixed-seed std::mt19937
// (its sequence is the standard's), so every run sees the same samples.
#include "judge/calibration_drift.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace cuda_agent {
namespace {

// Noise: a uniform number in [0, 1) from the generator's raw output (not a std distribution, whose
// algorithm the standard leaves to the library).
class Noise {
 public:
  explicit Noise(uint32_t seed) : gen_(seed) {}
  double Uniform() { return static_cast<double>(gen_()) / 4294967296.0; }
  // Jitter: a factor in [1 - spread, 1 + spread].
  double Jitter(double spread) { return 1 + spread * (2 * Uniform() - 1); }
  // Normal: Box–Muller.
  double Normal() {
    double u = std::max(Uniform(), 1e-12), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }

 private:
  std::mt19937 gen_;
};

// Replay feeds `samples` to the decision one judgement at a time, starting from baselines stored
// with `reference`, and answers the judgements (0-based) that re-measured.
std::vector<size_t> Replay(double reference, const std::vector<double>& samples, double bound) {
  std::vector<double> history;
  std::vector<size_t> remeasured;
  for (size_t i = 0; i < samples.size(); ++i) {
    history.push_back(samples[i]);
    if (DecideCalibrationDrift(reference, history, bound).drifted) {
      remeasured.push_back(i);
      reference = CalibrationLevel(history);  // what the fresh baselines are stored with
    }
  }
  return remeasured;
}

std::vector<double> Series(size_t n, const std::function<double(size_t)>& sample) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(sample(i));
  return out;
}

TEST(CalibrationDrift, SmallJitterNeverRemeasuresAndASlowdownDoes) {
  Noise noise(1);
  // A GPU's copy: ±4% from one judgement to the next, baselines stored at a level sample.
  std::vector<double> steady = Series(1000, [&](size_t) { return 188 * noise.Jitter(0.04); });
  EXPECT_EQ(Replay(188, steady, 0.10), std::vector<size_t>{});
  // The same device, then 2x slower from judgement 200 on (thermal throttling, a shared GPU).
  std::vector<double> slowed =
      Series(400, [&](size_t i) { return (i < 200 ? 188 : 376) * noise.Jitter(0.04); });
  std::vector<size_t> at = Replay(188, slowed, 0.10);
  ASSERT_EQ(at.size(), 1u);  // once: the re-measured baselines hold the new level
  EXPECT_GE(at[0], 200u);
  EXPECT_LE(at[0],
            203u);  // the third sample at the new level moves the median, the fourth confirms
}

TEST(CalibrationDrift, ADifferentDeviceIsRemeasuredFasterOrSlower) {
  Noise noise(2);
  for (double factor : {0.5, 0.6, 1.7, 3.0}) {
    std::vector<double> moved =
        Series(60, [&](size_t i) { return (i < 30 ? 300 : 300 * factor) * noise.Jitter(0.05); });
    std::vector<size_t> at = Replay(300, moved, 0.10);
    ASSERT_EQ(at.size(), 1u) << factor;
    EXPECT_GE(at[0], 30u) << factor;
    EXPECT_LE(at[0], 33u) << factor;
  }
}

TEST(CalibrationDrift, LargeJitterNeverRemeasures) {
  Noise noise(3);
  // ±30% (the single-sample rule, 10%, re-measured on most judgements of this series)...
  std::vector<double> jittery = Series(2000, [&](size_t) { return 1000 * noise.Jitter(0.30); });
  EXPECT_EQ(Replay(1000, jittery, 0.10), std::vector<size_t>{});
  size_t single_sample_rule = 0;
  for (double s : jittery) single_sample_rule += std::fabs(s / 1000 - 1) > 0.10 ? 1 : 0;
  EXPECT_GT(single_sample_rule, jittery.size() / 2);
  // ... and baselines stored at an unlucky sample (the old rule's reference) re-measure at most
  // once, after which the reference is a level.
  EXPECT_LE(Replay(1300, jittery, 0.10).size(), 1u);
}

TEST(CalibrationDrift, OneSidedLoadLikeABusyHostNeverRemeasures) {
  Noise noise(4);
  // The busy 2-core host: the device's own 700 us, and most samples slowed by the load, by up to
  // ~30x (measured there: 688 to 19973 us for the copy between consecutive runs).
  std::vector<double> busy =
      Series(2000, [&](size_t) { return 700 * std::exp(std::fabs(1.5 * noise.Normal())); });
  EXPECT_EQ(Replay(700 * std::exp(1.0), busy, 0.10), std::vector<size_t>{});
}

TEST(CalibrationDrift, SingleOutliersAndShortBurstsNeverRemeasure) {
  Noise noise(5);
  // A quiet device with every seventh judgement 10x slow (in the first 30 of every 50), and a burst
  // of two 4x slow judgements (at 40 and 41 of every 50): never three slow ones among five.
  std::vector<double> spikes = Series(700, [&](size_t i) {
    double spike = (i % 7 == 3 && i % 50 < 30) ? 10 : (i % 50 == 40 || i % 50 == 41) ? 4 : 1;
    return 250 * spike * noise.Jitter(0.03);
  });
  EXPECT_EQ(Replay(250, spikes, 0.10), std::vector<size_t>{});
}

TEST(CalibrationDrift, TooFewSamplesDecideNothing) {
  CalibrationDrift one = DecideCalibrationDrift(100, {400}, 0.10);
  EXPECT_FALSE(one.drifted);
  EXPECT_TRUE(one.too_few);
  EXPECT_FALSE(DecideCalibrationDrift(100, {400, 400, 400}, 0.10).drifted);
  CalibrationDrift four = DecideCalibrationDrift(100, {400, 400, 400, 400}, 0.10);
  EXPECT_TRUE(four.drifted);
  EXPECT_EQ(four.samples, 4u);
  EXPECT_DOUBLE_EQ(four.level, 400);
  EXPECT_NE(four.Describe("copy_us").find("copy_us calibration moved from 100.00 to 400.00 us"),
            std::string::npos)
      << four.Describe("copy_us");
  // Non-positive samples are not samples; a non-positive reference is nothing to compare with.
  EXPECT_TRUE(DecideCalibrationDrift(100, {400, 0, -1, 400, 400}, 0.10).too_few);
  EXPECT_TRUE(DecideCalibrationDrift(0, {100, 100, 100, 100}, 0.10).drifted);
}

TEST(CalibrationDrift, HysteresisAnEndedBurstAndTheBound) {
  // The median is still high but the newest sample is back: the burst ended, nothing re-measured.
  EXPECT_FALSE(DecideCalibrationDrift(100, {100, 200, 200, 200, 100}, 0.10).drifted);
  EXPECT_TRUE(DecideCalibrationDrift(100, {100, 100, 200, 200, 200}, 0.10).drifted);
  // Within the bound: a steady 8% is not drift at 10%, a steady 12% is.
  EXPECT_FALSE(DecideCalibrationDrift(100, {108, 108, 108, 108, 108}, 0.10).drifted);
  EXPECT_TRUE(DecideCalibrationDrift(100, {112, 112, 112, 112, 112}, 0.10).drifted);
  // --baseline-drift 100 (tests that are about reuse): nothing short of 101x.
  EXPECT_FALSE(DecideCalibrationDrift(100, {5000, 5000, 5000, 5000}, 100).drifted);
  // The level moved only at this judgement (not at the one before): wait for the next.
  EXPECT_FALSE(DecideCalibrationDrift(100, {100, 100, 100, 200, 200, 200}, 0.10).drifted);
  EXPECT_TRUE(DecideCalibrationDrift(100, {100, 100, 100, 200, 200, 200, 200}, 0.10).drifted);
}

}  // namespace
}  // namespace cuda_agent
