// verify.cc — the verify stage: the candidate's checks in an untrusted process, which makes the
// reference's inputs from the check seeds and never gets a path to the expected outputs (check 1
// is repeated under another allocator state) — the candidate's profile job, which times it next,
// in a full judgement; the `candidate` job, an early job started before the build, when only
// verification is asked for or one process is switched off — and the comparison, answered by the
// served reference job (trusted; the policy's tolerance; on the GPU). `--sanitize` runs check 1
// once more under compute-sanitizer.
#include "common/subprocess.h"
#include "judge/sampled_checks.h"
#include "judge/stages/stages.h"

namespace cuda_agent {
namespace {

// CandidateSpec: the `candidate` job of verification. Its input transforms are the reference's
// (it falls back to 1 and 0 where a task does not allow one): given at the go.
Json CandidateSpec(Judgement& j) {
  const WorkDirs& dirs = j.dirs();
  return {{"device", j.result().device},
          {"candidate_dir", fs::absolute(dirs.src).string()},
          {"extension_dir", fs::absolute(dirs.build).string()},
          {"init_inputs_path", dirs.InitInputs()},
          {"state_dict_path", dirs.StateDict()},
          {"task_path", dirs.task_file.string()},
          {"check_seeds", j.facts().check_seeds},
          {"output_dir", dirs.outputs.string()},
          {"repeat_first_check", true},
          {"backend_flags", j.options().policy.candidate.ToJson()},
          {"policy_rules", j.options().policy.rules.ToJson()}};
}

// VerifyPairs: the keys of the expected outputs the served reference kept and the candidate's
// output files verification compares; the last pair is the repeat of check 0 under another
// allocator state (HACKS B12).
std::pair<std::vector<std::string>, std::vector<std::string>> VerifyPairs(Judgement& j) {
  const int checks = j.options().checks;
  std::vector<std::string> expected, actual;
  for (int i = 0; i <= checks; ++i) {
    expected.push_back("check " + std::to_string(i < checks ? i : 0));
    actual.push_back((j.dirs().outputs / ("output_" + std::to_string(i) + ".pt")).string());
  }
  return {expected, actual};
}

// FailedCheckLabel names a failed check for the reason: "check 3/5 (inputs x 8 +0)" or the repeat.
std::string FailedCheckLabel(Judgement& j, int index) {
  const int checks = j.options().checks;
  const Json& scales = j.facts().input_scales;
  const Json& shifts = j.facts().input_shifts;
  std::string label = index == checks
                          ? "repeat of check 1 (another allocator state)"
                          : "check " + std::to_string(index + 1) + "/" + std::to_string(checks);
  double scale = index < static_cast<int>(scales.size()) && scales[index].is_number()
                     ? scales[index].get<double>()
                     : 1.0;
  double shift = index < static_cast<int>(shifts.size()) && shifts[index].is_number()
                     ? shifts[index].get<double>()
                     : 0.0;
  if (scale != 1.0 || shift != 0.0) {
    char buf[80];
    std::snprintf(buf, sizeof(buf), " (inputs x %g %+g)", scale, shift);
    label += buf;
  }
  return label;
}

// SanitizerReport: the sanitizer's findings, the lines starting with "=========" on its stdout.
std::string SanitizerReport(const std::string& out) {
  std::string report;
  for (size_t pos = 0; pos < out.size() && report.size() < 600;) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::string line = out.substr(pos, eol - pos);
    if (line.rfind("=========", 0) == 0 && line.find("COMPUTE-SANITIZER") == std::string::npos &&
        line.size() > 10) {
      report += (report.empty() ? "" : " | ") + line.substr(10);
    }
    pos = eol + 1;
  }
  return report;
}

// Sanitize runs check 1 again under compute-sanitizer (options.sanitizer), with torch's caching
// allocator off so that every buffer has exact bounds (HACKS B12: races, out-of-bounds accesses,
// uninitialised reads that passed by luck).
Next Sanitize(Judgement& j, Json spec) {
  const JudgeOptions& opt = j.options();
  JudgeResult& r = j.result();
  if (opt.sanitizer.empty() || opt.device != Device::kCuda) return Next::kContinue;
  auto t = Clock::now();
  const std::string& cuda_home = j.toolchain().cuda_home;
  fs::path tool = fs::path(cuda_home) / "bin" / "compute-sanitizer";
  if (!fs::exists(tool)) {
    Result<std::string> found = FindExecutable("compute-sanitizer");
    if (!found.ok())
      return j.Internal("--sanitize: compute-sanitizer not found under " + cuda_home);
    tool = found.value();
  }
  const WorkDirs& dirs = j.dirs();
  fs::path out = dirs.root / "sanitize";
  fs::create_directories(out);
  spec["check_seeds"] = Json::array({spec["check_seeds"][0]});
  spec["input_scales"] = Json::array({spec["input_scales"][0]});
  spec["input_shifts"] = Json::array({spec["input_shifts"][0]});
  spec["output_dir"] = out.string();
  spec["repeat_first_check"] = false;
  spec.erase("sampled_checks");  // check 1 alone, as the sanitizer's run is slow
  JobSandbox box = j.Contain({dirs.shared, dirs.src, dirs.build, dirs.task_file}, {out});
  constexpr int kSanitizerExit = 86;
  box.wrapper = {
      tool.string(),   "--tool", opt.sanitizer, "--error-exitcode", std::to_string(kSanitizerExit),
      "--print-limit", "10"};
  box.env_set = {"PYTORCH_NO_CUDA_MEMORY_CACHING=1"};
  Result<JobOutcome> job =
      j.RunJob("sanitizer", "candidate", spec, opt.candidate_timeout_s * 4, &box);
  r.stage_seconds["sanitize"] = SecondsSince(t);
  if (!job.ok()) return j.Internal(job.status().message());
  j.Track(job.value());
  const RunResult& p = job->process;
  size_t errors_at = p.out.find("ERROR SUMMARY:");
  r.verify["sanitizer"] = {
      {"tool", opt.sanitizer},
      {"exit", p.exit_code},
      {"summary", errors_at == std::string::npos ? "" : p.out.substr(errors_at, 40)}};
  if (!p.timed_out && p.term_signal == 0 && p.exit_code == kSanitizerExit) {
    r.correct = false;
    return j.Fail(Stage::kVerify, "sanitizer",
                  "compute-sanitizer " + opt.sanitizer +
                      " found errors in check 1: " + SanitizerReport(p.out));
  }
  if (job->has_result && job->ErrorKind() == "internal") {
    return j.Internal("the sanitizer run (" + opt.sanitizer + "): " + job->Reason());
  }
  if (!job->Ok()) {
    r.correct = false;
    auto [kind, why] =
        DescribeCandidateFailure(job.value(), "the sanitizer run (" + opt.sanitizer + ")");
    return j.Fail(Stage::kVerify, kind, why);
  }
  return Next::kContinue;
}

}  // namespace

