// ncu_report_test.cc — the raw-CSV parser on the constructed fixture (tests/ncu/fixtures/), unit
// scaling, the candidate-only filter, the bound/hint rules at their thresholds, the roofline and
// the renderings.
#include "ncu/ncu_report.h"

#include <gtest/gtest.h>

#include "common/fs.h"

namespace cuda_agent {
namespace {

constexpr const char* kOwnMangled = "_Z22relu_scale_vec4_kernelPK6float4PS_lf";

std::string Fixture(const std::string& name) {
  Result<std::string> text =
      ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "tests" / "ncu" / "fixtures" / name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? text.value() : "";
}

NcuReport AnalyzeFixture(const std::set<std::string>& own) {
  Result<NcuCsv> csv = ParseNcuRawCsv(Fixture("ncu_constructed_relu_scale.csv"));
  EXPECT_TRUE(csv.ok()) << csv.status().ToString();
  NcuReport report;
  if (csv.ok()) AnalyzeLaunches(csv->launches, own, &report);
  return report;
}

TEST(NcuReport, ParsesTheConstructedRawPage) {
  Result<NcuCsv> csv = ParseNcuRawCsv(Fixture("ncu_constructed_relu_scale.csv"));
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  EXPECT_TRUE(csv->header_found);
  EXPECT_TRUE(csv->errors.empty());
  ASSERT_EQ(csv->launches.size(), 2u);
  const NcuLaunch& own = csv->launches[1];
  EXPECT_EQ(own.id, 1);
  EXPECT_EQ(own.name, kOwnMangled);
  // Base units: nanoseconds become seconds; thousands separators are read.
  EXPECT_DOUBLE_EQ(*own.Get(ncu_metric::kDuration), 11488e-9);
  EXPECT_DOUBLE_EQ(*own.Get(ncu_metric::kDramRead), 16785408);
  EXPECT_DOUBLE_EQ(*own.Get(ncu_metric::kSmClock), 1.755e9);
  EXPECT_EQ(own.text.at("Grid Size"), "(4096, 1, 1)");
  EXPECT_FALSE(own.Get("no__such_metric").has_value());
}

TEST(NcuReport, OnlyTheCandidatesKernelsAreReported) {
  NcuReport report = AnalyzeFixture({kOwnMangled});
  EXPECT_EQ(report.launches_profiled, 2);
  ASSERT_EQ(report.kernels.size(), 1u);
  const NcuKernel& k = report.kernels[0];
  EXPECT_EQ(k.name, "relu_scale_vec4_kernel(float4 const*, float4*, long, float)");
  EXPECT_EQ(k.key, "relu_scale_vec4_kernel");
  EXPECT_EQ(k.launches, 1);
  EXPECT_NEAR(k.duration_us, 11.488, 1e-9);
  EXPECT_EQ(k.grid, "(4096, 1, 1)");
  EXPECT_EQ(k.block, "(256, 1, 1)");
  EXPECT_DOUBLE_EQ(*k.registers_per_thread, 16);
  EXPECT_DOUBLE_EQ(*k.shared_bytes_per_block, 0);
  EXPECT_DOUBLE_EQ(*k.compute_pct, 14.2);
  EXPECT_DOUBLE_EQ(*k.memory_pct, 88.4);
  EXPECT_DOUBLE_EQ(*k.dram_pct, 88.4);
  EXPECT_DOUBLE_EQ(*k.achieved_occupancy_pct, 82.6);
  EXPECT_DOUBLE_EQ(*k.theoretical_occupancy_pct, 100);
  EXPECT_EQ(k.occupancy_limiter, "none");
  EXPECT_DOUBLE_EQ(*k.dram_write_bytes, 16777216);
  EXPECT_DOUBLE_EQ(*k.flops, 4194304);
  EXPECT_EQ(k.bound, "memory");
  EXPECT_NE(k.hint.find("memory roofline"), std::string::npos) << k.hint;
  // torch's fill kernel ran in the same call: named apart, never as the candidate's.
  ASSERT_EQ(report.other_kernels.size(), 1u);
  EXPECT_NE(report.other_kernels[0].find("at::native::vectorized_elementwise_kernel"),
            std::string::npos);
  // The same kernel is recognised by its KernelKey when only demangled names are known.
  NcuReport by_key = AnalyzeFixture({"relu_scale_vec4_kernel"});
  ASSERT_EQ(by_key.kernels.size(), 1u);
  EXPECT_EQ(by_key.kernels[0].key, "relu_scale_vec4_kernel");
}

// The raw page ncu 2025.3 wrote on an H100 (tests/ncu/fixtures/README.md): the parser reads every
// field the report uses, and the candidate's one launch is classified by the documented rules.
TEST(NcuReport, ParsesThePageCapturedOnAnH100) {
  Result<NcuCsv> csv = ParseNcuRawCsv(Fixture("ncu_h100_relu_scale.csv"));
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  EXPECT_TRUE(csv->header_found);
  EXPECT_TRUE(csv->errors.empty());
  ASSERT_EQ(csv->launches.size(), 1u);
  EXPECT_EQ(csv->launches[0].name, kOwnMangled);
  EXPECT_DOUBLE_EQ(*csv->launches[0].Get(ncu_metric::kDuration), 11648e-9);
  EXPECT_DOUBLE_EQ(*csv->launches[0].Get(ncu_metric::kDramRead), 16785664);
  NcuReport report;
  AnalyzeLaunches(csv->launches, {kOwnMangled}, &report);
  ASSERT_EQ(report.kernels.size(), 1u);
  const NcuKernel& k = report.kernels[0];
  EXPECT_EQ(k.grid, "(4096, 1, 1)");
  EXPECT_EQ(k.block, "(256, 1, 1)");
  ASSERT_TRUE(k.compute_pct && k.memory_pct && k.achieved_occupancy_pct && k.registers_per_thread);
  EXPECT_GT(*k.memory_pct, 0);
  EXPECT_LE(*k.memory_pct, 100);
  EXPECT_GT(*k.registers_per_thread, 0);
  EXPECT_DOUBLE_EQ(*k.dram_write_bytes, 1676032);  // most of the output still in L2
  EXPECT_FALSE(k.bound.empty());
  EXPECT_FALSE(k.hint.empty());
  EXPECT_TRUE(report.other_kernels.empty());
}

TEST(NcuReport, RooflinePosition) {
  NcuReport report = AnalyzeFixture({kOwnMangled});
  const NcuRoofline& roof = report.roofline;
  ASSERT_TRUE(roof.available) << roof.note;
  EXPECT_NEAR(roof.intensity, 4194304.0 / (16785408.0 + 16777216.0), 1e-12);
  EXPECT_NEAR(roof.peak_flops_per_s, 2 * 16896 * 1.755e9, 1);
  EXPECT_NEAR(roof.peak_bytes_per_s, 1280 * 2.619e9, 1);
  EXPECT_NEAR(roof.ridge, roof.peak_flops_per_s / roof.peak_bytes_per_s, 1e-9);
  EXPECT_EQ(roof.side, "memory");
  EXPECT_NEAR(roof.attainable_flops_per_s, roof.intensity * roof.peak_bytes_per_s, 1);
  EXPECT_NEAR(roof.achieved_flops_per_s, 4194304 / 11488e-9, 1);
  EXPECT_LT(roof.achieved_flops_per_s, roof.attainable_flops_per_s);
}

TEST(NcuReport, TextIsCompactAndNamesTheFindings) {
  NcuReport report = AnalyzeFixture({kOwnMangled});
  report.gpu = "NVIDIA H100 80GB HBM3";
  report.warmup = 5;
  std::string text = NcuReportText(report);
  for (const char* want :
       {"relu_scale_vec4_kernel(float4 const*, float4*, long, float)", "11.5 us",
        "compute 14% of peak, memory 88% (DRAM 88%) -> memory-bound",
        "achieved 83% of theoretical 100% (limiter: none)", "16.8 MB read",
        "hint:", "roofline (all kernels):", "memory side", "not the candidate's (left out)",
        "not comparable with utils.profiling"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(text.find("[2]"), std::string::npos) << text;  // torch's kernel is not listed as one
  // "A few hundred tokens": well under 2,000 characters for one kernel.
  EXPECT_LT(text.size(), 2000u) << text;
}

TEST(NcuReport, JsonCarriesTheFieldsAndNoVerdict) {
  NcuReport report = AnalyzeFixture({kOwnMangled});
  Json j = NcuReportToJson(report);
  EXPECT_EQ(j["tool"], "ncu");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["comparable_with_judge_times"], false);
  EXPECT_EQ(j["clock_control"], "base");
  ASSERT_EQ(j["kernels"].size(), 1u);
  for (const char* key :
       {"name", "duration_us", "compute_throughput_pct", "memory_throughput_pct",
        "achieved_occupancy_pct", "theoretical_occupancy_pct", "occupancy_limiter",
        "dram_read_bytes", "dram_write_bytes", "bound", "hint", "registers_per_thread"}) {
    EXPECT_TRUE(j["kernels"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["kernels"][0]["bound"], "memory");
  EXPECT_EQ(j["roofline"]["side"], "memory");
  EXPECT_EQ(j["thresholds"]["bound_sol_pct"], kNcuBoundSolPct);
  // Nothing that reads like a judgement.
  for (const char* key : {"reward", "correct", "timing", "speedup_vs_eager"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
}

TEST(NcuReport, UnitScales) {
  EXPECT_DOUBLE_EQ(*NcuUnitScale("nsecond"), 1e-9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("usecond"), 1e-6);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("msecond"), 1e-3);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("second"), 1);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("Kbyte"), 1e3);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("Mbyte"), 1e6);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("Gbyte/second"), 1e9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("Tbyte/second"), 1e12);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("cycle/nsecond"), 1e9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("Ghz"), 1e9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("GHz"), 1e9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("inst/cycle"), 1);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("register/thread"), 1);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("%"), 1);
  EXPECT_DOUBLE_EQ(*NcuUnitScale(""), 1);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("us"), 1e-6);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("ns"), 1e-9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("MB"), 1e6);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("GB/s"), 1e9);
  EXPECT_DOUBLE_EQ(*NcuUnitScale("MHz"), 1e6);
  EXPECT_FALSE(NcuUnitScale("furlong").has_value());
  EXPECT_FALSE(NcuUnitScale("Xbyte").has_value());
}

