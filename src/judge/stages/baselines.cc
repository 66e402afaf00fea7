// baselines.cc — the eager and torch.compile times the reward compares with. From the baseline
// store (store/) when it holds them for this task × GPU × torch × policy × settings, they are
// younger than --baseline-max-age and the device has not drifted since (judge/calibration_drift.h:
// the median of its recent calibrations, not one sample); else measured now — each
// in a process that never saw candidate code, under the exclusive lease — and stored. Looked up
// for this GPU first (OwnGpuKey), then for its model; stored under both.
#include <unistd.h>

#include <ctime>

#include "judge/calibration_drift.h"
#include "judge/stages/stages.h"
#include "store/baseline_store.h"

namespace cuda_agent {
namespace {

Json BaselineSpec(Judgement& j, const std::string& target) {
  Json spec = ProfileSpec(j, target);
  spec.erase("spot_check_calls");
  return spec;
}

// RunBaselineJob gives the go to the job StartBaselineProfiles started for `target`, or runs one
// now.
Result<JobOutcome> RunBaselineJob(Judgement& j, const std::string& target) {
  if (j.early().Started(target)) return j.early().Run(target);
  JobSandbox box = j.ContainTimed({j.dirs().shared, j.dirs().task_file}, {});
  return j.RunJob(target, "profile", BaselineSpec(j, target), j.options().trusted_timeout_s, &box);
}

// Calibrations: this device's recent calibration samples (oldest first, this judgement's last),
// one series per calibration key.
struct Calibrations {
  std::vector<double> copy_us, gemm_us;
  const std::vector<double>& Of(const std::string& key) const {
    return key == "copy_us" ? copy_us : gemm_us;
  }
};

// WhyRemeasure: "" when a stored baseline may be used, else why not. `calibration` is this
// judgement's (taken in the candidate's profile before its code loaded), or null; `recent` the
// device's recent samples, this one's included (judge/calibration_drift.h decides from them).
std::string WhyRemeasure(const JudgeOptions& opt, const std::optional<StoredBaseline>& stored,
                         const Json& calibration, const Calibrations& recent) {
  if (!stored) return "none stored";
  const Json& s = stored->summary;
  int64_t at = s.value("measured_unix", int64_t{0});
  double age_h = (static_cast<double>(std::time(nullptr)) - static_cast<double>(at)) / 3600.0;
  if (at <= 0 || (opt.baseline_max_age_hours > 0 && age_h > opt.baseline_max_age_hours)) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "stored %.1f h ago (--baseline-max-age %.0f h)", age_h,
                  opt.baseline_max_age_hours);
    return at <= 0 ? "stored without a measurement time" : buf;
  }
  if (!calibration.is_object()) return "";  // nothing to compare with (no candidate profile)
  // The reference: the level of the device's samples when the baselines were measured; entries
  // stored before there was one carry only their own job's calibration.
  Json then = s.value("calibration_reference", Json());
  if (!then.is_object()) then = s.value("calibration", Json());
  if (!then.is_object()) return "stored without a device calibration";
  // The GEMM swings more than the copy from one judgement to the next (up to 14% on the H200
  // while the candidates' own times moved < 1%), so it gets twice the bound.
  for (const auto& [key, bound] :
       {std::pair{"copy_us", opt.baseline_drift}, std::pair{"gemm_us", 2 * opt.baseline_drift}}) {
    double before = then.value(key, 0.0);
    if (!(before > 0)) continue;
    CalibrationDrift drift = DecideCalibrationDrift(before, recent.Of(key), bound);
    if (drift.drifted) return drift.Describe(key);
  }
  return "";
}

// RecordCalibration adds this judgement's calibration to the device's history and answers the
// history (empty without a calibration or a store: then nothing is compared).
Calibrations RecordCalibration(Judgement& j, BaselineStore* store, const std::string& device) {
  Calibrations out;
  const Json& calibration = j.facts().calibration;
  if (store == nullptr || !calibration.is_object()) return out;
  CalibrationSample sample{calibration.value("copy_us", 0.0), calibration.value("gemm_us", 0.0)};
  if (Status added = store->AddCalibration(device, sample); !added.ok()) {
    j.facts().notes.push_back("baseline store: " + added.message());
  }
  Result<std::vector<CalibrationSample>> recent =
      store->RecentCalibrations(device, kCalibrationHistory);
  if (!recent.ok() || recent->empty()) {
    out.copy_us = {sample.copy_us};  // at least this judgement's own
    out.gemm_us = {sample.gemm_us};
    return out;
  }
  for (const CalibrationSample& c : recent.value()) {
    out.copy_us.push_back(c.copy_us);
    out.gemm_us.push_back(c.gemm_us);
  }
  return out;
}

// OpenStore opens the baseline store, or notes why it is unavailable (null).
std::unique_ptr<BaselineStore> OpenStore(Judgement& j) {
  const JudgeOptions& opt = j.options();
  if (!opt.use_baseline_store) return nullptr;
  fs::path path = opt.baseline_store.empty() ? j.cache_dir() / "store.sqlite" : opt.baseline_store;
  Result<BaselineStore> store = BaselineStore::Open(path);
  if (!store.ok()) {
    j.facts().notes.push_back("baseline store unavailable: " + store.status().message());
    return nullptr;
  }
  j.result().timing["baseline_store"] = {{"path", path.string()}};
  return std::make_unique<BaselineStore>(std::move(store).value());
}

}  // namespace