std::pair<std::string, std::string> DescribeCandidateFailure(const JobOutcome& job,
                                                             const std::string& phase) {
  const RunResult& p = job.process;
  if (job.oom_killed) return {"oom", "ran out of memory (the job's limit) during " + phase};
  if (p.timed_out) return {"timeout", p.Describe() + " during " + phase};
  if (p.term_signal != 0) {
    std::string tail = job.StderrTail(3);
    return {"crash", "crashed: " + p.Describe() + " during " + phase +
                         (tail.empty() ? "" : " (" + tail + ")")};
  }
  if (job.has_result) {
    std::string kind = job.ErrorKind().empty() ? "failed" : job.ErrorKind();
    return {kind, phase + " failed: " + job.Reason()};
  }
  return {"crash", phase + " process ended with " + p.Describe() + ": " + job.StderrTail(5)};
}

void RecordWeights(JudgeResult& r, const Json& loaded) {
  if (!loaded.is_object()) return;
  for (const char* key : {"weights", "weights_renamed", "weights_own", "weights_not_loaded"}) {
    if (loaded.contains(key)) r.verify[key] = loaded[key];
  }
}

Result<JobOutcome> ServedCompare(Judgement& j, const std::string& name,
                                 const std::vector<std::string>& keys,
                                 const std::vector<std::string>& actual) {
  ServedJob* served = j.served_reference();
  if (served == nullptr) return Internal("no served reference job to compare with");
  const double asked = j.Elapsed();
  // A kept reference sees only its own folders: the candidate's outputs are linked there.
  const std::vector<std::string> paths =
      j.kept_reference() ? StageForKeptReference(*j.kept_reference(), name, actual) : actual;
  if (Status go = served->Go(name, {{"expected_keys", keys}, {"actual_paths", paths}}); !go.ok())
    return go;
  Result<JobOutcome> out = served->Await(name, j.options().trusted_timeout_s);
  j.RecordJob(name, "reference", asked, out, {{"served", true}});
  return out;
}

