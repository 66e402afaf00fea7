// profile.cc — the profile stage: the go of the candidate's profile job (started before the build)
// under the exclusive device lease — stream-order fences, spot-checked calls, the device
// calibration — then the kernel audit (judge/library_kernels names cuBLAS/cuDNN kernels) and the
// checks of the timed calls (their outputs, the speed of light).
#include <cstdlib>
#include <future>

#include "common/log.h"
#include "common/subprocess.h"
#include "harness/standby.h"
#include "judge/library_kernels.h"
#include "judge/sampled_checks.h"
#include "judge/stages/stages.h"

namespace cuda_agent {
namespace {

constexpr size_t kKernelsShown = 50;  // kernels listed in the result (all are audited)
constexpr double kOwnShareMin = 0.5;  // own + library kernels' share of the device time (HACKS C3)
// How long a standby profile job waits for a judgement to claim it, and how many may wait for one
// key (about the judgements that run at once on one device).
constexpr double kStandbyWaitS = 300;
constexpr int kStandbysPerKey = 8;
// The profile spec's fields a job reads before its go (jobs/profile.py): all a standby fixes.
constexpr const char* kPreGoFields[] = {"target", "device", "backend_flags"};

enum class KernelOrigin { kOwn = 0, kLibrary = 1, kCopy = 2, kForeign = 3, kTorch = 4 };

const char* KernelOriginName(KernelOrigin o) {
  switch (o) {
    case KernelOrigin::kOwn:
      return "own";
    case KernelOrigin::kLibrary:
      return "library";
    case KernelOrigin::kCopy:
      return "copy";
    case KernelOrigin::kForeign:
      return "foreign";
    case KernelOrigin::kTorch:
      return "torch";
  }
  return "foreign";
}

// Classify: memcpys, memsets and torch's own copy and fill kernels (torch::zeros, contiguous())
// are copies; they count towards the device time but never as the candidate's work. Under a
// policy that lets torch compute (kernelbench) a kernel that is neither the candidate's nor a
// library's nor generated at run time (Triton, Inductor) is torch's eager operators'.
KernelOrigin Classify(const JudgementFacts& facts, const std::string& name,
                      bool torch_compute = false) {
  if (name.rfind("Memcpy", 0) == 0 || name.rfind("Memset", 0) == 0) return KernelOrigin::kCopy;
  if (facts.own_keys.count(KernelKey(name))) return KernelOrigin::kOwn;
  if (IsLibraryKernel(name)) return KernelOrigin::kLibrary;
  if (IsTorchCopyKernel(name)) return KernelOrigin::kCopy;
  if (torch_compute && !IsGeneratedKernel(name)) return KernelOrigin::kTorch;
  return KernelOrigin::kForeign;
}

// AuditKernels (HACKS C1, C3, B11): every device activity of the timed calls is the candidate's
// own kernel, an allowed library kernel (cuBLAS GEMM, cuDNN convolution) or a copy/fill (under
// kernelbench also torch's eager kernels, never generated ones); every timed call runs an own
// kernel; own and library (and torch's) kernels carry most of the device time; under `strict` an
// fp32 task uses no TF32/half library kernel.
Next AuditKernels(Judgement& j, const Json& table, const Json& per_call) {
  const JudgeOptions& opt = j.options();
  const bool torch_compute = opt.policy.rules.torch_compute;
  JudgementFacts& facts = j.facts();
  JudgeResult& r = j.result();
  Json shown = Json::array();
  for (const auto& k : table) {
    if (shown.size() >= kKernelsShown) break;
    Json entry = k;
    entry["origin"] = KernelOriginName(Classify(facts, k.value("name", ""), torch_compute));
    shown.push_back(entry);
  }
  r.kernels = shown;
  if (opt.device != Device::kCuda) return Next::kContinue;
  if (facts.inspection.source == "none") {
    facts.notes.push_back("kernel audit skipped: " + facts.inspection.note);
    return Next::kContinue;
  }
  double by_origin[5] = {0, 0, 0, 0, 0};
  for (const auto& k : table) {
    std::string name = k.value("name", "");
    KernelOrigin origin = Classify(facts, name, torch_compute);
    by_origin[static_cast<int>(origin)] += k.value("total_us", 0.0);
    if (origin == KernelOrigin::kForeign && torch_compute) {
      return j.Fail(Stage::kProfile, "kernel_audit",
                    "kernel audit: " + name +
                        " ran during the timed calls and was generated at run time (Triton, "
                        "torch.compile); under --policy kernelbench only the candidate's own "
                        "kernels and torch's eager operators may run");
    }
    if (origin == KernelOrigin::kForeign) {
      return j.Fail(Stage::kProfile, "kernel_audit",
                    "kernel audit: " + name +
                        " ran during the timed calls but is neither one of the "
                        "candidate's kernels nor a cuBLAS/cuDNN kernel");
    }
    if (origin == KernelOrigin::kLibrary && opt.policy.reject_reduced_precision_in_fp32 &&
        facts.Fp32Task() && IsReducedPrecisionLibraryKernel(name)) {
      return j.Fail(Stage::kProfile, "precision_downgrade",
                    "precision downgrade: library kernel " + name +
                        " computes on tf32/half inputs in "
                        "an fp32 task; the " +
                        opt.policy.name + " policy requires fp32 arithmetic");
    }
  }
  double total = by_origin[0] + by_origin[1] + by_origin[2] + by_origin[3] + by_origin[4];
  double own = by_origin[static_cast<int>(KernelOrigin::kOwn)];
  double library = by_origin[static_cast<int>(KernelOrigin::kLibrary)];
  double torch_us = by_origin[static_cast<int>(KernelOrigin::kTorch)];
  r.timing["kernel_audit"] = {{"own_us", own},
                              {"library_us", library},
                              {"copy_us", by_origin[static_cast<int>(KernelOrigin::kCopy)]},
                              {"own_kernels_in_binary", facts.own_keys.size()}};
  if (torch_compute) r.timing["kernel_audit"]["torch_us"] = torch_us;
  for (size_t i = 0; i < per_call.size(); ++i) {
    bool ran_own = false;
    for (const auto& name : per_call[i]) {
      if (name.is_string() &&
          Classify(facts, name.get<std::string>(), torch_compute) == KernelOrigin::kOwn)
        ran_own = true;
    }
    if (!ran_own) {
      return j.Fail(Stage::kProfile, "kernel_audit",
                    "kernel audit: timed call " + std::to_string(i + 1) +
                        " ran no own kernel of the candidate's extension (the work must be done by "
                        "the candidate's kernels" +
                        std::string(torch_compute ? "; under --policy kernelbench torch's eager "
                                                    "operators may do only part of it)"
                                                  : ")"));
    }
  }
  // Under kernelbench torch's eager kernels compute too: copies and fills may still not pad the
  // time (HACKS C3).
  const double computing = own + library + (torch_compute ? torch_us : 0);
  if (total > 0 && computing < kOwnShareMin * total) {
    char buf[240];
    std::snprintf(
        buf, sizeof(buf),
        "kernel audit: the candidate's own and library kernels%s carry only %.0f%% of the "
        "device time (copies and fills carry the rest; at least %.0f%% is required)",
        torch_compute ? " and torch's" : "", 100 * computing / total, 100 * kOwnShareMin);
    return j.Fail(Stage::kProfile, "kernel_audit", buf);
  }
  return Next::kContinue;
}

// CheckSpotOutputs: the outputs of the secretly chosen timed calls match the reference's outputs
// for the same inputs (HACKS A5/A6).
Next CheckSpotOutputs(Judgement& j) {
  const JudgementFacts& facts = j.facts();
  if (facts.spot_expected.empty()) return Next::kContinue;
  std::vector<std::string> expected, actual;
  std::vector<int> calls;
  for (const auto& e : facts.spot_expected) {
    int call = e.value("call", -1);
    for (const auto& c : facts.candidate_spots) {
      if (c.value("call", -2) != call) continue;
      expected.push_back(e.value("key", ""));
      actual.push_back(c.value("output_path", ""));
      calls.push_back(call);
    }
  }
  if (calls.size() != facts.spot_expected.size()) {
    return j.Internal("the candidate profile did not write the spot-checked timed outputs");
  }
  Result<DeviceLease> lease = j.Lease(LeaseMode::kShared, "compare_spots");
  if (!lease.ok()) return j.Internal(lease.status().message());
  Result<JobOutcome> cmp = ServedCompare(j, "compare_spots", expected, actual);
  if (!cmp.ok()) return j.Internal(cmp.status().message());
  if (!cmp->has_result) return j.Internal("spot-check compare: " + cmp->process.Describe());
  j.result().timing["spot_checks"] = calls.size();
  if (cmp->Ok()) return Next::kContinue;
  std::string why = cmp->Reason();
  const Json checks = cmp->result.value("checks", Json::array());
  for (size_t i = 0; i < checks.size() && i < calls.size(); ++i) {
    if (checks[i].value("ok", true)) continue;
    why = "timed call " + std::to_string(calls[i] + 1) + ": " + checks[i].value("reason", why);
    break;
  }
  return j.Fail(Stage::kProfile, "timed_mismatch",
                "timed outputs differ from the reference: " + why);
}

// CheckTimedFingerprints: every warm-up and timed call on an input set the reference fingerprinted
// gave an output within its set's bounds (judge/sampled_checks.h; HACKS B14, A5/A6). Compared
// before the spot checks: it needs no comparison job.
Next CheckTimedFingerprints(Judgement& j) {
  const Json& section = j.facts().sampled_expected;
  if (!section.is_object() || !section.contains("timed")) return Next::kContinue;
  const JudgeOptions& opt = j.options();
  j.result().timing["fingerprinted_calls"] = j.facts().candidate_fingerprints.size();
  std::optional<std::string> why =
      FirstTimedMismatch(section["timed"], j.facts().candidate_fingerprints, opt.warmup, opt.iters);
  if (!why) return Next::kContinue;
  return j.Fail(Stage::kProfile, "timed_mismatch",
                "timed outputs differ from the reference: " + *why);
}

// CheckSpeedOfLight: no time may beat the bytes the task must move at the measured peak bandwidth
// (HACKS A10).
Next CheckSpeedOfLight(Judgement& j) {
  JudgeResult& r = j.result();
  const Json& min_bytes = j.facts().min_bytes;
  const Json bandwidth = j.toolchain().raw.value("measured_peak_bandwidth_bytes_per_s", Json());
  const Json cand = r.timing["candidate"]["time_us"];
  if (!bandwidth.is_number() || !min_bytes.is_number() || !cand.is_number() ||
      bandwidth.get<double>() <= 0) {
    return Next::kContinue;
  }
  // Half the time the bytes take at peak: outputs may still sit in L2 when the kernel ends
  // (write-back), so only a time far below the physics is called impossible.
  double floor_us = 0.5 * min_bytes.get<double>() / bandwidth.get<double>() * 1e6;
  r.timing["speed_of_light_us"] = floor_us;
  if (cand.get<double>() >= floor_us) return Next::kContinue;
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "impossible time: %.2f us is below %.2f us, half the time the task's %.0f "
                "bytes take at the measured peak bandwidth",
                cand.get<double>(), floor_us, min_bytes.get<double>());
  return j.Fail(Stage::kProfile, "impossible_time", buf);
}

}  // namespace