BaselineKey BaselineKeyFor(const Toolchain& toolchain, const std::string& task_id,
                           const JudgeOptions& options, const std::string& target) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string device = toolchain.gpu ? toolchain.gpu->name : "cpu:" + std::string(host);
  return {task_id,        device,       toolchain.torch_version, options.policy.name, target,
          options.warmup, options.iters};
}

std::optional<BaselineKey> OwnGpuKey(const BaselineKey& model_key, const Json& calibration) {
  if (!calibration.is_object()) return std::nullopt;
  std::string uuid = calibration.value("device_uuid", std::string());
  if (uuid.empty()) return std::nullopt;
  BaselineKey own = model_key;
  own.device += " @ " + uuid;
  return own;
}

std::optional<StoredBaseline> FindBaseline(BaselineStore& store, const BaselineKey& model_key,
                                           const std::optional<BaselineKey>& own) {
  if (own) {
    if (std::optional<StoredBaseline> mine = store.Get(*own)) return mine;
  }
  return store.Get(model_key);
}

void StartBaselineProfiles(Judgement& j) {
  const JudgeOptions& opt = j.options();
  for (const std::string target : {"eager", "compile"}) {
    if (!(target == "eager" ? opt.eager_baseline : opt.compile_baseline)) continue;
    j.early().Start(target, "profile", BaselineSpec(j, target),
                    j.ContainTimed({j.dirs().shared, j.dirs().task_file}, {}),
                    opt.trusted_timeout_s);
  }
}

Next ProfileBaselines(Judgement& j, bool reuse) {
  const JudgeOptions& opt = j.options();
  JudgeResult& r = j.result();
  std::vector<std::string>& notes = j.facts().notes;
  r.stage = Stage::kProfile;
  auto t = Clock::now();
  std::unique_ptr<BaselineStore> store = OpenStore(j);
  bool noted = false;
  Calibrations recent;
  bool recorded = false;
  for (const std::string target : {"eager", "compile"}) {
    if (!(target == "eager" ? opt.eager_baseline : opt.compile_baseline)) continue;
    BaselineKey key = BaselineKeyFor(j.toolchain(), r.task.value("id", std::string()), opt, target);
    std::optional<BaselineKey> own = OwnGpuKey(key, j.facts().calibration);
    if (!recorded) {  // once per judgement, per GPU where it has a UUID
      recent = RecordCalibration(j, store.get(), own ? own->device : key.device);
      recorded = true;
    }
    std::optional<StoredBaseline> stored =
        store ? FindBaseline(*store, key, own) : std::optional<StoredBaseline>();
    auto use_stored = [&](const StoredBaseline& entry) {
      r.timing[target] = entry.summary;
      r.timing[target]["stored_at"] = entry.measured_at;
      r.timing["baseline_store"][target] = "stored";
    };
    std::string why =
        reuse ? WhyRemeasure(opt, stored, j.facts().calibration, recent) : "asked to re-measure";
    if (why.empty()) {
      use_stored(*stored);
      continue;
    }
    Result<DeviceLease> lease = j.Lease(LeaseMode::kExclusive, "profile_baselines");
    if (!lease.ok()) return j.Internal(lease.status().message());
    // Judgements of one task often start together (an RL step's samples of a prompt): the others
    // measured under this lease while this one waited for it. Read the store again, so the task's
    // baselines are measured once, not once per judgement in flight.
    if (store && reuse) {
      std::optional<StoredBaseline> again = FindBaseline(*store, key, own);
      if (WhyRemeasure(opt, again, j.facts().calibration, recent).empty()) {
        use_stored(*again);
        continue;
      }
    }
    if (stored && reuse && !noted) {
      notes.push_back("baselines re-measured: " + why);
      noted = true;
    }
    Result<JobOutcome> bp = RunBaselineJob(j, target);
    if (!bp.ok()) return j.Internal(bp.status().message());
    j.Track(bp.value());
    if (!bp->Ok()) {
      std::string failure =
          bp->has_result ? bp->Reason() : bp->process.Describe() + ": " + bp->StderrTail(3);
      if (target == "eager") return j.TaskError("eager baseline failed: " + failure);
      r.timing["compile_error"] = failure;
      notes.push_back("torch.compile baseline unavailable: " + failure);
      continue;
    }
    r.timing[target] = ProfileSummary(j, bp.value());
    r.timing[target]["calibration"] = bp->result.value("calibration", Json());
    // What later judgements compare with: the level of the device's recent samples (hysteresis: a
    // judgement right after this one sees the same level), not this job's single sample.
    if (!recent.copy_us.empty()) {
      r.timing[target]["calibration_reference"] = {
          {"copy_us", CalibrationLevel(recent.copy_us)},
          {"gemm_us", CalibrationLevel(recent.gemm_us)},
          {"samples", std::min(recent.copy_us.size(), kCalibrationWindow)}};
    }
    r.timing[target]["measured_unix"] = static_cast<int64_t>(std::time(nullptr));
    if (r.timing.contains("baseline_store"))
      r.timing["baseline_store"][target] = "measured (" + why + ")";
    if (store) {
      std::optional<BaselineKey> measured_on = OwnGpuKey(key, r.timing[target]["calibration"]);
      for (const BaselineKey* k : {&key, measured_on ? &*measured_on : nullptr}) {
        if (k == nullptr) continue;
        if (Status put = store->Put(*k, r.timing[target]); !put.ok()) {
          notes.push_back("baseline store: " + put.message());
        }
      }
    }
  }
  r.stage_seconds["profile_baselines"] = SecondsSince(t);
  return Next::kContinue;
}

}  // namespace cuda_agent
