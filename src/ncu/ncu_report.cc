// ncu_report.cc — ncu's raw CSV page parsed and turned into the per-kernel report (ncu_report.h):
// units, grouping, the bound and hint rules, the roofline, and the text and JSON renderings.
#include "ncu/ncu_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include "builder/binary_inspector.h"
#include "common/text.h"

namespace cuda_agent {
namespace {

constexpr size_t kNameChars = 110;  // kernel names in the text are cut here
constexpr size_t kOtherKernelsShown = 5;

// ParseNumber reads "1234", "1,234.5", "-0.5", "1e+06"; nullopt for anything else ("n/a", "").
std::optional<double> ParseNumber(std::string_view cell) {
  std::string digits;
  for (char c : TrimSpace(cell)) {
    if (c == ',') continue;  // thousands separator
    digits += c;
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || *end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value;
}

// ScaleOfToken: the factor of one unit token without '/' ("Mbyte", "nsecond", "Ghz", "inst", and
// the short forms "us", "MB").
std::optional<double> ScaleOfToken(std::string_view token) {
  static const char* const kBases[] = {
      "second", "s",        "byte",   "B",       "cycle", "inst", "warp",      "thread",
      "block",  "register", "sector", "request", "flop",  "hz",   "wavefront", "transaction"};
  std::string unit(token);
  // Hz comes as "hz", "Mhz", "GHz": its two letters are compared without case, the prefix keeps it.
  if (unit.size() >= 2 && std::tolower(static_cast<unsigned char>(unit[unit.size() - 2])) == 'h' &&
      std::tolower(static_cast<unsigned char>(unit.back())) == 'z') {
    unit.replace(unit.size() - 2, 2, "hz");
  }
  if (unit.empty()) return 1.0;
  for (const char* base : kBases) {
    const std::string b = base;
    if (unit == b) return 1.0;
    if (unit.size() == b.size() + 1 && unit.compare(1, b.size(), b) == 0) {
      switch (unit[0]) {
        case 'p':
          return 1e-12;
        case 'n':
          return 1e-9;
        case 'u':
          return 1e-6;
        case 'm':
          return 1e-3;
        case 'K':
        case 'k':
          return 1e3;
        case 'M':
          return 1e6;
        case 'G':
          return 1e9;
        case 'T':
          return 1e12;
        case 'P':
          return 1e15;
        default:
          return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string Format(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string Pct(const std::optional<double>& v) { return v ? Format("%.0f%%", *v) : "n/a"; }

std::string Bytes(double bytes) {
  if (bytes >= 1e9) return Format("%.2f GB", bytes / 1e9);
  if (bytes >= 1e6) return Format("%.1f MB", bytes / 1e6);
  if (bytes >= 1e3) return Format("%.1f KB", bytes / 1e3);
  return Format("%.0f B", bytes);
}

std::string FlopRate(double flops_per_s) {
  if (flops_per_s >= 1e12) return Format("%.2f TFLOP/s", flops_per_s / 1e12);
  return Format("%.1f GFLOP/s", flops_per_s / 1e9);
}

std::string ShortName(const std::string& name) {
  if (name.size() <= kNameChars) return name;
  return name.substr(0, kNameChars - 3) + "...";
}

std::optional<double> FirstOf(const NcuLaunch& launch, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (auto v = launch.Get(n)) return v;
  }
  return std::nullopt;
}

// Flops: FP32, FP64 and FP16 thread instructions, an FMA counting two (tensor-core work is not in
// these counters; a half2 instruction counts once).
std::optional<double> Flops(const NcuLaunch& l) {
  namespace m = ncu_metric;
  double total = 0;
  bool any = false;
  for (auto [name, weight] : {std::pair{m::kFfma, 2.0},
                              {m::kFadd, 1.0},
                              {m::kFmul, 1.0},
                              {m::kDfma, 2.0},
                              {m::kDadd, 1.0},
                              {m::kDmul, 1.0},
                              {m::kHfma, 2.0},
                              {m::kHadd, 1.0},
                              {m::kHmul, 1.0}}) {
    if (auto v = l.Get(name)) {
      total += weight * *v;
      any = true;
    }
  }
  return any ? std::optional<double>(total) : std::nullopt;
}

void AddTo(std::optional<double>& sum, const std::optional<double>& v) {
  if (!v) return;
  sum = sum.value_or(0) + *v;
}

// FromLaunch: a kernel's numbers from one launch (the longest of its launches).
void FillFromLaunch(const NcuLaunch& l, NcuKernel* k) {
  namespace m = ncu_metric;
  auto text = [&](const char* column) {
    auto it = l.text.find(column);
    return it == l.text.end() ? std::string() : it->second;
  };
  k->grid = text("Grid Size");
  k->block = text("Block Size");
  if (k->grid.empty()) {
    if (auto v = l.Get(m::kGridSize)) k->grid = Format("%.0f", *v);
  }
  if (k->block.empty()) {
    if (auto v = l.Get(m::kBlockSize)) k->block = Format("%.0f", *v);
  }
  k->registers_per_thread = l.Get(m::kRegistersPerThread);
  std::optional<double> shared;
  AddTo(shared, l.Get(m::kSharedStatic));
  AddTo(shared, l.Get(m::kSharedDynamic));
  k->shared_bytes_per_block = shared;
  k->compute_pct = l.Get(m::kComputeSol);
  k->memory_pct = l.Get(m::kMemorySol);
  k->dram_pct = FirstOf(l, {m::kDramSol, m::kDramSolAlt});
  k->achieved_occupancy_pct = l.Get(m::kAchievedOccupancy);
  k->theoretical_occupancy_pct = l.Get(m::kTheoreticalOccupancy);
  k->waves_per_sm = l.Get(m::kWaves);
  k->l1_hit_pct = l.Get(m::kL1HitRate);
  k->l2_hit_pct = l.Get(m::kL2HitRate);
}

// OccupancyLimiter: the resource that allows the fewest blocks per SM (launch__occupancy_limit_*).
std::string OccupancyLimiter(const NcuLaunch& l, const std::optional<double>& theoretical) {
  namespace m = ncu_metric;
  if (theoretical && *theoretical >= 99.5) return "none";
  std::string best;
  double fewest = 0;
  for (auto [metric, name] : {std::pair{m::kLimitRegisters, "registers"},
                              {m::kLimitSharedMem, "shared memory"},
                              {m::kLimitWarps, "block size"},
                              {m::kLimitBlocks, "blocks per SM"}}) {
    std::optional<double> v = l.Get(metric);
    if (!v) continue;
    if (best.empty() || *v < fewest) {
      best = name;
      fewest = *v;
    }
  }
  return best;
}

std::string LimiterFix(const std::string& limiter) {
  if (limiter == "registers")
    return "use fewer registers per thread (__launch_bounds__, smaller per-thread tiles)";
  if (limiter == "shared memory")
    return "use less shared memory per block (smaller tiles, fewer stages)";
  if (limiter == "block size")
    return "pick a block size that fills the SM's warp slots (e.g. 256 or 512 threads)";
  if (limiter == "blocks per SM") return "use larger blocks (at least 128 threads)";
  return "raise the warps per SM";
}

}  // namespace

std::vector<std::string> NcuExtraMetrics() {
  namespace m = ncu_metric;
  return {m::kDramRead,  m::kDramWrite,
          m::kL1HitRate, m::kL2HitRate,
          m::kFfma,      m::kFadd,
          m::kFmul,      m::kDfma,
          m::kDadd,      m::kDmul,
          m::kHfma,      m::kHadd,
          m::kHmul,      m::kFfmaPeakPerCycle,
          m::kSmClock,   m::kDramPeakPerCycle,
          m::kDramClock};
}

std::optional<double> NcuLaunch::Get(const std::string& metric) const {
  auto it = metrics.find(metric);
  if (it == metrics.end()) return std::nullopt;
  return it->second;
}

std::optional<double> NcuUnitScale(std::string_view unit) {
  unit = TrimSpace(unit);
  if (unit.empty() || unit == "%") return 1.0;
  size_t slash = unit.find('/');
  if (slash == std::string_view::npos) return ScaleOfToken(unit);
  std::optional<double> top = ScaleOfToken(TrimSpace(unit.substr(0, slash)));
  std::optional<double> bottom = NcuUnitScale(unit.substr(slash + 1));
  if (!top || !bottom || *bottom == 0) return std::nullopt;
  return *top / *bottom;
}

Result<std::vector<std::vector<std::string>>> ParseCsvRows(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = true;
    } else if (c == '\n') {
      if (field_started || !field.empty() || !row.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      field_started = false;
    } else if (c != '\r') {
      field += c;
      field_started = true;
    }
  }
  if (quoted) return InvalidArgument("malformed CSV: a quoted field is not closed");
  if (field_started || !field.empty() || !row.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<NcuCsv> ParseNcuRawCsv(std::string_view text) {
  NcuCsv out;
  // ncu's own lines, and where the report begins: the first line whose first field is "ID".
  std::string csv;
  bool in_csv = false;
  for (std::string_view line : SplitLines(text)) {
    std::string_view t = TrimSpace(line);
    if (t.rfind("==ERROR==", 0) == 0) {
      out.errors.emplace_back(TrimSpace(t.substr(9)));
      continue;
    }
    if (t.rfind("==WARNING==", 0) == 0) {
      out.warnings.emplace_back(TrimSpace(t.substr(11)));
      continue;
    }
    if (!in_csv && t.rfind("\"ID\",", 0) == 0) in_csv = true;
    // The report's rows are fully quoted; anything else after it (the program's output) is not.
    if (in_csv && !t.empty() && t.front() == '"') {
      csv.append(t);
      csv += '\n';
    }
  }
  if (!in_csv) return out;
  Result<std::vector<std::vector<std::string>>> rows = ParseCsvRows(csv);
  if (!rows.ok()) return rows.status();
  const auto& table = rows.value();
  if (table.empty()) return out;
  out.header_found = true;
  const std::vector<std::string>& header = table[0];
  size_t name_column = header.size();
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "Kernel Name") name_column = i;
  }
  if (name_column == header.size()) {
    return InvalidArgument("ncu's raw page has no \"Kernel Name\" column");
  }
  std::vector<std::optional<double>> scales(header.size(), 1.0);
  size_t first_data = 1;
  if (table.size() > 1 && !ParseNumber(table[1][0])) {  // the units row: its ID cell is empty
    for (size_t i = 0; i < header.size() && i < table[1].size(); ++i)
      scales[i] = NcuUnitScale(table[1][i]);
    first_data = 2;
  }
  for (size_t r = first_data; r < table.size(); ++r) {
    const std::vector<std::string>& row = table[r];
    std::optional<double> id = ParseNumber(row[0]);
    if (!id || row.size() <= name_column) continue;
    NcuLaunch launch;
    launch.id = static_cast<int>(*id);
    launch.name = row[name_column];
    for (size_t i = 0; i < header.size() && i < row.size(); ++i) {
      launch.text[header[i]] = row[i];
      if (i == name_column) continue;
      if (std::optional<double> v = ParseNumber(row[i])) {
        launch.metrics[header[i]] = *v * scales[i].value_or(1.0);
      }
    }
    out.launches.push_back(std::move(launch));
  }
  return out;
}

void ClassifyKernel(NcuKernel* k) {
  const auto& c = k->compute_pct;
  const auto& m = k->memory_pct;
  if (!c && !m) {
    k->bound = "unknown";
    k->hint = "ncu reported no throughput numbers for this kernel";
    return;
  }
  double compute = c.value_or(0), memory = m.value_or(0);
  double top = std::max(compute, memory);
  if (top >= kNcuBoundSolPct) {
    k->bound = memory >= compute ? "memory" : "compute";
  } else {
    k->bound = "latency";
  }
  if (k->bound == "memory") {
    if (k->dram_pct && *k->dram_pct < kNcuDramShareOfMemory * memory) {
      k->hint = "bound by on-chip memory traffic (memory " + Pct(m) + ", DRAM only " +
                Pct(k->dram_pct) +
                "): improve reuse and access patterns (coalesced or vectorised accesses, no "
                "shared-memory bank conflicts, fewer L1/L2 round trips)";
    } else if (memory >= kNcuNearPeakPct) {
      k->hint = "memory throughput at " + Pct(m) +
                " of peak: the kernel is at its memory roofline; only moving fewer bytes helps "
                "(fuse with neighbouring ops, keep data on chip, read each input once)";
    } else {
      k->hint = "memory-bound at " + Pct(m) +
                " of peak: keep more bytes in flight (16-byte vectorised loads, more independent "
                "loads per thread, coalesced rows)";
    }
    return;
  }
  if (k->bound == "compute") {
    if (compute >= kNcuNearPeakPct) {
      k->hint = "SM throughput at " + Pct(c) +
                " of peak: do less work per output (hoist invariants, cheaper index math, FMA) "
                "or use tensor cores where the precision policy allows";
    } else {
      k->hint = "compute-bound at " + Pct(c) +
                " of peak: look at the instruction mix (index math, conversions, divisions) and "
                "raise instruction-level parallelism";
    }
    return;
  }
  // Latency: neither unit is busy; say why warps are missing or stalled.
  const auto& theoretical = k->theoretical_occupancy_pct;
  const auto& achieved = k->achieved_occupancy_pct;
  if (k->waves_per_sm && *k->waves_per_sm < kNcuSmallGridWaves) {
    k->hint = "the grid " + k->grid + " fills only " + Format("%.2f", *k->waves_per_sm) +
              " waves of the GPU: launch more blocks (split the work finer) so every SM has warps";
  } else if (theoretical && *theoretical < kNcuLowOccupancyPct && !k->occupancy_limiter.empty() &&
             k->occupancy_limiter != "none") {
    k->hint = "occupancy capped at " + Pct(theoretical) + " by " + k->occupancy_limiter + ": " +
              LimiterFix(k->occupancy_limiter);
  } else if (theoretical && achieved && *achieved < kNcuAchievedShare * *theoretical) {
    k->hint = "achieved occupancy " + Pct(achieved) + " of a theoretical " + Pct(theoretical) +
              ": warps are missing at run time (a partial last wave, uneven work per block)";
  } else if (k->duration_us > 0 && k->duration_us / std::max(1, k->launches) < kNcuShortKernelUs) {
    k->hint = "only " + Format("%.1f", k->duration_us / std::max(1, k->launches)) +
              " us per launch: launch and ramp-up costs dominate; fuse it with neighbouring "
              "kernels or give each launch more work";
  } else {
    k->hint = "neither memory (" + Pct(m) + ") nor compute (" + Pct(c) +
              ") is busy: warps stall on dependencies or memory latency; give each thread more "
              "independent work (unrolling, several loads in flight) and keep the SMs full";
  }
}

void AnalyzeLaunches(const std::vector<NcuLaunch>& launches, const std::set<std::string>& own_keys,
                     NcuReport* report) {
  namespace m = ncu_metric;
  report->launches_profiled = static_cast<int>(launches.size());
  // Which launches are the candidate's: the kernel's name (mangled, or its KernelKey once
  // demangled) is one the built extension contains.
  auto is_own = [&](const std::string& name) {
    if (own_keys.empty()) return true;
    if (own_keys.count(name)) return true;
    std::string demangled = Demangle(name);
    return own_keys.count(KernelKey(demangled)) > 0 || own_keys.count(KernelKey(name)) > 0;
  };
  if (own_keys.empty() && !launches.empty()) {
    report->notes.push_back(
        "the extension's kernel list was not available: every profiled kernel is shown");
  }
  std::vector<std::string> order;
  std::map<std::string, std::vector<const NcuLaunch*>> by_name;
  std::set<std::string> others;
  for (const NcuLaunch& l : launches) {
    if (!is_own(l.name)) {
      if (others.insert(Demangle(l.name)).second) report->other_kernels.push_back(Demangle(l.name));
      continue;
    }
    if (!by_name.count(l.name)) order.push_back(l.name);
    by_name[l.name].push_back(&l);
  }
  NcuRoofline& roof = report->roofline;
  std::optional<double> peak_ffma, sm_clock, peak_dram, dram_clock;
  bool bytes_known = false, flops_known = false;
  for (const std::string& name : order) {
    const auto& group = by_name[name];
    NcuKernel k;
    k.name = Demangle(name);
    k.key = KernelKey(k.name);
    k.launches = static_cast<int>(group.size());
    const NcuLaunch* longest = group.front();
    for (const NcuLaunch* l : group) {
      double us = l->Get(m::kDuration).value_or(0) * 1e6;
      k.duration_us += us;
      if (us > longest->Get(m::kDuration).value_or(0) * 1e6) longest = l;
      AddTo(k.dram_read_bytes, l->Get(m::kDramRead));
      AddTo(k.dram_write_bytes, l->Get(m::kDramWrite));
      AddTo(k.flops, Flops(*l));
      if (!peak_ffma) peak_ffma = l->Get(m::kFfmaPeakPerCycle);
      if (!sm_clock) sm_clock = l->Get(m::kSmClock);
      if (!peak_dram) peak_dram = l->Get(m::kDramPeakPerCycle);
      if (!dram_clock) dram_clock = l->Get(m::kDramClock);
    }
    FillFromLaunch(*longest, &k);
    k.occupancy_limiter = OccupancyLimiter(*longest, k.theoretical_occupancy_pct);
    ClassifyKernel(&k);
    roof.seconds += k.duration_us * 1e-6;
    if (k.dram_read_bytes || k.dram_write_bytes) {
      bytes_known = true;
      roof.dram_bytes += k.dram_read_bytes.value_or(0) + k.dram_write_bytes.value_or(0);
    }
    if (k.flops) {
      flops_known = true;
      roof.flops += *k.flops;
    }
    report->kernels.push_back(std::move(k));
  }
  if (report->kernels.empty()) {
    roof.note = "no kernel of the candidate was profiled";
    return;
  }
  if (!peak_ffma || !sm_clock || !peak_dram || !dram_clock || !bytes_known || !flops_known) {
    roof.note = "ncu did not report the FLOP counters, DRAM bytes and device peaks it needs";
    return;
  }
  roof.peak_flops_per_s = 2 * *peak_ffma * *sm_clock;
  roof.peak_bytes_per_s = *peak_dram * *dram_clock;
  if (roof.peak_flops_per_s <= 0 || roof.peak_bytes_per_s <= 0 || roof.dram_bytes <= 0 ||
      roof.seconds <= 0) {
    roof.note = "no DRAM traffic or no device peak: the roofline has no position";
    return;
  }
  roof.available = true;
  roof.intensity = roof.flops / roof.dram_bytes;
  roof.ridge = roof.peak_flops_per_s / roof.peak_bytes_per_s;
  roof.side = roof.intensity < roof.ridge ? "memory" : "compute";
  roof.achieved_flops_per_s = roof.flops / roof.seconds;
  roof.attainable_flops_per_s =
      std::min(roof.peak_flops_per_s, roof.intensity * roof.peak_bytes_per_s);
  roof.note =
      "FLOPs count FP32/FP64/FP16 instructions (an FMA is 2); tensor-core work is not counted; "
      "peaks are FP32 FMA and DRAM at the profiled (locked) clocks";
}

Json NcuReportToJson(const NcuReport& r) {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  Json kernels = Json::array();
  for (const NcuKernel& k : r.kernels) {
    kernels.push_back({{"name", k.name},
                       {"key", k.key},
                       {"launches", k.launches},
                       {"duration_us", k.duration_us},
                       {"grid", k.grid},
                       {"block", k.block},
                       {"registers_per_thread", opt(k.registers_per_thread)},
                       {"shared_bytes_per_block", opt(k.shared_bytes_per_block)},
                       {"compute_throughput_pct", opt(k.compute_pct)},
                       {"memory_throughput_pct", opt(k.memory_pct)},
                       {"dram_throughput_pct", opt(k.dram_pct)},
                       {"achieved_occupancy_pct", opt(k.achieved_occupancy_pct)},
                       {"theoretical_occupancy_pct", opt(k.theoretical_occupancy_pct)},
                       {"occupancy_limiter", k.occupancy_limiter},
                       {"waves_per_sm", opt(k.waves_per_sm)},
                       {"dram_read_bytes", opt(k.dram_read_bytes)},
                       {"dram_write_bytes", opt(k.dram_write_bytes)},
                       {"l1_hit_pct", opt(k.l1_hit_pct)},
                       {"l2_hit_pct", opt(k.l2_hit_pct)},
                       {"flops", opt(k.flops)},
                       {"bound", k.bound},
                       {"hint", k.hint}});
  }
  const NcuRoofline& roof = r.roofline;
  Json roofline = {{"available", roof.available}, {"note", roof.note}};
  if (roof.available) {
    roofline.update({{"flops", roof.flops},
                     {"dram_bytes", roof.dram_bytes},
                     {"seconds", roof.seconds},
                     {"intensity_flop_per_byte", roof.intensity},
                     {"ridge_flop_per_byte", roof.ridge},
                     {"peak_flops_per_s", roof.peak_flops_per_s},
                     {"peak_dram_bytes_per_s", roof.peak_bytes_per_s},
                     {"achieved_flops_per_s", roof.achieved_flops_per_s},
                     {"attainable_flops_per_s", roof.attainable_flops_per_s},
                     {"side", roof.side}});
  }
  return {{"tool", "ncu"},
          {"status", r.status},
          {"message", r.message},
          {"task", r.task},
          {"candidate", r.candidate},
          {"device", r.device},
          {"gpu", r.gpu},
          {"ncu", r.ncu_path},
          {"ncu_version", r.ncu_version},
          // ncu locks the clocks to base and replays every kernel: these times are not the judge's.
          {"clock_control", "base"},
          {"comparable_with_judge_times", false},
          {"warmup_calls", r.warmup},
          {"profiled_calls", r.status == "ok" ? 1 : 0},
          {"launches_profiled", r.launches_profiled},
          {"kernels", kernels},
          {"other_kernels", r.other_kernels},
          {"roofline", roofline},
          {"notes", r.notes},
          {"raw_csv", r.raw_csv},
          {"seconds", r.seconds},
          {"thresholds",
           {{"bound_sol_pct", kNcuBoundSolPct},
            {"near_peak_pct", kNcuNearPeakPct},
            {"low_occupancy_pct", kNcuLowOccupancyPct},
            {"achieved_share_of_theoretical", kNcuAchievedShare},
            {"small_grid_waves", kNcuSmallGridWaves},
            {"short_kernel_us", kNcuShortKernelUs},
            {"dram_share_of_memory", kNcuDramShareOfMemory}}}};
}

std::string NcuReportText(const NcuReport& r) {
  if (r.status != "ok") {
    std::string text = "ncu: " + r.message + "\n";
    for (const auto& n : r.notes) text += "  note: " + n + "\n";
    return text;
  }
  std::string t = "ncu (Nsight Compute)" + (r.gpu.empty() ? "" : " on " + r.gpu) + ": " +
                  std::to_string(r.kernels.size()) + " kernel" +
                  (r.kernels.size() == 1 ? "" : "s") +
                  " of the candidate in one forward call after " + std::to_string(r.warmup) +
                  " warm-up calls.\n"
                  "Clocks locked to base and every kernel replayed: these times are not comparable "
                  "with utils.profiling's.\n";
  int i = 0;
  for (const NcuKernel& k : r.kernels) {
    t += "[" + std::to_string(++i) + "] " + ShortName(k.name) + " — " + std::to_string(k.launches) +
         " launch" + (k.launches == 1 ? "" : "es") + ", " + Format("%.1f", k.duration_us) + " us\n";
    t += "    grid " + (k.grid.empty() ? "?" : k.grid) + " x block " +
         (k.block.empty() ? "?" : k.block);
    if (k.registers_per_thread)
      t += ", " + Format("%.0f", *k.registers_per_thread) + " regs/thread";
    if (k.shared_bytes_per_block) t += ", " + Bytes(*k.shared_bytes_per_block) + " shared/block";
    t += "\n    throughput: compute " + Pct(k.compute_pct) + " of peak, memory " +
         Pct(k.memory_pct) + " (DRAM " + Pct(k.dram_pct) + ") -> " + k.bound + "-bound\n";
    t += "    occupancy: achieved " + Pct(k.achieved_occupancy_pct) + " of theoretical " +
         Pct(k.theoretical_occupancy_pct) +
         (k.occupancy_limiter.empty() ? "" : " (limiter: " + k.occupancy_limiter + ")");
    if (k.waves_per_sm) t += ", " + Format("%.2f", *k.waves_per_sm) + " waves";
    t += "\n";
    if (k.dram_read_bytes || k.dram_write_bytes) {
      t += "    DRAM: " + Bytes(k.dram_read_bytes.value_or(0)) + " read, " +
           Bytes(k.dram_write_bytes.value_or(0)) + " written";
      double bytes = k.dram_read_bytes.value_or(0) + k.dram_write_bytes.value_or(0);
      if (k.flops && bytes > 0) t += "; " + Format("%.3g", *k.flops / bytes) + " FLOP/byte";
      if (k.l2_hit_pct) t += "; L2 hit " + Pct(k.l2_hit_pct);
      t += "\n";
    }
    t += "    hint: " + k.hint + "\n";
  }
  const NcuRoofline& roof = r.roofline;
  if (roof.available) {
    double share = roof.attainable_flops_per_s > 0
                       ? 100 * roof.achieved_flops_per_s / roof.attainable_flops_per_s
                       : 0;
    t += "roofline (all kernels): " + Format("%.3g", roof.intensity) + " FLOP/byte vs ridge " +
         Format("%.3g", roof.ridge) + " FLOP/byte -> " + roof.side + " side; " +
         FlopRate(roof.achieved_flops_per_s) + " achieved of " +
         FlopRate(roof.attainable_flops_per_s) + " attainable (" + Format("%.0f", share) + "%)\n";
  } else if (!roof.note.empty()) {
    t += "roofline: n/a (" + roof.note + ")\n";
  }
  if (!r.other_kernels.empty()) {
    std::vector<std::string> shown;
    for (size_t n = 0; n < r.other_kernels.size() && n < kOtherKernelsShown; ++n)
      shown.push_back(ShortName(r.other_kernels[n]));
    t += "not the candidate's (left out): " + Join(shown, "; ") +
         (r.other_kernels.size() > kOtherKernelsShown
              ? " (+" + std::to_string(r.other_kernels.size() - kOtherKernelsShown) + " more)"
              : "") +
         "\n";
  }
  for (const auto& n : r.notes) t += "note: " + n + "\n";
  return t;
}

}  // namespace cuda_agent