void StartTiming(Judgement& j) {
  j.result().timing = {{"measure", j.options().device == Device::kCuda ? "device" : "wall"}};
}

Json ProfileSpec(Judgement& j, const std::string& target) {
  const JudgeOptions& opt = j.options();
  const TimingSecrets& secrets = j.Secrets();
  const BackendFlags& flags = target == "candidate" ? opt.policy.candidate : opt.policy.baselines;
  return {{"target", target},
          {"device", j.result().device},
          {"task_path", j.dirs().task_file.string()},
          {"backend_flags", flags.ToJson()},
          {"init_inputs_path", j.dirs().InitInputs()},
          {"state_dict_path", j.dirs().StateDict()},
          {"seed", secrets.seed},
          {"warmup", opt.warmup},
          {"iters", opt.iters},
          {"flush_l2", true},
          {"spot_check_calls", secrets.spot_calls}};
}

Json ProfileSummary(const Judgement& j, const JobOutcome& job) {
  const Json& res = job.result;
  Json s = Json::object();
  for (const char* key :
       {"median_wall_us", "median_device_us", "mean_device_us", "wall_us", "device_us", "iters",
        "warmup", "num_threads", "compile_seconds", "phase_seconds", "profiler_seconds"}) {
    if (res.contains(key)) s[key] = res[key];
  }
  s["time_us"] = j.options().device == Device::kCuda ? s.value("median_device_us", Json())
                                                     : s.value("median_wall_us", Json());
  return s;
}