void StartVerifyJobs(Judgement& j) {
  const WorkDirs& dirs = j.dirs();
  // The candidate sees its weights, the task, its sources and extension; never dirs.expected_dir.
  j.early().Start(
      "candidate", "candidate", CandidateSpec(j),
      j.ContainUntimed({dirs.shared, dirs.src, dirs.build, dirs.task_file}, {dirs.outputs}),
      j.options().candidate_timeout_s, {.dir = dirs.outputs, .prepares = true});
}

bool OneCandidateProcess(const Judgement& j) { return j.options().until == Stage::kDone; }

Json CheckFields(const Judgement& j, const Json& input_scales, const Json& input_shifts,
                 const Json& sampled) {
  return {{"check_seeds", j.facts().check_seeds},
          {"input_scales", input_scales},
          {"input_shifts", input_shifts},
          {"repeat_first_check", true},
          {"sampled_checks", SampledCheckFields(j, sampled)}};
}

Json SampledCheckFields(const Judgement& j, const Json& reference_section) {
  const bool any = reference_section.is_object();
  const Json& timed = any ? reference_section.value("timed", Json::object()) : Json::object();
  const size_t timed_sets = timed.value("fingerprints", Json::array()).size();
  return {{"seed", j.facts().sampled_seed},
          {"count", any ? reference_section.value("count", 0) : 0},
          {"timed_sets", timed_sets}};
}

std::optional<double> PrepareCandidate(Judgement& j, const Json& answer) {
  const Json transforms = {
      {"input_scales", answer.value("input_scales", Json::array())},
      {"input_shifts", answer.value("input_shifts", Json::array())},
      {"sampled_checks", SampledCheckFields(j, answer.value("sampled_checks", Json()))}};
  if (!j.early().Prepare("candidate", transforms)) return std::nullopt;
  return j.early().WaitPrepared("candidate");
}

namespace {

// CheckInCandidateJob: verification's own `candidate` job runs the checks (under the caller's
// shared lease), writing its outputs into dirs.outputs.
Next CheckInCandidateJob(Judgement& j, const Json& transforms) {
  Result<JobOutcome> cand = j.early().Run("candidate", transforms);
  if (!cand.ok()) return j.Internal(cand.status().message());
  j.Track(cand.value());
  if (cand->has_result) RecordWeights(j.result(), cand->result);
  if (cand->Ok()) return Next::kContinue;
  auto [kind, why] = DescribeCandidateFailure(cand.value(), "verification");
  return j.Fail(Stage::kVerify, kind, why);
}

// CheckInProfileJob: the candidate's profile job runs the checks (under the caller's shared lease)
// and waits for the go of its timing (ProfileCandidate); its outputs are moved into dirs.outputs,
// where the served reference reads them (`actual`), out of the folder the candidate's process may
// still write.
Next CheckInProfileJob(Judgement& j, const Json& transforms,
                       const std::vector<std::string>& actual) {
  Json fields = CheckFields(j, transforms["input_scales"], transforms["input_shifts"],
                            j.facts().sampled_expected);
  Result<bool> checked = j.early().Check("profile_candidate", fields);
  if (!checked.ok()) return j.Internal(checked.status().message());
  if (!checked.value()) {
    Result<JobOutcome> end = j.early().Run("profile_candidate");
    if (!end.ok()) return j.Internal(end.status().message());
    j.Track(end.value());
    if (end->has_result) RecordWeights(j.result(), end->result);
    if (end->Ok())
      return j.Internal("the candidate's profile job ended without marking its checks");
    auto [kind, why] = DescribeCandidateFailure(end.value(), "verification");
    return j.Fail(Stage::kVerify, kind, why);
  }
  const fs::path from = j.early().Outputs("profile_candidate");
  if (Result<Json> loaded = ReadJsonFile(from / kWeightsFile); loaded.ok())
    RecordWeights(j.result(), loaded.value());
  std::vector<std::string> moved = actual;
  moved.push_back((j.dirs().outputs / kSampledChecksFile).string());
  for (const std::string& to : moved) {
    const fs::path file = from / fs::path(to).filename();
    std::error_code ec;
    fs::rename(file, to, ec);
    if (ec) {
      // Another file system: copied. A file the job did not write fails its comparison.
      ec.clear();
      fs::copy_file(file, to, fs::copy_options::overwrite_existing, ec);
    }
  }
  return Next::kContinue;
}

// CompareSampled: the candidate's sampled checks against the reference's (judge/sampled_checks.h).
Next CompareSampled(Judgement& j) {
  const Json& expected = j.facts().sampled_expected;
  if (!expected.is_object()) return Next::kContinue;
  // The timed sets' fingerprints are compared after the profile (CheckTimedCalls).
  j.result().verify["sampled_checks"] = {
      {"count", expected.value("count", 0)},
      {"timed_sets", SampledCheckFields(j, expected)["timed_sets"]},
      {"reference_seconds", expected.value("seconds", 0.0)}};
  if (expected.value("count", 0) == 0) return Next::kContinue;
  const fs::path file = j.dirs().outputs / kSampledChecksFile;
  Result<Json> actual = ReadJsonFile(file);
  std::optional<std::string> why =
      actual.ok() ? FirstSampledMismatch(expected, actual.value())
                  : std::optional<std::string>("the candidate's process wrote no sampled checks (" +
                                               actual.status().message() + ")");
  if (!why) return Next::kContinue;
  j.result().correct = false;
  return j.Fail(Stage::kVerify, "sampled_mismatch", "verification failed: " + *why);
}

}  // namespace