TEST(NcuReport, AutoUnitsGiveTheSameNumbers) {
  // Without --print-units base ncu scales the units itself; the report must not change.
  std::string text =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\"\n"
      "\"\",\"\",\"usecond\",\"Mbyte\"\n"
      "\"0\",\"k\",\"11.49\",\"16.79\"\n";
  Result<NcuCsv> csv = ParseNcuRawCsv(text);
  ASSERT_TRUE(csv.ok());
  ASSERT_EQ(csv->launches.size(), 1u);
  EXPECT_NEAR(*csv->launches[0].Get(ncu_metric::kDuration), 11.49e-6, 1e-15);
  EXPECT_NEAR(*csv->launches[0].Get(ncu_metric::kDramRead), 16.79e6, 1e-6);
}

TEST(NcuReport, CsvQuotingAndNcuMessages) {
  Result<std::vector<std::vector<std::string>>> rows =
      ParseCsvRows("\"a, b\",\"say \"\"hi\"\"\",3\n\"\",x\n");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(rows.value()[0][0], "a, b");
  EXPECT_EQ(rows.value()[0][1], "say \"hi\"");
  EXPECT_EQ(rows.value()[0][2], "3");
  EXPECT_EQ(rows.value()[1][0], "");
  EXPECT_FALSE(ParseCsvRows("\"never closed\n").ok());
  // A log without a report: its ==ERROR== and ==WARNING== lines are kept, no header.
  Result<NcuCsv> csv = ParseNcuRawCsv(
      "==PROF== Connected to process 1\n==ERROR== something broke\n==WARNING== No kernels were "
      "profiled.\nprogram output \"quoted\"\n");
  ASSERT_TRUE(csv.ok());
  EXPECT_FALSE(csv->header_found);
  EXPECT_TRUE(csv->launches.empty());
  ASSERT_EQ(csv->errors.size(), 1u);
  EXPECT_EQ(csv->errors[0], "something broke");
  ASSERT_EQ(csv->warnings.size(), 1u);
  // A header without a kernel-name column is not ncu's raw page.
  EXPECT_FALSE(ParseNcuRawCsv("\"ID\",\"Other\"\n\"0\",\"1\"\n").ok());
}