namespace {

// ClaimStandby makes a standby profile job (harness/standby.h) the early job `profile_candidate`
// when one waits for this judgement's key, and offers one for a later judgement either way. False
// when none was claimed. `at_then`: those of `readable` staged for it at its second go.
bool ClaimStandby(Judgement& j, const Json& spec, const std::vector<fs::path>& readable,
                  const std::vector<fs::path>& at_then, const fs::path& writable,
                  const JobSandbox& box) {
  if (!StandbyWanted(j.options())) return false;
  StandbyJob job{"profile", Json::object(), j.ContainTimed({}, {})};
  for (const char* field : kPreGoFields) job.spec[field] = spec.at(field);
  Result<std::shared_ptr<Standby>> claimed = Standby::Claim(j.env(), job);
  Result<bool> offered =
      OfferStandby(j.env(), job, j.cache_dir() / "standby", kStandbyWaitS, kStandbysPerKey);
  if (!offered.ok()) LogDebug("no standby profile job offered: " + offered.status().message());
  if (!claimed.ok()) LogWarn("claiming a standby profile job: " + claimed.status().message());
  if (!claimed.ok() || !claimed.value()) return false;
  std::shared_ptr<Standby> standby = std::move(claimed).value();
  const double timeout_s = j.options().candidate_timeout_s;
  const double started = j.Elapsed();
  const Json waited = {{"standby", true}, {"standby_waited_s", standby->WaitedSeconds()}};
  auto go = [standby, spec, readable, writable, at_then](const Json& fields) {
    Json full = spec;
    full.update(fields);
    return standby->Go(full, readable, writable, at_then);
  };
  auto outcome = std::async(std::launch::async, [&j, standby, timeout_s, started, waited]() {
    Result<JobOutcome> out = standby->Wait(kStandbyWaitS + timeout_s);
    j.RecordJob("profile_candidate", "profile", started, out, waited);
    return out;
  });
  std::function<Status()> time;
  if (OneCandidateProcess(j)) time = [standby]() { return standby->Time(); };
  EarlyJobs::AdoptedJob adopted{std::move(go),   [standby]() { return standby->Then(); },
                                std::move(time), std::move(outcome),
                                standby->pid(),  standby->Marks()};
  j.early().Adopt("profile_candidate", "profile", spec, box, timeout_s, std::move(adopted),
                  ProfileMarks(j));
  return true;
}

}  // namespace