Next Verify(Judgement& j) {
  const JudgeOptions& opt = j.options();
  JudgeResult& r = j.result();
  const JudgementFacts& facts = j.facts();
  r.stage = Stage::kVerify;  // the build, which ran after the reference started, left kBuild
  auto t = Clock::now();
  const bool one_process = OneCandidateProcess(j);
  const std::string job = one_process ? "profile_candidate" : "candidate";
  if (!one_process && !j.early().Started("candidate")) StartVerifyJobs(j);
  // Its start-up needs no lease (and holds none); its preparation was usually done under the
  // reference's (PrepareCandidate, PrepareProfileBesideTheBuild): then only the second go is
  // given here.
  r.stage_seconds["verify_ready_wait"] = j.early().WaitReady(job);
  Result<DeviceLease> lease = j.Lease(LeaseMode::kShared, "verify");
  if (!lease.ok()) return j.Internal(lease.status().message());
  // The candidate makes its inputs from the check seeds, as the reference did (inputs.py).
  Json transforms = {{"input_scales", facts.input_scales},
                     {"input_shifts", facts.input_shifts},
                     {"sampled_checks", SampledCheckFields(j, facts.sampled_expected)}};
  auto [expected, actual] = VerifyPairs(j);
  std::optional<ProfilePreparation> preparation;  // done before the lease is released
  if (!one_process) preparation.emplace(j);
  const Next checked =
      one_process ? CheckInProfileJob(j, transforms, actual) : CheckInCandidateJob(j, transforms);
  if (checked == Next::kStop) {
    r.stage_seconds["verify"] = SecondsSince(t);
    return Next::kStop;
  }
  Result<JobOutcome> cmp = ServedCompare(j, "compare", expected, actual);
  if (!cmp.ok()) return j.Internal(cmp.status().message());
  r.stage_seconds["verify"] = SecondsSince(t);
  if (!cmp->has_result) {
    return j.Internal("the reference job's comparison: " + cmp->process.Describe() + ": " +
                      cmp->StderrTail(5));
  }
  const Json loaded = r.verify;  // RecordWeights's, from the candidate's process
  r.verify = {{"ok", cmp->Ok()},
              {"checks", cmp->result.value("checks", Json::array())},
              {"num_checks", opt.checks},
              {"output_signature", facts.output_signature},
              {"input_scales", facts.input_scales},
              {"input_shifts", facts.input_shifts},
              {"float_dtypes", facts.float_dtypes},
              {"repeat_index", opt.checks}};
  RecordWeights(r, loaded);
  if (!cmp->Ok()) {
    std::string why = cmp->Reason();
    for (const auto& c : r.verify["checks"]) {
      if (c.value("ok", true)) continue;
      why = FailedCheckLabel(j, c.value("index", 0)) + ": " + c.value("reason", why);
      break;
    }
    std::string kind = cmp->ErrorKind().empty() ? "mismatch" : cmp->ErrorKind();
    return j.Fail(Stage::kVerify, kind, "verification failed: " + why);
  }
  if (CompareSampled(j) == Next::kStop) return Next::kStop;
  r.correct = true;
  Json cand_spec = CandidateSpec(j);
  cand_spec.update(transforms);
  if (Next n = Sanitize(j, cand_spec); n == Next::kStop) return n;
  if (opt.until != Stage::kVerify) return Next::kContinue;
  r.reason = "verification passed (" + std::to_string(opt.checks) + " checks)";
  return Next::kStop;
}

}  // namespace cuda_agent