NcuKernel Kernel(std::optional<double> compute, std::optional<double> memory) {
  NcuKernel k;
  k.compute_pct = compute;
  k.memory_pct = memory;
  k.duration_us = 50;
  k.launches = 1;
  k.grid = "(8, 1, 1)";
  return k;
}

TEST(NcuReport, BoundAndHintRules) {
  NcuKernel compute = Kernel(85, 30);
  ClassifyKernel(&compute);
  EXPECT_EQ(compute.bound, "compute");
  EXPECT_NE(compute.hint.find("SM throughput at 85%"), std::string::npos) << compute.hint;

  NcuKernel onchip = Kernel(20, 70);
  onchip.dram_pct = 20;
  ClassifyKernel(&onchip);
  EXPECT_EQ(onchip.bound, "memory");
  EXPECT_NE(onchip.hint.find("on-chip"), std::string::npos) << onchip.hint;

  // The threshold itself: 60% bounds, just below it is latency.
  NcuKernel at = Kernel(10, kNcuBoundSolPct);
  ClassifyKernel(&at);
  EXPECT_EQ(at.bound, "memory");
  NcuKernel below = Kernel(10, kNcuBoundSolPct - 0.1);
  ClassifyKernel(&below);
  EXPECT_EQ(below.bound, "latency");

  NcuKernel small_grid = Kernel(5, 10);
  small_grid.waves_per_sm = 0.3;
  ClassifyKernel(&small_grid);
  EXPECT_EQ(small_grid.bound, "latency");
  EXPECT_NE(small_grid.hint.find("fills only 0.30 waves"), std::string::npos) << small_grid.hint;

  NcuKernel capped = Kernel(20, 25);
  capped.waves_per_sm = 4;
  capped.theoretical_occupancy_pct = 25;
  capped.achieved_occupancy_pct = 24;
  capped.occupancy_limiter = "registers";
  ClassifyKernel(&capped);
  EXPECT_NE(capped.hint.find("occupancy capped at 25% by registers"), std::string::npos)
      << capped.hint;
  EXPECT_NE(capped.hint.find("__launch_bounds__"), std::string::npos) << capped.hint;

  NcuKernel missing_warps = Kernel(20, 25);
  missing_warps.waves_per_sm = 4;
  missing_warps.theoretical_occupancy_pct = 100;
  missing_warps.achieved_occupancy_pct = 30;
  ClassifyKernel(&missing_warps);
  EXPECT_NE(missing_warps.hint.find("achieved occupancy 30% of a theoretical 100%"),
            std::string::npos)
      << missing_warps.hint;

  NcuKernel short_one = Kernel(20, 25);
  short_one.duration_us = 2;
  ClassifyKernel(&short_one);
  EXPECT_NE(short_one.hint.find("launch and ramp-up"), std::string::npos) << short_one.hint;

  NcuKernel stalled = Kernel(20, 25);
  ClassifyKernel(&stalled);
  EXPECT_NE(stalled.hint.find("stall"), std::string::npos) << stalled.hint;

  NcuKernel none = Kernel(std::nullopt, std::nullopt);
  ClassifyKernel(&none);
  EXPECT_EQ(none.bound, "unknown");
}