EarlyMarks ProfileMarks(const Judgement& j) {
  return {j.dirs().spot_candidate, /*prepares=*/true, /*checks=*/OneCandidateProcess(j),
          j.dirs().spot_candidate};
}

void StartCandidateProfile(Judgement& j) {
  const WorkDirs& dirs = j.dirs();
  Json spec = ProfileSpec(j, "candidate");
  spec["candidate_dir"] = fs::absolute(dirs.src).string();
  spec["extension_dir"] = fs::absolute(dirs.build).string();
  spec["policy_rules"] = j.options().policy.rules.ToJson();
  spec["output_dir"] = dirs.spot_candidate.string();
  std::vector<fs::path> readable = {dirs.shared, dirs.src, dirs.build, dirs.task_file};
  JobSandbox box = j.ContainTimed(readable, {dirs.spot_candidate});
  // The candidate's folders are staged for a standby at its second go: its first may come while
  // the build still writes them (PrepareProfileBesideTheBuild).
  if (!ClaimStandby(j, spec, readable, {dirs.src, dirs.build}, dirs.spot_candidate, box)) {
    j.early().Start("profile_candidate", "profile", spec, box, j.options().candidate_timeout_s,
                    ProfileMarks(j));
  }
}

bool PrepareProfileBesideTheBuild(Judgement& j, const Json& answer, bool alone) {
  if (!OneCandidateProcess(j)) return alone && j.early().Prepare("profile_candidate");
  return j.early().Prepare("profile_candidate",
                           CheckFields(j, answer.value("input_scales", Json::array()),
                                       answer.value("input_shifts", Json::array()),
                                       answer.value("sampled_checks", Json())));
}

