// metrics_test.cc — the metrics against hand-computed examples: failures, a tie at exactly 5%,
// empty levels, the weighting by tasks per level, both geometric-mean conventions, fast_p.
#include "eval/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cuda_agent {
namespace {

TaskScore Correct(const std::string& name, int level, double cand, double eager, double compile) {
  return {name, level, true, cand, eager, compile};
}
TaskScore Failed(const std::string& name, int level) { return {name, level, false, {}, {}, {}}; }

// One level, four tasks:
//   a  50 us vs eager 100, compile 80   → 2.0×, 1.6×   (faster than both)
//   b  95 us vs eager 100, compile 100  → exactly 5% faster: not "more than 5%"
//   c  failed
//   d 200 us vs eager 100, compile 50   → 0.5×, 0.25×
std::vector<TaskScore> FourTasks() {
  return {Correct("a", 1, 50, 100, 80), Correct("b", 1, 95, 100, 100), Failed("c", 1),
          Correct("d", 1, 200, 100, 50)};
}

TEST(MetricsTest, PassAndFasterRatesAreSharesOfAllTasks) {
  SuiteMetrics m = ComputeMetrics(FourTasks(), {}, {});
  ASSERT_EQ(m.levels.size(), 1u);
  const GroupMetrics& l = m.levels[0];
  EXPECT_EQ(l.tasks, 4);
  EXPECT_EQ(l.correct, 3);
  EXPECT_DOUBLE_EQ(*l.pass_rate, 0.75);
  EXPECT_EQ(l.eager->faster, 1);  // b's tie at exactly 5% does not count
  EXPECT_DOUBLE_EQ(l.eager->faster_rate, 0.25);
  EXPECT_DOUBLE_EQ(l.compile->faster_rate, 0.25);
  EXPECT_EQ(l.eager->with_speedup, 3);
}

TEST(MetricsTest, GeometricMeansInBothConventions) {
  SuiteMetrics m = ComputeMetrics(FourTasks(), {}, {});
  const GroupMetrics& l = m.levels[0];
  const double b = 100.0 / 95.0;
  // Failed task c counts 1.0× over all four tasks; correct-only takes a, b, d.
  EXPECT_NEAR(*l.eager->geomean_all, std::pow(2.0 * b * 1.0 * 0.5, 1.0 / 4), 1e-12);
  EXPECT_NEAR(*l.eager->geomean_correct, std::pow(2.0 * b * 0.5, 1.0 / 3), 1e-12);
  EXPECT_NEAR(*l.compile->geomean_all, std::pow(1.6 * b * 0.25, 1.0 / 4), 1e-12);
  EXPECT_NEAR(*l.compile->geomean_correct, std::pow(1.6 * b * 0.25, 1.0 / 3), 1e-12);
}

// KernelBench's score.fastp over a level: correct and speedup > p, divided by every problem of the
// level (its analysis patches a problem without a result in as failed). Ours is the same number.
TEST(MetricsTest, FastPIsKernelBenchsOverEveryProblemOfTheLevel) {
  std::vector<TaskScore> scores = {{"level1/1_A", 1, true, 50.0, 100.0, 100.0},  // 2.0x
                                   {"level1/2_B", 1, true, 100.0, 90.0, 90.0},   // 0.9x
                                   {"level1/3_C", 1, false, {}, 100.0, 100.0},   // failed
                                   {"level1/4_D", 1, false, {}, {}, {}}};        // missing
  SuiteMetrics m = ComputeMetrics(scores, {1}, {});
  const std::vector<double>& f = m.levels[0].eager->fast_p;  // p = 0, 0.5, 0.8, 1, 1.5, 2
  EXPECT_DOUBLE_EQ(f[0], 0.5);                               // fast_0: the correct share
  EXPECT_DOUBLE_EQ(f[3], 0.25);                              // fast_1
  EXPECT_DOUBLE_EQ(f[5], 0.0);                               // fast_2: 2.0x is not above 2
  EXPECT_DOUBLE_EQ(f[0], *m.levels[0].pass_rate);
}

TEST(MetricsTest, FastPIsStrictlyAboveP) {
  SuiteMetrics m = ComputeMetrics(FourTasks(), {}, {});
  ASSERT_EQ(FastPThresholds(), (std::vector<double>{0, 0.5, 0.8, 1, 1.5, 2}));
  // eager speedups of the correct tasks: 2.0, 1.0526, 0.5 (c failed).
  EXPECT_EQ(m.levels[0].eager->fast_p, (std::vector<double>{0.75, 0.5, 0.5, 0.5, 0.25, 0.0}));
  // compile speedups: 1.6, 1.0526, 0.25.
  EXPECT_EQ(m.levels[0].compile->fast_p, (std::vector<double>{0.75, 0.5, 0.5, 0.5, 0.25, 0.0}));
}

TEST(MetricsTest, JustOverFivePercentCounts) {
  SuiteMetrics m = ComputeMetrics({Correct("a", 0, 94.9, 100, 100), Correct("b", 0, 95, 100, 100),
                                   Correct("c", 0, 95.1, 100, 100)},
                                  {}, {});
  EXPECT_EQ(m.overall.eager->faster, 1);
  EXPECT_EQ(m.overall.compile->faster, 1);
}

TEST(MetricsTest, AllFailedGivesOneTimesAndNoCorrectOnlyMean) {
  SuiteMetrics m = ComputeMetrics({Failed("a", 1), Failed("b", 1)}, {}, {});
  EXPECT_DOUBLE_EQ(*m.overall.pass_rate, 0.0);
  EXPECT_DOUBLE_EQ(*m.overall.eager->geomean_all, 1.0);
  EXPECT_FALSE(m.overall.eager->geomean_correct.has_value());
  EXPECT_DOUBLE_EQ(m.overall.compile->faster_rate, 0.0);
}

TEST(MetricsTest, EmptyLevelsShowWithoutRatesAndWeighNothing) {
  // Level 1: 2 tasks, 4.0× and failed. Level 2: 2 tasks, 1.0× and 1.0×. Level 3 asked for, empty.
  std::vector<TaskScore> scores = {Correct("a", 1, 25, 100, 100), Failed("b", 1),
                                   Correct("c", 2, 100, 100, 100), Correct("d", 2, 100, 100, 100)};
  SuiteMetrics m = ComputeMetrics(scores, {1, 2, 3}, {});
  ASSERT_EQ(m.levels.size(), 3u);
  const GroupMetrics& empty = m.levels[2];
  EXPECT_EQ(empty.level, 3);
  EXPECT_EQ(empty.tasks, 0);
  EXPECT_FALSE(empty.pass_rate.has_value());
  EXPECT_FALSE(empty.eager.has_value());
  EXPECT_EQ(m.overall.tasks, 4);
  EXPECT_DOUBLE_EQ(*m.overall.pass_rate, 0.75);
  EXPECT_DOUBLE_EQ(m.overall.eager->faster_rate, 0.25);
  // geomean_all: level 1 = sqrt(4 · 1) = 2, level 2 = 1; weighted 2:2 → sqrt(2) (= pooled).
  EXPECT_NEAR(*m.levels[0].eager->geomean_all, 2.0, 1e-12);
  EXPECT_NEAR(*m.overall.eager->geomean_all, std::sqrt(2.0), 1e-12);
  // geomean_correct: level 1 = 4, level 2 = 1; weighted by tasks per level 2:2 → 2 (pooling the
  // correct tasks would give the cube root of 4).
  EXPECT_NEAR(*m.overall.eager->geomean_correct, 2.0, 1e-12);
}

TEST(MetricsTest, OverallWeightsLevelsByTheirTasks) {
  // Level 1: 3 tasks all correct at 2×; level 2: 1 task failed. Weighted pass = 3/4, not the mean
  // of the level rates (1/2).
  std::vector<TaskScore> scores = {Correct("a", 1, 50, 100, 100), Correct("b", 1, 50, 100, 100),
                                   Correct("c", 1, 50, 100, 100), Failed("d", 2)};
  SuiteMetrics m = ComputeMetrics(scores, {}, {});
  EXPECT_DOUBLE_EQ(*m.overall.pass_rate, 0.75);
  EXPECT_DOUBLE_EQ(m.overall.compile->faster_rate, 0.75);
  EXPECT_NEAR(*m.overall.compile->geomean_all, std::pow(8.0, 0.25), 1e-12);
  EXPECT_NEAR(*m.overall.compile->geomean_correct, 2.0, 1e-12);  // level 2 has none
  EXPECT_NEAR(m.overall.compile->fast_p[3], 0.75, 1e-12);
}

TEST(MetricsTest, UnmeasuredBaselineIsAbsent) {
  SuiteMetrics m = ComputeMetrics({Correct("a", 0, 50, 100, 0)}, {}, {true, false});
  EXPECT_TRUE(m.overall.eager.has_value());
  EXPECT_FALSE(m.overall.compile.has_value());
  Json j = MetricsToJson(m);
  EXPECT_TRUE(j["overall"]["compile"].is_null());
  EXPECT_EQ(j["overall"]["level"], "overall");
  EXPECT_DOUBLE_EQ(j["overall"]["eager"]["fast_p"]["1"].get<double>(), 1.0);
}

TEST(MetricsTest, EmptySuite) {
  SuiteMetrics m = ComputeMetrics({}, {1}, {});
  EXPECT_EQ(m.overall.tasks, 0);
  EXPECT_FALSE(m.overall.pass_rate.has_value());
  EXPECT_FALSE(m.overall.eager.has_value());
  EXPECT_TRUE(MetricsToJson(m)["overall"]["pass_rate"].is_null());
}

TEST(MetricsTest, CorrectWithoutATimeHasNoSpeedup) {
  TaskScore s = Correct("a", 0, 0, 100, 100);
  EXPECT_FALSE(Speedup(s, Baseline::kEager).has_value());
  s.candidate_us = 50;
  EXPECT_DOUBLE_EQ(*Speedup(s, Baseline::kEager), 2.0);
  s.correct = false;
  EXPECT_FALSE(Speedup(s, Baseline::kCompile).has_value());
}

}  // namespace
}  // namespace cuda_agent
