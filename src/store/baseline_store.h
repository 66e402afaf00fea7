// baseline_store.h — eager and torch.compile baseline timings, kept per task × device (GPU model) ×
// torch version × precision policy × timing settings, so that a judgement need not re-measure them
// for every candidate (issue 5); and each device's recent calibrations, from which the judge
// decides whether the device moved since (judge/calibration_drift.h).
//
//   BaselineKey key{task.id, "NVIDIA H200", "2.11.0+cu130", "strict", "compile", 5, 20};
//   if (auto hit = store.Get(key)) UseStoredTiming(*hit);
//   else store.Put(key, measured_summary);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "store/database.h"
#include "store/migrations.h"

namespace cuda_agent {

struct BaselineKey {
  std::string task_id;
  std::string device;  // GPU model name, or "cpu:<host>"
  std::string torch_version;
  std::string policy;
  std::string target;  // eager | compile
  int warmup = 0;
  int iters = 0;
};

struct StoredBaseline {
  Json summary;             // the JudgeResult timing entry as measured (time_us, device_us, ...)
  std::string measured_at;  // UTC, ISO 8601
};

// BaselineEntry is one stored baseline with its key: a line of an exported JSONL file.
struct BaselineEntry {
  BaselineKey key;
  StoredBaseline stored;
};

// CalibrationSample: one judgement's device calibration (timing.calibrate: a fixed copy and GEMM).
struct CalibrationSample {
  double copy_us = 0;
  double gemm_us = 0;
};

class BaselineStore {
 public:
  // Open opens (or creates) the file and migrates the "baselines" schema (store/migrations.h; the
  // file is shared with the bench results); a file a newer cuda-agent migrated is refused.
  static Result<BaselineStore> Open(const fs::path& path);
  static const std::vector<Migration>& Migrations();
  static constexpr const char* kSchema = "baselines";

  std::optional<StoredBaseline> Get(const BaselineKey& key);
  Status Put(const BaselineKey& key, const Json& summary);
  Status Remove(const BaselineKey& key);
  const fs::path& path() const { return db_.path(); }

  // List returns every stored baseline in key order (for export).
  Result<std::vector<BaselineEntry>> List();
  // Import stores an entry measured elsewhere, keeping its measured_at (replacing the same key).
  Status Import(const BaselineEntry& entry);

  // AddCalibration records a judgement's calibration of `device` (a BaselineKey's device, per GPU
  // where it has a UUID); the last kKeptCalibrations per device are kept.
  Status AddCalibration(const std::string& device, const CalibrationSample& sample);
  // RecentCalibrations: the device's last `n` samples, oldest first.
  Result<std::vector<CalibrationSample>> RecentCalibrations(const std::string& device, size_t n);
  static constexpr size_t kKeptCalibrations = 64;

 private:
  explicit BaselineStore(Database db) : db_(std::move(db)) {}
  Status Write(const BaselineKey& key, const Json& summary, const std::string& measured_at);
  Database db_;
};

// BaselineEntryToJson / BaselineEntryFromJson: the exchange format of `cuda-agent baselines export`
// and `import`, one object per line: {"task_id", "device", "torch_version", "policy", "target",
// "warmup", "iters", "summary", "measured_at"}.
Json BaselineEntryToJson(const BaselineEntry& entry);
Result<BaselineEntry> BaselineEntryFromJson(const Json& line);

}  // namespace cuda_agent