NcuLaunch Launch(int id, const std::string& name, double duration_ns) {
  NcuLaunch l;
  l.id = id;
  l.name = name;
  l.metrics[ncu_metric::kDuration] = duration_ns * 1e-9;
  l.metrics[ncu_metric::kComputeSol] = 20;
  l.metrics[ncu_metric::kMemorySol] = 30;
  return l;
}

TEST(NcuReport, LaunchesOfOneKernelAreGroupedAndTheLimiterNamed) {
  NcuLaunch a = Launch(0, "_Z4stepPf", 4000);
  NcuLaunch b = Launch(1, "_Z4stepPf", 6000);
  b.metrics[ncu_metric::kTheoreticalOccupancy] = 50;
  b.metrics[ncu_metric::kLimitRegisters] = 4;
  b.metrics[ncu_metric::kLimitWarps] = 8;
  b.metrics[ncu_metric::kLimitSharedMem] = 16;
  b.metrics[ncu_metric::kLimitBlocks] = 32;
  NcuReport report;
  AnalyzeLaunches({a, b}, {"step"}, &report);
  ASSERT_EQ(report.kernels.size(), 1u);
  const NcuKernel& k = report.kernels[0];
  EXPECT_EQ(k.name, "step(float*)");
  EXPECT_EQ(k.launches, 2);
  EXPECT_NEAR(k.duration_us, 10, 1e-9);
  EXPECT_EQ(k.occupancy_limiter, "registers");  // the longest launch's numbers
  EXPECT_FALSE(report.roofline.available);      // no FLOP counters, no peaks
  EXPECT_FALSE(report.roofline.note.empty());
}

}  // namespace
}  // namespace cuda_agent
