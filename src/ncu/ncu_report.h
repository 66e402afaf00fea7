// ncu_report.h — Nsight Compute's numbers in a form a model can act on: ncu's raw CSV page
// (`--csv --page raw`) parsed into one NcuLaunch per profiled kernel launch (metrics in SI base
// units whatever units ncu printed), launches grouped per kernel, and for each kernel the
// speed-of-light (% of peak compute and memory throughput), achieved vs theoretical occupancy and
// what limits it, DRAM bytes, the bound (memory / compute / latency) and a one-line hint; plus the
// task's position on the roofline. The thresholds are constants below and in docs/ncu.md.
//
//   Result<NcuCsv> csv = ParseNcuRawCsv(ncu_log_text);
//   NcuReport report;
//   AnalyzeLaunches(csv->launches, own_kernel_keys, &report);
//   std::cout << NcuReportText(report);          // a few hundred tokens for the agent
//   std::cout << NcuReportToJson(report).dump(); // for machines
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace cuda_agent {

// --- what ncu is asked for ---------------------------------------------------------------------

// The ncu sections the report reads (ncu --section NAME).
inline constexpr const char* kNcuSections[] = {"SpeedOfLight", "Occupancy", "LaunchStats",
                                               "MemoryWorkloadAnalysis"};

// Metric names (ncu's raw page columns). Those the sections do not collect are passed with
// --metrics (NcuExtraMetrics).
namespace ncu_metric {
inline constexpr const char* kDuration = "gpu__time_duration.sum";
inline constexpr const char* kComputeSol = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMemorySol =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kDramSol = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kDramSolAlt = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kAchievedOccupancy =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kTheoreticalOccupancy = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr const char* kLimitRegisters = "launch__occupancy_limit_registers";
inline constexpr const char* kLimitSharedMem = "launch__occupancy_limit_shared_mem";
inline constexpr const char* kLimitWarps = "launch__occupancy_limit_warps";
inline constexpr const char* kLimitBlocks = "launch__occupancy_limit_blocks";
inline constexpr const char* kRegistersPerThread = "launch__registers_per_thread";
inline constexpr const char* kBlockSize = "launch__block_size";
inline constexpr const char* kGridSize = "launch__grid_size";
inline constexpr const char* kSharedStatic = "launch__shared_mem_per_block_static";
inline constexpr const char* kSharedDynamic = "launch__shared_mem_per_block_dynamic";
inline constexpr const char* kWaves = "launch__waves_per_multiprocessor";
inline constexpr const char* kDramRead = "dram__bytes_read.sum";
inline constexpr const char* kDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kL1HitRate = "l1tex__t_sector_hit_rate.pct";
inline constexpr const char* kL2HitRate = "lts__t_sector_hit_rate.pct";
// Thread-level floating-point instructions (predicated on), the roofline's FLOP count.
inline constexpr const char* kFfma = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr const char* kFadd = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr const char* kFmul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr const char* kDfma = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum";
inline constexpr const char* kDadd = "sm__sass_thread_inst_executed_op_dadd_pred_on.sum";
inline constexpr const char* kDmul = "sm__sass_thread_inst_executed_op_dmul_pred_on.sum";
inline constexpr const char* kHfma = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum";
inline constexpr const char* kHadd = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum";
inline constexpr const char* kHmul = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum";
// The device's peaks, as ncu's roofline chart computes them: per-cycle peaks times clock rates.
inline constexpr const char* kFfmaPeakPerCycle =
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained";
inline constexpr const char* kSmClock = "sm__cycles_elapsed.avg.per_second";
inline constexpr const char* kDramPeakPerCycle = "dram__bytes.sum.peak_sustained";
inline constexpr const char* kDramClock = "dram__cycles_elapsed.avg.per_second";
}  // namespace ncu_metric

// NcuExtraMetrics: the metrics passed with --metrics (the sections bring the rest).
std::vector<std::string> NcuExtraMetrics();

// --- thresholds (docs/ncu.md) --------------------------------------------------------------------

// A kernel is memory- or compute-bound when the busier of the two speed-of-light throughputs
// reaches this share of its peak; below it on both, neither unit is busy: latency-bound.
inline constexpr double kNcuBoundSolPct = 60;
// At or above this share of peak a unit is "near its peak": only doing less work there helps.
inline constexpr double kNcuNearPeakPct = 80;
// Theoretical occupancy below this is worth raising (the limiter is named).
inline constexpr double kNcuLowOccupancyPct = 50;
// Achieved occupancy below this share of the theoretical one: warps are missing at run time (a
// grid smaller than the GPU, a tail wave, imbalance).
inline constexpr double kNcuAchievedShare = 0.7;
// Fewer waves than this: the grid does not fill the GPU once.
inline constexpr double kNcuSmallGridWaves = 1.0;
// Kernels shorter than this (µs) are dominated by launch and ramp-up costs.
inline constexpr double kNcuShortKernelUs = 5;
// A memory-bound kernel whose DRAM throughput is below this share of its memory throughput is
// bound by on-chip memory (L1/shared/L2), not DRAM.
inline constexpr double kNcuDramShareOfMemory = 0.6;

// --- parsing -------------------------------------------------------------------------------------

// NcuLaunch is one profiled kernel launch: one data row of the raw page.
struct NcuLaunch {
  int id = -1;
  std::string name;                         // as ncu printed it (demangled with our flags)
  std::map<std::string, double> metrics;    // numeric columns, SI base units (s, byte, %, 1/s)
  std::map<std::string, std::string> text;  // every column as printed ("Grid Size": "(4096, 1, 1)")
  std::optional<double> Get(const std::string& metric) const;
};

// NcuCsv is a parsed ncu log: the launches, and ncu's own ==ERROR==/==WARNING== lines.
struct NcuCsv {
  std::vector<NcuLaunch> launches;
  std::vector<std::string> errors;    // "==ERROR== ..." lines, without the prefix
  std::vector<std::string> warnings;  // "==WARNING== ..." lines, without the prefix
  bool header_found = false;          // a raw-page header ("ID", ..., "Kernel Name", ...) was seen
};

// ParseNcuRawCsv reads ncu's output with `--csv --page raw`: lines before the header (==PROF==
// progress, the program's own output) are skipped, the row after the header gives the units, and
// each following row with a numeric ID is a launch. Numbers may carry thousands separators; "n/a"
// and empty cells are left out. Fails only on a malformed CSV (an unterminated quote); a log
// without a header is a NcuCsv with header_found false and the error lines.
Result<NcuCsv> ParseNcuRawCsv(std::string_view text);

// NcuUnitScale returns the factor that turns a value printed in `unit` into SI base units
// ("usecond" → 1e-6, "Mbyte" → 1e6, "Gbyte/second" → 1e9, "cycle/nsecond" → 1e9, "%" → 1), or
// nullopt for a unit it does not know (such a value is kept as printed).
std::optional<double> NcuUnitScale(std::string_view unit);

// ParseCsvRows splits CSV text into rows of fields (RFC 4180 quoting; "" inside quotes is a quote).
Result<std::vector<std::vector<std::string>>> ParseCsvRows(std::string_view text);

// --- the report ----------------------------------------------------------------------------------

// NcuKernel: one kernel of the candidate, its launches in the profiled call grouped by name.
// Duration and bytes add over launches; the other numbers are those of its longest launch.
struct NcuKernel {
  std::string name;
  std::string key;  // builder/binary_inspector.h KernelKey
  int launches = 0;
  double duration_us = 0;
  std::string grid, block;  // "(4096, 1, 1)"
  std::optional<double> registers_per_thread, shared_bytes_per_block, compute_pct, memory_pct,
      dram_pct, achieved_occupancy_pct, theoretical_occupancy_pct, waves_per_sm, dram_read_bytes,
      dram_write_bytes, l1_hit_pct, l2_hit_pct, flops;
  std::string occupancy_limiter;  // registers | shared memory | block size | blocks per SM | none
  std::string bound;              // memory | compute | latency | unknown
  std::string hint;
};

// NcuRoofline: where the candidate's kernels together sit on the device's roofline.
struct NcuRoofline {
  bool available = false;
  std::string note;  // why not, or what is left out of the count
  double flops = 0, dram_bytes = 0, seconds = 0;
  double intensity = 0;         // FLOP per DRAM byte
  double peak_flops_per_s = 0;  // FP32 FMA peak at the profiled clocks
  double peak_bytes_per_s = 0;  // DRAM peak at the profiled clocks
  double ridge = 0;             // peak_flops_per_s / peak_bytes_per_s
  double achieved_flops_per_s = 0;
  double attainable_flops_per_s = 0;  // min(peak, intensity × bandwidth)
  std::string side;                   // memory | compute (of the ridge)
};

// NcuReport is what `cuda-agent profile --ncu` answers. status "ok" has kernels; every other status
// has a message a person (or a model) can act on:
//   needs_gpu, ncu_missing, not_permitted — ncu cannot run here;
//   build_failed, candidate_failed, replay_failed, no_kernels — the candidate could not be
//   profiled; task_error, internal — not the candidate's fault.
struct NcuReport {
  std::string status = "ok";
  std::string message;
  std::string task, candidate, device, gpu, ncu_path, ncu_version;
  int warmup = 0;
  int launches_profiled = 0;
  std::vector<NcuKernel> kernels;
  std::vector<std::string> other_kernels;  // profiled in the call, not the candidate's (torch's)
  NcuRoofline roofline;
  std::vector<std::string> notes;
  std::string raw_csv;  // path of ncu's raw CSV, when kept
  double seconds = 0;
};

// AnalyzeLaunches fills report->kernels (launches whose KernelKey is in own_keys, grouped),
// other_kernels (the rest, by name), the roofline, and notes. With `own_keys` empty every launch
// counts as the candidate's (no kernel list was available; a note says so).
void AnalyzeLaunches(const std::vector<NcuLaunch>& launches, const std::set<std::string>& own_keys,
                     NcuReport* report);

// ClassifyKernel sets bound, occupancy_limiter and hint from the kernel's numbers.
void ClassifyKernel(NcuKernel* kernel);

Json NcuReportToJson(const NcuReport& report);
// NcuReportText is the compact text for the agent: a header, a few lines per kernel, the roofline.
std::string NcuReportText(const NcuReport& report);

}  // namespace cuda_agent