ProfilePreparation::ProfilePreparation(Judgement& j) : j_(j) {
  given_ = j.early().Prepare("profile_candidate");
}

ProfilePreparation::~ProfilePreparation() {
  if (given_)
    j_.result().stage_seconds["profile_prepared_wait"] =
        j_.early().WaitPrepared("profile_candidate");
}

Next ProfileCandidate(Judgement& j) {
  JudgeResult& r = j.result();
  r.stage = Stage::kProfile;
  if (!j.early().Started("profile_candidate")) StartCandidateProfile(j);
  // Its start-up (a CUDA context, seconds of profiler set-up) needs no lease: the exclusive one,
  // which every other judgement waits for, covers only its work from the go.
  r.stage_seconds["profile_ready_wait"] = j.early().WaitReady("profile_candidate");
  Result<DeviceLease> lease = j.Lease(LeaseMode::kExclusive, "profile_candidate");
  if (!lease.ok()) return j.Internal(lease.status().message());
  auto t = Clock::now();
  Result<JobOutcome> cp = j.early().Run("profile_candidate");
  r.stage_seconds["profile_candidate"] = SecondsSince(t);
  if (!cp.ok()) return j.Internal(cp.status().message());
  j.Track(cp.value());
  if (cp->has_result) RecordWeights(r, cp->result);
  if (!cp->Ok()) {
    auto [kind, why] = DescribeCandidateFailure(cp.value(), "profiling");
    return j.Fail(Stage::kProfile, kind, why);
  }
  r.timing["candidate"] = ProfileSummary(j, cp.value());
  j.facts().candidate_spots = cp->result.value("spot_checks", Json::array());
  j.facts().candidate_fingerprints = cp->result.value("timed_fingerprints", Json::array());
  j.facts().calibration = cp->result.value("calibration", Json());
  r.timing["calibration"] = j.facts().calibration;  // what a stored baseline's is compared with
  if (!r.timing["candidate"]["time_us"].is_number()) {
    return j.Internal("the candidate profile reported no time");
  }
  return AuditKernels(j, cp->result.value("kernels", Json::array()),
                      cp->result.value("call_kernels", Json::array()));
}

Next CheckTimedCalls(Judgement& j) {
  auto t = Clock::now();
  if (CheckTimedFingerprints(j) == Next::kStop) return Next::kStop;
  if (CheckSpotOutputs(j) == Next::kStop) return Next::kStop;
  if (CheckSpeedOfLight(j) == Next::kStop) return Next::kStop;
  j.result().stage_seconds["timed_checks"] = SecondsSince(t);
  return Next::kContinue;
}

}  // namespace cuda_agent
