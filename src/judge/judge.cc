// judge.cc — the judgement pipeline. Each stage is a function that fills the JudgeResult and says
// whether to go on; Run and Baselines string them together.
#include "judge/judge.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "builder/binary_inspector.h"
#include "builder/extension_builder.h"
#include "gpu/lease.h"
#include "judge/job_policy.h"
#include "judge/library_kernels.h"
#include "judge/reward.h"
#include "judge/static_rules.h"
#include "store/baseline_store.h"
#include "workspace/workspace.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kKernelsShown = 50;  // kernels listed in the result (all are audited)
constexpr double kOwnShareMin = 0.5;  // own + library kernels' share of the device time (HACKS C3)
// How long an early job called off may take to see `stop` before it is killed.
constexpr std::chrono::milliseconds kEarlyStopGrace{100};

// InputTransforms: each check's floating inputs become x * scale + shift (HACKS B7, B9). Checks 3,
// 4 and 5 use x * 8, x / 8 and x * 2 - 1 where the task allows (the reference falls back where
// not): other magnitudes, and negative values for tasks whose own inputs are all non-negative.
std::pair<Json, Json> InputTransforms(int checks) {
  Json scales = Json::array(), shifts = Json::array();
  for (int i = 0; i < checks; ++i) {
    scales.push_back(i == 2 ? 8.0 : i == 3 ? 0.125 : i == 4 ? 2.0 : 1.0);
    shifts.push_back(i == 4 ? -1.0 : 0.0);
  }
  return {scales, shifts};
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// SecretSeeds are drawn from the OS for every run: the candidate cannot know them.
std::vector<int64_t> SecretSeeds(int n) {
  std::random_device rd;
  std::vector<int64_t> seeds;
  for (int i = 0; i < n; ++i) {
    seeds.push_back(((static_cast<int64_t>(rd()) << 31) ^ rd()) & 0x7fffffffffffLL);
  }
  return seeds;
}

// The folders of one judgement. `shared` holds what the candidate may see (its init inputs and
// weights); `private_` holds the expected outputs, which no sandbox that runs candidate code binds;
// `signals` holds the go/stop files of the early jobs (Pipeline::StartEarly).
struct WorkDirs {
  fs::path root, jobs, shared, private_, outputs, src, build, task_file, spot_candidate, signals;

  explicit WorkDirs(const fs::path& r)
      : root(r),
        jobs(r / "jobs"),
        shared(r / "shared"),
        private_(r / "private"),
        outputs(r / "outputs"),
        src(r / "src"),
        build(r / "build"),
        task_file(r / "task.py"),
        spot_candidate(r / "spot_candidate"),
        signals(r / "signals") {
    for (const auto& d : {jobs, shared, private_, outputs, src, build, spot_candidate, signals}) {
      fs::create_directories(d);
    }
  }
  std::string InitInputs() const { return (shared / "init_inputs.pt").string(); }
  std::string StateDict() const { return (shared / "state_dict.pt").string(); }
};

// Removes the work folder unless asked to keep it. Not copyable: a copy's destructor would remove
// the folder while the judgement still uses it.
class WorkFolderGuard {
 public:
  WorkFolderGuard(fs::path dir, bool keep) : dir_(std::move(dir)), keep_(keep) {}
  WorkFolderGuard(const WorkFolderGuard&) = delete;
  WorkFolderGuard& operator=(const WorkFolderGuard&) = delete;
  ~WorkFolderGuard() {
    std::error_code ec;
    if (!keep_) fs::remove_all(dir_, ec);
  }

 private:
  fs::path dir_;
  bool keep_;
};

// StageStatus: go on, or stop with the result as it is.
enum class Next { kContinue, kStop };

class Pipeline {
 public:
  Pipeline(const HarnessEnv& env, const JudgeOptions& opt, JudgeResult& r)
      : env_(env),
        opt_(opt),
        r_(r),
        start_(Clock::now()),
        sandbox_(opt.sandbox ? *opt.sandbox : Sandbox::Default()) {
    r_.device = DeviceName(opt.device);
    r_.reward_schedule = opt.reward_schedule;
    r_.policy = opt.policy.ToJson();
    r_.env = {{"sandbox", IsolationName(sandbox_.Level())},
              {"sandbox_detail", sandbox_.Describe()}};
  }

  ~Pipeline() { CallOffEarly(); }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const fs::path& CacheDir() const { return cache_dir_; }

  Next Internal(const std::string& why) {
    r_.outcome = Outcome::kInternalError;
    r_.reward.reset();
    r_.error_kind = "internal";
    r_.reason = "internal error: " + why;
    return Next::kStop;
  }

  Next TaskError(const std::string& why) {
    r_.outcome = Outcome::kTaskError;
    r_.stage = Stage::kTask;
    r_.reward.reset();
    r_.error_kind = "task";
    r_.reason = "task error: " + why;
    return Next::kStop;
  }

  Next Fail(Stage at, const std::string& kind, const std::string& why) {
    r_.Fail(at, kind, why);
    return Next::kStop;
  }

  void Finish() { r_.stage_seconds["total"] = SecondsSince(start_); }

  // PrepareWork makes the private work folder.
  Next PrepareWork() {
    cache_dir_ = opt_.cache_dir.empty() ? DefaultCacheDir() : opt_.cache_dir;
    Result<fs::path> work = MakeTempDir(cache_dir_ / "work", "judge");
    if (!work.ok()) return Internal(work.status().message());
    // Traversable, so that a sandbox may run as uid 65534 on the host; what is inside is bound
    // into a sandbox only folder by folder (private/ never into one that runs candidate code).
    fs::permissions(work.value(),
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    dirs_ = std::make_unique<WorkDirs>(work.value());
    guard_ = std::make_unique<WorkFolderGuard>(work.value(), opt_.keep_work);
    if (opt_.keep_work) r_.env["work_dir"] = work.value().string();
    return Next::kContinue;
  }

  Next CheckTask(const Task& task) {
    r_.stage = Stage::kTask;
    r_.task = {{"id", task.id}, {"name", task.name}, {"path", task.source_path.string()}};
    if (Status shape = CheckTaskShape(task); !shape.ok()) return TaskError(shape.message());
    if (Status w = WriteFileAtomic(dirs_->task_file, task.code); !w.ok())
      return Internal(w.message());
    return Next::kContinue;
  }

  // StaticChecks: workspace integrity, then the harness's checks of model_new.py.
  Next StaticChecks(const fs::path& candidate_dir) {
    r_.stage = Stage::kStatic;
    auto t = Clock::now();
    if (fs::exists(candidate_dir / ".cuda-agent" / "workspace.json")) {
      if (Status intact = VerifyProtectedFiles(candidate_dir); !intact.ok()) {
        return Fail(Stage::kStatic, "tampering", intact.message());
      }
    }
    // The C++/CUDA sources: named rules (docs/static-rules.md), before anything is compiled.
    std::vector<StaticViolation> found = ScanCandidateSources(candidate_dir);
    for (const auto& v : found) {
      r_.violations.push_back(
          {{"rule", v.rule}, {"file", v.file}, {"line", v.line}, {"message", v.message}});
    }
    if (!found.empty()) {
      r_.stage_seconds["static"] = SecondsSince(t);
      return Fail(Stage::kStatic, "static_rule", FormatViolation(found.front()));
    }
    // model_new.py: the harness's static job (syntax, ModelNew, the AST rules).
    if (opt_.until != Stage::kBuild) {
      Result<JobOutcome> st =
          RunJob("static", "static", {{"candidate_dir", fs::absolute(candidate_dir).string()}}, 60,
                 nullptr);
      if (!st.ok()) return Internal(st.status().message());
      if (!st->has_result) return Internal("static check failed to run: " + st->StderrTail(5));
      for (const auto& v : st->result.value("violations", Json::array()))
        r_.violations.push_back(v);
      if (!st->Ok()) return Fail(Stage::kStatic, st->ErrorKind(), st->Reason());
    }
    r_.stage_seconds["static"] = SecondsSince(t);
    return Next::kContinue;
  }

  Next DiscoverEnvironment() {
    auto t = Clock::now();
    Result<Toolchain> tc = DiscoverToolchain(env_, opt_.device, cache_dir_, dirs_->jobs);
    if (!tc.ok()) return Internal(tc.status().message());
    toolchain_ = std::move(tc).value();
    r_.env["python_version"] = toolchain_.python_version;
    r_.env["torch_version"] = toolchain_.torch_version;
    r_.env["torch_cuda_version"] =
        toolchain_.torch_cuda_version.empty() ? Json() : Json(toolchain_.torch_cuda_version);
    r_.env["gpu"] = toolchain_.gpu ? Json{{"name", toolchain_.gpu->name},
                                          {"arch", toolchain_.gpu->arch},
                                          {"capability", toolchain_.gpu->capability}}
                                   : Json();
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    r_.env["host"] = host;
    r_.stage_seconds["toolchain"] = SecondsSince(t);
    MakeBasePolicy();
    return Next::kContinue;
  }

  // MakeBasePolicy: what every contained job may read (interpreter, torch, CUDA) and its limits.
  void MakeBasePolicy() {
    python_inside_ = PythonInside(toolchain_);
    base_policy_ = BaseJobPolicy(toolchain_,
                                 {opt_.device, cache_dir_, opt_.job_memory_bytes, opt_.job_max_pids,
                                  std::max(opt_.trusted_timeout_s, opt_.build_timeout_s)});
  }

  // Contain returns the sandbox of one job: the base policy plus these folders.
  JobSandbox Contain(const std::vector<fs::path>& read_only,
                     const std::vector<fs::path>& writable) const {
    JobSandbox js{&sandbox_, base_policy_, python_inside_, {}, {}};
    js.policy.read_only.insert(js.policy.read_only.end(), read_only.begin(), read_only.end());
    js.policy.writable.insert(js.policy.writable.end(), writable.begin(), writable.end());
    return js;
  }

  // Track records the weakest isolation any job ran under.
  void Track(const JobOutcome& job) {
    if (static_cast<int>(job.isolation) > static_cast<int>(weakest_)) weakest_ = job.isolation;
    r_.env["sandbox"] = IsolationName(weakest_);
  }

  // Build from a clean snapshot: only the candidate's files plus our binding files.
  Next Build(const fs::path& candidate_dir) {
    r_.stage = Stage::kBuild;
    if (Status snap = SnapshotCandidate(candidate_dir, dirs_->src, env_.TemplateDir());
        !snap.ok()) {
      return Internal(snap.message());
    }
    BuildRequest req{dirs_->src,           dirs_->build, cache_dir_,  opt_.build_jobs,
                     opt_.build_timeout_s, &sandbox_,    base_policy_};
    req.policy.gpu = false;  // compilers need no GPU
    req.fast_math = opt_.policy.fast_math;
    BuildReport built = BuildExtension(req, toolchain_);
    Json errors = Json::array();
    for (const auto& e : built.errors) {
      errors.push_back({{"file", e.file},
                        {"line", e.line},
                        {"column", e.column},
                        {"message", e.message},
                        {"text", e.ToString()}});
    }
    r_.build = {{"ok", built.ok},
                {"seconds", built.seconds},
                {"errors", errors},
                {"log_tail", built.log_tail},
                {"objects_compiled", built.objects_compiled},
                {"objects_cached", built.objects_cached},
                {"library_cached", built.library_cached},
                {"sources", built.sources}};
    r_.stage_seconds["build"] = built.seconds;
    if (!built.ok) return Fail(Stage::kBuild, "build", "build failed: " + built.failure);
    if (opt_.until != Stage::kBuild) return Next::kContinue;
    r_.reason = "build succeeded";
    if (!opt_.export_library.empty()) {
      std::error_code ec;
      fs::copy_file(built.library, opt_.export_library, fs::copy_options::overwrite_existing, ec);
      if (ec) return Internal("cannot write " + opt_.export_library.string() + ": " + ec.message());
      r_.build["library"] = opt_.export_library.string();
    }
    return Next::kStop;
  }

  // ReferenceRun is what the reference job's thread hands back.
  struct ReferenceRun {
    Result<JobOutcome> job = cuda_agent::Internal("the reference job did not run");
    double lease_wait = 0;
    double seconds = 0;
  };

  // StartReference launches the reference job (trusted: secret seeds; scaled/shifted checks; with
  // `timing`, the expected outputs of the candidate profile's spot-checked calls) on a thread of
  // its own: it needs no build, so it runs while the candidate compiles. FinishReference collects
  // it.
  std::future<ReferenceRun> StartReference(int checks, bool timing) {
    r_.stage = Stage::kVerify;
    std::vector<int64_t> seeds = SecretSeeds(checks + 1);
    int64_t init_seed = seeds.back();
    seeds.pop_back();
    check_seeds_ = seeds;
    Json spec = {{"task_path", dirs_->task_file.string()},
                 {"device", r_.device},
                 {"data_dir", dirs_->shared.string()},
                 {"expected_dir", dirs_->private_.string()},
                 {"init_seed", init_seed},
                 {"check_seeds", seeds},
                 {"input_scales", InputTransforms(checks).first},
                 {"input_shifts", InputTransforms(checks).second},
                 {"backend_flags", opt_.policy.reference.ToJson()}};
    if (timing) {
      MakeTimingSecrets();
      spec["timing"] = {{"seed", timing_seed_},
                        {"warmup", opt_.warmup},
                        {"iters", opt_.iters},
                        {"spot_check_calls", spot_calls_}};
    }
    JobSandbox box = Contain({dirs_->task_file}, {dirs_->shared, dirs_->private_});
    return std::async(std::launch::async, [this, spec, box]() {
      ReferenceRun run;
      auto t = Clock::now();
      Result<DeviceLease> lease = DeviceLease::Acquire(LeaseKey(opt_.device), LeaseMode::kShared);
      if (!lease.ok()) {
        run.job = lease.status();
        return run;
      }
      run.lease_wait = lease->waited_seconds();
      run.job = RunJob("reference", "reference", spec, opt_.trusted_timeout_s, &box);
      run.seconds = SecondsSince(t);
      return run;
    });
  }

  Next FinishReference(std::future<ReferenceRun>& pending) {
    ReferenceRun run = pending.get();
    AddLeaseWait(run.lease_wait);
    r_.stage_seconds["reference"] = run.seconds;
    if (!run.job.ok()) return Internal(run.job.status().message());
    const JobOutcome& ref = run.job.value();
    Track(ref);
    if (!ref.Ok()) {
      if (ref.has_result && ref.ErrorKind() == "task") return TaskError(ref.Reason());
      if (ref.has_result) return Internal("reference job: " + ref.Reason());
      return TaskError("the reference run ended with " + ref.process.Describe() + ": " +
                       ref.StderrTail(5));
    }
    const Json& signature = ref.result.value("output_signature", Json());
    output_signature_ =
        signature.is_string() ? signature.get<std::string>() : "";  // null: no checks ran
    input_scales_ = ref.result.value("input_scales", Json::array());
    input_shifts_ = ref.result.value("input_shifts", Json::array());
    for (const auto& d : ref.result.value("float_dtypes", Json::array()))
      float_dtypes_.push_back(d);
    spot_expected_ = ref.result.value("spot_expected", Json::array());
    min_bytes_ = ref.result.value("min_bytes", Json());
    return Next::kContinue;
  }

  void AddLeaseWait(double seconds) {
    r_.stage_seconds["lease_wait"] = r_.stage_seconds.value("lease_wait", 0.0) + seconds;
  }

  // Lease takes the device lease a stage needs (shared for correctness, exclusive for timing).
  Result<DeviceLease> Lease(LeaseMode mode) {
    Result<DeviceLease> lease = DeviceLease::Acquire(LeaseKey(opt_.device), mode);
    if (lease.ok()) AddLeaseWait(lease->waited_seconds());
    return lease;
  }

  // StartInspect reads the built extension's kernels and their machine code (CUDA only) on a
  // thread, while the candidate is verified: the kernel audit needs their names, and in an fp32
  // task the `strict` policy refuses reduced-precision tensor-core instructions (HACKS B11).
  std::future<BinaryInspection> StartInspect() {
    if (opt_.device != Device::kCuda) return {};
    JobSandbox box = Contain({dirs_->build}, {});
    box.policy.gpu = false;
    fs::path library = dirs_->build / (std::string(kExtensionName) + ".so");
    std::string cuda_home = toolchain_.cuda_home;
    return std::async(std::launch::async, [this, box, library, cuda_home]() {
      auto t = Clock::now();
      ToolRunner run = [&](const RunOptions& o) -> Result<RunResult> {
        Result<SandboxRun> sr = sandbox_.Run(box.policy, o);
        if (!sr.ok()) return sr.status();
        return std::move(sr->process);
      };
      BinaryInspection inspection = InspectExtensionCached(library, cuda_home, run, cache_dir_);
      inspect_seconds_ = SecondsSince(t);
      return inspection;
    });
  }

  // FinishInspect applies what StartInspect found; its verdict comes before verification's.
  Next FinishInspect(std::future<BinaryInspection>& pending) {
    if (!pending.valid()) return Next::kContinue;
    inspection_ = pending.get();
    r_.stage_seconds["inspect"] = inspect_seconds_;
    Json kernels = Json::array();
    for (const auto& k : inspection_.kernels) {
      if (inspection_.source == "sass")
        kernels.push_back({{"name", k.name}, {"tensor_core", TensorCoreOpcodes(k)}});
      own_keys_.insert(KernelKey(k.name));
    }
    r_.build["inspection"] = {{"source", inspection_.source}, {"note", inspection_.note}};
    if (inspection_.source == "sass") r_.build["kernels"] = kernels;
    for (const auto& key : own_keys_) {
      // The profile's stream-order fences are torch.cuda._sleep's spin_kernel, told apart by name.
      if (key.find("spin_kernel") != std::string::npos) {
        return Fail(Stage::kVerify, "kernel_audit",
                    "kernel audit: the name " + key +
                        " is reserved (the judge's stream-order fences "
                        "use spin_kernel); rename the kernel");
      }
    }
    if (!opt_.policy.reject_reduced_precision_in_fp32 || !Fp32Task()) return Next::kContinue;
    if (inspection_.source != "sass") {
      notes_.push_back("machine-code precision check skipped: " + inspection_.note);
      return Next::kContinue;
    }
    for (const auto& k : inspection_.kernels) {
      std::vector<std::string> ops = TensorCoreOpcodes(k);
      if (ops.empty()) continue;
      return Fail(Stage::kVerify, "precision_downgrade",
                  "precision downgrade: kernel " + k.name + " uses " + ops.front() +
                      " (tensor-core instructions on half/TF32/int8 inputs) in an fp32 task; the " +
                      opt_.policy.name +
                      " policy requires fp32 arithmetic (--policy tf32-fair allows TF32)");
    }
    return Next::kContinue;
  }

  // CandidateSpec: the `candidate` job of verification. Its input transforms are the reference's
  // (it falls back to 1 and 0 where a task does not allow one): given at the go.
  Json CandidateSpec() const {
    return {{"device", r_.device},
            {"candidate_dir", fs::absolute(dirs_->src).string()},
            {"extension_dir", fs::absolute(dirs_->build).string()},
            {"init_inputs_path", dirs_->InitInputs()},
            {"state_dict_path", dirs_->StateDict()},
            {"task_path", dirs_->task_file.string()},
            {"check_seeds", check_seeds_},
            {"output_dir", dirs_->outputs.string()},
            {"repeat_first_check", true},
            {"backend_flags", opt_.policy.candidate.ToJson()}};
  }

  // The expected and actual outputs verification compares; the last pair is the repeat of check 0
  // under another allocator state (HACKS B12).
  std::pair<std::vector<std::string>, std::vector<std::string>> VerifyPairs() const {
    std::vector<std::string> expected, actual;
    for (int i = 0; i <= opt_.checks; ++i) {
      std::string n = std::to_string(i);
      expected.push_back(
          (dirs_->private_ / ("expected_" + std::to_string(i < opt_.checks ? i : 0) + ".pt"))
              .string());
      actual.push_back((dirs_->outputs / ("output_" + n + ".pt")).string());
    }
    return {expected, actual};
  }

  // StartVerifyJobs starts verification's `candidate` and `compare` jobs as early jobs: their fork,
  // jail and CUDA context overlap the build. Needs the check seeds (StartReference).
  void StartVerifyJobs() {
    // The candidate sees its weights, the task, its sources and extension; never dirs_->private_.
    StartEarly(
        "candidate", "candidate", CandidateSpec(),
        Contain({dirs_->shared, dirs_->src, dirs_->build, dirs_->task_file}, {dirs_->outputs}),
        opt_.candidate_timeout_s);
    auto [expected, actual] = VerifyPairs();
    StartEarly("compare", "compare", CompareSpec(expected, actual),
               CompareBox({dirs_->private_, dirs_->outputs}), opt_.trusted_timeout_s);
  }

  // Verify: the candidate's outputs (untrusted process: inputs, init inputs and weights only),
  // then the comparison (trusted process).
  Next Verify() {
    r_.stage = Stage::kVerify;  // the build, which ran after the reference started, left kBuild
    auto t = Clock::now();
    Result<DeviceLease> lease = Lease(LeaseMode::kShared);
    if (!lease.ok()) return Internal(lease.status().message());
    if (!early_.count("candidate")) StartVerifyJobs();
    // The candidate makes its inputs from the check seeds, as the reference did (inputs.py).
    Json transforms = {{"input_scales", input_scales_}, {"input_shifts", input_shifts_}};
    Result<JobOutcome> cand = RunEarly("candidate", transforms);
    if (!cand.ok()) return Internal(cand.status().message());
    Track(cand.value());
    if (!cand->Ok()) {
      r_.stage_seconds["verify"] = SecondsSince(t);
      auto [kind, why] = DescribeCandidateFailure(cand.value(), "verification");
      return Fail(Stage::kVerify, kind, why);
    }
    Result<JobOutcome> cmp = RunEarly("compare");
    if (!cmp.ok()) return Internal(cmp.status().message());
    Track(cmp.value());
    r_.stage_seconds["verify"] = SecondsSince(t);
    if (!cmp->has_result) {
      return Internal("compare job: " + cmp->process.Describe() + ": " + cmp->StderrTail(5));
    }
    r_.verify = {{"ok", cmp->Ok()},
                 {"checks", cmp->result.value("checks", Json::array())},
                 {"num_checks", opt_.checks},
                 {"output_signature", output_signature_},
                 {"input_scales", input_scales_},
                 {"input_shifts", input_shifts_},
                 {"float_dtypes", float_dtypes_},
                 {"repeat_index", opt_.checks}};
    if (!cmp->Ok()) {
      std::string why = cmp->Reason();
      for (const auto& c : r_.verify["checks"]) {
        if (c.value("ok", true)) continue;
        int index = c.value("index", 0);
        std::string label = index == opt_.checks ? "repeat of check 1 (another allocator state)"
                                                 : "check " + std::to_string(index + 1) + "/" +
                                                       std::to_string(opt_.checks);
        double scale =
            index < static_cast<int>(input_scales_.size()) && input_scales_[index].is_number()
                ? input_scales_[index].get<double>()
                : 1.0;
        double shift =
            index < static_cast<int>(input_shifts_.size()) && input_shifts_[index].is_number()
                ? input_shifts_[index].get<double>()
                : 0.0;
        if (scale != 1.0 || shift != 0.0) {
          char buf[80];
          std::snprintf(buf, sizeof(buf), " (inputs x %g %+g)", scale, shift);
          label += buf;
        }
        why = label + ": " + c.value("reason", why);
        break;
      }
      std::string kind = cmp->ErrorKind().empty() ? "mismatch" : cmp->ErrorKind();
      return Fail(Stage::kVerify, kind, "verification failed: " + why);
    }
    r_.correct = true;
    Json cand_spec = CandidateSpec();
    cand_spec.update(transforms);
    if (Next n = Sanitize(cand_spec); n == Next::kStop) return n;
    if (opt_.until != Stage::kVerify) return Next::kContinue;
    r_.reason = "verification passed (" + std::to_string(opt_.checks) + " checks)";
    return Next::kStop;
  }

  // The trusted comparison of expected and actual output files; on the GPU for CUDA judgements (a
  // KernelBench output of a GiB compares in milliseconds there, in seconds on a CPU).
  Json CompareSpec(const std::vector<std::string>& expected,
                   const std::vector<std::string>& actual) const {
    return {{"expected_paths", expected},
            {"actual_paths", actual},
            {"tolerance", opt_.policy.Tolerance()},
            {"device", r_.device}};
  }

  JobSandbox CompareBox(const std::vector<fs::path>& readable) const {
    JobSandbox box = Contain(readable, {});
    box.policy.gpu = opt_.device == Device::kCuda;
    return box;
  }

  // Sanitize runs check 1 again under compute-sanitizer (opt_.sanitizer), with torch's caching
  // allocator off so that every buffer has exact bounds (HACKS B12: races, out-of-bounds accesses,
  // uninitialised reads that passed by luck).
  Next Sanitize(Json spec) {
    if (opt_.sanitizer.empty() || opt_.device != Device::kCuda) return Next::kContinue;
    auto t = Clock::now();
    fs::path tool = fs::path(toolchain_.cuda_home) / "bin" / "compute-sanitizer";
    if (!fs::exists(tool)) {
      Result<std::string> found = FindExecutable("compute-sanitizer");
      if (!found.ok())
        return Internal("--sanitize: compute-sanitizer not found under " + toolchain_.cuda_home);
      tool = found.value();
    }
    fs::path out = dirs_->root / "sanitize";
    fs::create_directories(out);
    spec["check_seeds"] = Json::array({spec["check_seeds"][0]});
    spec["input_scales"] = Json::array({spec["input_scales"][0]});
    spec["input_shifts"] = Json::array({spec["input_shifts"][0]});
    spec["output_dir"] = out.string();
    spec["repeat_first_check"] = false;
    JobSandbox box = Contain({dirs_->shared, dirs_->src, dirs_->build, dirs_->task_file}, {out});
    constexpr int kSanitizerExit = 86;
    box.wrapper = {tool.string(),
                   "--tool",
                   opt_.sanitizer,
                   "--error-exitcode",
                   std::to_string(kSanitizerExit),
                   "--print-limit",
                   "10"};
    box.env_set = {"PYTORCH_NO_CUDA_MEMORY_CACHING=1"};
    Result<JobOutcome> job =
        RunJob("sanitizer", "candidate", spec, opt_.candidate_timeout_s * 4, &box);
    r_.stage_seconds["sanitize"] = SecondsSince(t);
    if (!job.ok()) return Internal(job.status().message());
    Track(job.value());
    const RunResult& p = job->process;
    // The sanitizer's report: lines starting with "=========" on stdout.
    std::string report;
    size_t errors_at = p.out.find("ERROR SUMMARY:");
    for (size_t pos = 0; pos < p.out.size() && report.size() < 600;) {
      size_t eol = p.out.find('\n', pos);
      if (eol == std::string::npos) eol = p.out.size();
      std::string line = p.out.substr(pos, eol - pos);
      if (line.rfind("=========", 0) == 0 && line.find("COMPUTE-SANITIZER") == std::string::npos &&
          line.size() > 10) {
        report += (report.empty() ? "" : " | ") + line.substr(10);
      }
      pos = eol + 1;
    }
    r_.verify["sanitizer"] = {
        {"tool", opt_.sanitizer},
        {"exit", p.exit_code},
        {"summary", errors_at == std::string::npos ? "" : p.out.substr(errors_at, 40)}};
    if (!p.timed_out && p.term_signal == 0 && p.exit_code == kSanitizerExit) {
      r_.correct = false;
      return Fail(Stage::kVerify, "sanitizer",
                  "compute-sanitizer " + opt_.sanitizer + " found errors in check 1: " + report);
    }
    if (job->has_result && job->ErrorKind() == "internal") {
      return Internal("the sanitizer run (" + opt_.sanitizer + "): " + job->Reason());
    }
    if (!job->Ok()) {
      r_.correct = false;
      auto [kind, why] =
          DescribeCandidateFailure(job.value(), "the sanitizer run (" + opt_.sanitizer + ")");
      return Fail(Stage::kVerify, kind, why);
    }
    return Next::kContinue;
  }

  // RunJob runs one harness job and records it in r_.jobs (where a judgement's time went): its
  // name, start and end in seconds since the judgement began, the seconds it waited for its go (an
  // early job) and the phases it reported.
  Result<JobOutcome> RunJob(const std::string& name, const std::string& job, const Json& spec,
                            double timeout_s, const JobSandbox* box,
                            std::atomic<pid_t>* pid = nullptr) {
    double started = SecondsSince(start_);
    Result<JobOutcome> out = RunHarnessJob(env_, job, spec, dirs_->jobs, timeout_s, box, pid);
    Json entry = {
        {"name", name}, {"job", job}, {"start_s", started}, {"end_s", SecondsSince(start_)}};
    if (out.ok() && out->has_result) {
      for (const char* key : {"go_wait_seconds", "phase_seconds", "error_kind"}) {
        if (out->result.contains(key) && !out->result[key].is_null()) entry[key] = out->result[key];
      }
    }
    std::lock_guard<std::mutex> lock(jobs_mu_);
    r_.jobs.push_back(std::move(entry));
    return out;
  }

  // An early job (python/cuda_agent_harness/go.py) starts at the beginning of a judgement, before
  // its inputs exist: it forks, enters its jail and initialises CUDA (a profile job also starts its
  // profiler: seconds of kineto/CUPTI start-up; a compile baseline imports dynamo and inductor),
  // then waits for its go file, so that all of this overlaps the build. RunEarly gives the go; a
  // judgement that stops earlier calls the rest off (CallOffEarly, also on destruction).
  struct EarlyJob {
    std::string job;
    Json spec;         // without "wait_for": what a fresh run gets
    JobSandbox box;    // without the signals folder
    double timeout_s;  // of the work after the go
    std::future<Result<JobOutcome>> outcome;
    std::shared_ptr<std::atomic<pid_t>> pid = std::make_shared<std::atomic<pid_t>>(0);
  };

  fs::path GoFile(const std::string& name) const { return dirs_->signals / ("go_" + name); }

  // StartEarly starts the early job `name` unless one of that name waits already.
  void StartEarly(const std::string& name, const std::string& job, const Json& spec,
                  const JobSandbox& box, double timeout_s) {
    if (early_.count(name)) return;
    double wait_s =
        2 * opt_.build_timeout_s + 2 * opt_.trusted_timeout_s + 6 * opt_.candidate_timeout_s;
    Json waiting = spec;
    waiting["wait_for"] = {{"go", GoFile(name).string()},
                           {"stop", (dirs_->signals / "stop").string()},
                           {"timeout_s", wait_s}};
    JobSandbox waiting_box = box;
    waiting_box.policy.read_only.push_back(dirs_->signals);
    EarlyJob& early = early_[name];
    early = EarlyJob{job, spec, box, timeout_s, {}};
    early.outcome = std::async(std::launch::async, [this, name, job, waiting, waiting_box, wait_s,
                                                    timeout_s, pid = early.pid]() {
      return RunJob(name, job, waiting, wait_s + timeout_s, &waiting_box, pid.get());
    });
  }

  // RunEarly gives the early job `name` its go, with the spec fields known only now (`fields`), and
  // waits for it: its time limit counts from the go (a job still running then is killed and
  // reported as timed out). A job that gave up waiting ("not_started") is replaced by a fresh run.
  Result<JobOutcome> RunEarly(const std::string& name, const Json& fields = Json::object()) {
    auto it = early_.find(name);
    if (it == early_.end()) return cuda_agent::Internal("no early job '" + name + "' was started");
    EarlyJob early = std::move(it->second);
    early_.erase(it);
    std::string go = fields.empty() ? "go\n" : fields.dump() + "\n";
    if (Status s = WriteFileAtomic(GoFile(name), go); !s.ok()) return s;
    auto given = Clock::now();
    bool killed = false;
    if (early.timeout_s > 0 &&
        early.outcome.wait_for(std::chrono::duration<double>(early.timeout_s)) !=
            std::future_status::ready &&
        early.pid->load() > 0) {
      killed = kill(early.pid->load(), SIGKILL) == 0;
    }
    Result<JobOutcome> out = early.outcome.get();
    if (killed && out.ok()) {
      out->process.timed_out = true;
      out->process.wall_seconds = SecondsSince(given);
    }
    if (!out.ok() || out->ErrorKind() != "not_started") return out;
    Json spec = early.spec;
    spec.update(fields);
    return RunJob(name, early.job, spec, early.timeout_s, &early.box);
  }

  // CallOffEarly: `stop` ends the jobs that wait for their go; one still setting up (a profiler
  // starts for seconds) is killed, so that a judgement that stopped early (a compile error) answers
  // at once.
  void CallOffEarly() {
    if (early_.empty()) return;
    (void)WriteFileAtomic(dirs_->signals / "stop", "stop\n");
    for (auto& [name, early] : early_) {
      if (!early.outcome.valid()) continue;
      if (early.outcome.wait_for(kEarlyStopGrace) != std::future_status::ready &&
          early.pid->load() > 0) {
        kill(early.pid->load(), SIGKILL);
      }
      early.outcome.wait();
    }
    early_.clear();
  }

  // StartCandidateProfile: the candidate's profile job as an early job; it waits for
  // ProfileCandidate's go, under the exclusive lease.
  void StartCandidateProfile() {
    Json spec = ProfileSpec("candidate");
    spec["candidate_dir"] = fs::absolute(dirs_->src).string();
    spec["extension_dir"] = fs::absolute(dirs_->build).string();
    spec["output_dir"] = dirs_->spot_candidate.string();
    StartEarly("profile_candidate", "profile", spec,
               Contain({dirs_->shared, dirs_->src, dirs_->build, dirs_->task_file},
                       {dirs_->spot_candidate}),
               opt_.candidate_timeout_s);
    StartSpotCompare();
  }

  // StartSpotCompare: the comparison of the spot-checked timed calls' outputs (CheckTimedCalls), as
  // an early job; their paths come with its go.
  void StartSpotCompare() {
    StartEarly("compare_spots", "compare", CompareSpec({}, {}),
               CompareBox({dirs_->private_, dirs_->spot_candidate}), opt_.trusted_timeout_s);
  }

  // StartBaselineProfiles: the eager and torch.compile profile jobs as early jobs (`baselines`), so
  // that only the work from their go on holds the exclusive lease.
  void StartBaselineProfiles() {
    for (const std::string target : {"eager", "compile"}) {
      if (!(target == "eager" ? opt_.eager_baseline : opt_.compile_baseline)) continue;
      StartEarly(target, "profile", BaselineSpec(target),
                 Contain({dirs_->shared, dirs_->task_file}, {}), opt_.trusted_timeout_s);
    }
  }

  Json BaselineSpec(const std::string& target) {
    Json spec = ProfileSpec(target);
    spec.erase("spot_check_calls");
    return spec;
  }

  // RunBaselineJob gives the go to the job StartBaselineProfiles started for `target`, or runs one
  // now.
  Result<JobOutcome> RunBaselineJob(const std::string& target) {
    if (early_.count(target)) return RunEarly(target);
    JobSandbox box = Contain({dirs_->shared, dirs_->task_file}, {});
    return RunJob(target, "profile", BaselineSpec(target), opt_.trusted_timeout_s, &box);
  }

  // ProfileCandidate times the candidate under the exclusive lease: the go of its profile job.
  Next ProfileCandidate() {
    r_.stage = Stage::kProfile;
    Result<DeviceLease> lease = Lease(LeaseMode::kExclusive);
    if (!lease.ok()) return Internal(lease.status().message());
    auto t = Clock::now();
    if (!early_.count("profile_candidate")) StartCandidateProfile();
    Result<JobOutcome> cp = RunEarly("profile_candidate");
    r_.stage_seconds["profile_candidate"] = SecondsSince(t);
    if (!cp.ok()) return Internal(cp.status().message());
    Track(cp.value());
    if (!cp->Ok()) {
      auto [kind, why] = DescribeCandidateFailure(cp.value(), "profiling");
      return Fail(Stage::kProfile, kind, why);
    }
    r_.timing["candidate"] = ProfileSummary(cp.value());
    candidate_spots_ = cp->result.value("spot_checks", Json::array());
    calibration_ = cp->result.value("calibration", Json());
    if (!r_.timing["candidate"]["time_us"].is_number()) {
      return Internal("the candidate profile reported no time");
    }
    return AuditKernels(cp->result.value("kernels", Json::array()),
                        cp->result.value("call_kernels", Json::array()));
  }

  // AuditKernels (HACKS C1, C3, B11): every device activity of the timed calls is the candidate's
  // own kernel, an allowed library kernel (cuBLAS GEMM, cuDNN convolution) or a copy/fill; every
  // timed call runs an own kernel; own and library kernels carry most of the device time; under
  // `strict` an fp32 task uses no TF32/half library kernel.
  Next AuditKernels(const Json& table, const Json& per_call) {
    Json shown = Json::array();
    for (const auto& k : table) {
      if (shown.size() >= kKernelsShown) break;
      Json entry = k;
      entry["origin"] = KernelOriginName(Classify(k.value("name", "")));
      shown.push_back(entry);
    }
    r_.kernels = shown;
    if (opt_.device != Device::kCuda) return Next::kContinue;
    if (inspection_.source == "none") {
      notes_.push_back("kernel audit skipped: " + inspection_.note);
      return Next::kContinue;
    }
    double by_origin[4] = {0, 0, 0, 0};
    for (const auto& k : table) {
      std::string name = k.value("name", "");
      KernelOrigin origin = Classify(name);
      by_origin[static_cast<int>(origin)] += k.value("total_us", 0.0);
      if (origin == KernelOrigin::kForeign) {
        return Fail(Stage::kProfile, "kernel_audit",
                    "kernel audit: " + name +
                        " ran during the timed calls but is neither one of the "
                        "candidate's kernels nor a cuBLAS/cuDNN kernel");
      }
      if (origin == KernelOrigin::kLibrary && opt_.policy.reject_reduced_precision_in_fp32 &&
          Fp32Task() && IsReducedPrecisionLibraryKernel(name)) {
        return Fail(Stage::kProfile, "precision_downgrade",
                    "precision downgrade: library kernel " + name +
                        " computes on tf32/half inputs in "
                        "an fp32 task; the " +
                        opt_.policy.name + " policy requires fp32 arithmetic");
      }
    }
    double total = by_origin[0] + by_origin[1] + by_origin[2] + by_origin[3];
    double own = by_origin[static_cast<int>(KernelOrigin::kOwn)];
    double library = by_origin[static_cast<int>(KernelOrigin::kLibrary)];
    r_.timing["kernel_audit"] = {{"own_us", own},
                                 {"library_us", library},
                                 {"copy_us", by_origin[static_cast<int>(KernelOrigin::kCopy)]},
                                 {"own_kernels_in_binary", own_keys_.size()}};
    for (size_t i = 0; i < per_call.size(); ++i) {
      bool ran_own = false;
      for (const auto& name : per_call[i]) {
        if (name.is_string() && Classify(name.get<std::string>()) == KernelOrigin::kOwn)
          ran_own = true;
      }
      if (!ran_own) {
        return Fail(Stage::kProfile, "kernel_audit",
                    "kernel audit: timed call " + std::to_string(i + 1) +
                        " ran no own kernel of the candidate's extension (the work must be done by "
                        "the candidate's kernels)");
      }
    }
    if (total > 0 && (own + library) < kOwnShareMin * total) {
      char buf[240];
      std::snprintf(
          buf, sizeof(buf),
          "kernel audit: the candidate's own and library kernels carry only %.0f%% of the "
          "device time (copies and fills carry the rest; at least %.0f%% is required)",
          100 * (own + library) / total, 100 * kOwnShareMin);
      return Fail(Stage::kProfile, "kernel_audit", buf);
    }
    return Next::kContinue;
  }

  enum class KernelOrigin { kOwn = 0, kLibrary = 1, kCopy = 2, kForeign = 3 };
  static const char* KernelOriginName(KernelOrigin o) {
    switch (o) {
      case KernelOrigin::kOwn:
        return "own";
      case KernelOrigin::kLibrary:
        return "library";
      case KernelOrigin::kCopy:
        return "copy";
      case KernelOrigin::kForeign:
        return "foreign";
    }
    return "foreign";
  }

  KernelOrigin Classify(const std::string& name) const {
    if (name.rfind("Memcpy", 0) == 0 || name.rfind("Memset", 0) == 0) return KernelOrigin::kCopy;
    if (own_keys_.count(KernelKey(name))) return KernelOrigin::kOwn;
    if (IsLibraryKernel(name)) return KernelOrigin::kLibrary;
    return KernelOrigin::kForeign;
  }

  bool Fp32Task() const {
    return !float_dtypes_.empty() &&
           std::all_of(float_dtypes_.begin(), float_dtypes_.end(),
                       [](const std::string& d) { return d == "float32" || d == "complex64"; });
  }

  // ProfileBaselines: eager and torch.compile times. From the store when it holds them for this
  // task × GPU × torch × policy × settings, they are younger than --baseline-max-age and the device
  // has not drifted since (this judgement's calibration, taken in the candidate's profile before
  // its code loaded, against the one stored with them); else measured now — each in a process that
  // never saw candidate code, under the exclusive lease — and stored. `reuse` false re-measures.
  Next ProfileBaselines(bool reuse) {
    r_.stage = Stage::kProfile;
    auto t = Clock::now();
    OpenStore();
    bool noted = false;
    for (const std::string target : {"eager", "compile"}) {
      if (!(target == "eager" ? opt_.eager_baseline : opt_.compile_baseline)) continue;
      std::optional<StoredBaseline> stored = store_ ? store_->Get(Key(target)) : std::nullopt;
      std::string why = reuse ? WhyRemeasure(stored) : "asked to re-measure";
      if (why.empty()) {
        r_.timing[target] = stored->summary;
        r_.timing[target]["stored_at"] = stored->measured_at;
        r_.timing["baseline_store"][target] = "stored";
        continue;
      }
      if (stored && reuse && !noted) {
        notes_.push_back("baselines re-measured: " + why);
        noted = true;
      }
      Result<DeviceLease> lease = Lease(LeaseMode::kExclusive);
      if (!lease.ok()) return Internal(lease.status().message());
      Result<JobOutcome> bp = RunBaselineJob(target);
      if (!bp.ok()) return Internal(bp.status().message());
      Track(bp.value());
      if (!bp->Ok()) {
        std::string failure =
            bp->has_result ? bp->Reason() : bp->process.Describe() + ": " + bp->StderrTail(3);
        if (target == "eager") return TaskError("eager baseline failed: " + failure);
        r_.timing["compile_error"] = failure;
        notes_.push_back("torch.compile baseline unavailable: " + failure);
        continue;
      }
      r_.timing[target] = ProfileSummary(bp.value());
      r_.timing[target]["calibration"] = bp->result.value("calibration", Json());
      r_.timing[target]["measured_unix"] = static_cast<int64_t>(std::time(nullptr));
      if (r_.timing.contains("baseline_store"))
        r_.timing["baseline_store"][target] = "measured (" + why + ")";
      if (store_) {
        if (Status put = store_->Put(Key(target), r_.timing[target]); !put.ok()) {
          notes_.push_back("baseline store: " + put.message());
        }
      }
    }
    r_.stage_seconds["profile_baselines"] = SecondsSince(t);
    return Next::kContinue;
  }

  // WhyRemeasure: "" when a stored baseline may be used, else why not.
  std::string WhyRemeasure(const std::optional<StoredBaseline>& stored) const {
    if (!stored) return "none stored";
    const Json& s = stored->summary;
    int64_t at = s.value("measured_unix", int64_t{0});
    double age_h = (static_cast<double>(std::time(nullptr)) - static_cast<double>(at)) / 3600.0;
    if (at <= 0 || (opt_.baseline_max_age_hours > 0 && age_h > opt_.baseline_max_age_hours)) {
      char buf[96];
      std::snprintf(buf, sizeof(buf), "stored %.1f h ago (--baseline-max-age %.0f h)", age_h,
                    opt_.baseline_max_age_hours);
      return at <= 0 ? "stored without a measurement time" : buf;
    }
    if (!calibration_.is_object()) return "";  // nothing to compare with (no candidate profile)
    const Json then = s.value("calibration", Json());
    if (!then.is_object()) return "stored without a device calibration";
    // The GEMM swings more than the copy from one judgement to the next (up to 14% on the H200
    // while the candidates' own times moved < 1%), so it gets twice the bound.
    for (const auto& [key, bound] : {std::pair{"copy_us", opt_.baseline_drift},
                                     std::pair{"gemm_us", 2 * opt_.baseline_drift}}) {
      double before = then.value(key, 0.0), now = calibration_.value(key, 0.0);
      if (before > 0 && now > 0 && Drifted(before, now, bound)) {
        char buf[200];
        std::snprintf(buf, sizeof(buf),
                      "the device's %s calibration moved from %.2f to %.2f us since "
                      "they were measured (more than %.0f%%)",
                      key, before, now, 100 * bound);
        return buf;
      }
    }
    return "";
  }

  void OpenStore() {
    if (!opt_.use_baseline_store || store_) return;
    fs::path path = opt_.baseline_store.empty() ? cache_dir_ / "store.sqlite" : opt_.baseline_store;
    Result<BaselineStore> store = BaselineStore::Open(path);
    if (!store.ok()) {
      notes_.push_back("baseline store unavailable: " + store.status().message());
      return;
    }
    store_ = std::make_unique<BaselineStore>(std::move(store).value());
    r_.timing["baseline_store"] = {{"path", path.string()}};
  }

  BaselineKey Key(const std::string& target) const {
    return BaselineKeyFor(toolchain_, r_.task.value("id", std::string()), opt_, target);
  }

  // CheckTimedCalls: the outputs of two secretly chosen timed calls must match eager's outputs for
  // the same inputs (HACKS A5/A6), and no time may beat the bytes the task must move at the
  // measured peak bandwidth (HACKS A10).
  Next CheckTimedCalls() {
    auto t = Clock::now();
    if (!spot_expected_.empty()) {
      std::vector<std::string> expected, actual;
      std::vector<int> calls;
      for (const auto& e : spot_expected_) {
        int call = e.value("call", -1);
        for (const auto& c : candidate_spots_) {
          if (c.value("call", -2) != call) continue;
          expected.push_back(e.value("path", ""));
          actual.push_back(c.value("output_path", ""));
          calls.push_back(call);
        }
      }
      if (calls.size() != spot_expected_.size()) {
        return Internal("the candidate profile did not write the spot-checked timed outputs");
      }
      Result<DeviceLease> lease = Lease(LeaseMode::kShared);
      if (!lease.ok()) return Internal(lease.status().message());
      if (!early_.count("compare_spots")) StartSpotCompare();
      Result<JobOutcome> cmp =
          RunEarly("compare_spots", {{"expected_paths", expected}, {"actual_paths", actual}});
      if (!cmp.ok()) return Internal(cmp.status().message());
      Track(cmp.value());
      if (!cmp->has_result) return Internal("spot-check compare: " + cmp->process.Describe());
      r_.timing["spot_checks"] = calls.size();
      if (!cmp->Ok()) {
        std::string why = cmp->Reason();
        const Json checks = cmp->result.value("checks", Json::array());
        for (size_t i = 0; i < checks.size() && i < calls.size(); ++i) {
          if (checks[i].value("ok", true)) continue;
          why =
              "timed call " + std::to_string(calls[i] + 1) + ": " + checks[i].value("reason", why);
          break;
        }
        return Fail(Stage::kProfile, "timed_mismatch",
                    "timed outputs differ from the reference: " + why);
      }
    }
    const Json bandwidth = toolchain_.raw.value("measured_peak_bandwidth_bytes_per_s", Json());
    const Json cand = r_.timing["candidate"]["time_us"];
    if (bandwidth.is_number() && min_bytes_.is_number() && cand.is_number() &&
        bandwidth.get<double>() > 0) {
      // Half the time the bytes take at peak: outputs may still sit in L2 when the kernel ends
      // (write-back), so only a time far below the physics is called impossible.
      double floor_us = 0.5 * min_bytes_.get<double>() / bandwidth.get<double>() * 1e6;
      r_.timing["speed_of_light_us"] = floor_us;
      if (cand.get<double>() < floor_us) {
        char buf[200];
        std::snprintf(buf, sizeof(buf),
                      "impossible time: %.2f us is below %.2f us, half the time the task's %.0f "
                      "bytes take at the measured peak bandwidth",
                      cand.get<double>(), floor_us, min_bytes_.get<double>());
        return Fail(Stage::kProfile, "impossible_time", buf);
      }
    }
    r_.stage_seconds["timed_checks"] = SecondsSince(t);
    return Next::kContinue;
  }

  // Reward compares the candidate with whatever baselines were measured.
  Next Reward(const RewardSchedule& schedule) {
    RewardInputs in;
    in.correct = true;
    in.candidate_us = r_.timing["candidate"]["time_us"].get<double>();
    std::string summary = "correct";
    for (const std::string target : {"eager", "compile"}) {
      if (!r_.timing.contains(target) || !r_.timing[target]["time_us"].is_number()) continue;
      double base = r_.timing[target]["time_us"].get<double>();
      (target == "eager" ? in.eager_us : in.compile_us) = base;
      double speedup = in.candidate_us > 0 ? base / in.candidate_us : 0.0;
      r_.timing["speedup_vs_" + target] = speedup;
      char buf[96];
      std::snprintf(buf, sizeof(buf), ", %.2fx vs %s", speedup,
                    target == "eager" ? "eager" : "torch.compile");
      summary += buf;
    }
    for (const auto& n : notes_) summary += "; " + n;
    r_.reward = schedule.Reward(in);
    r_.stage = Stage::kDone;
    r_.reason = summary;
    return Next::kStop;
  }

  void StartTiming() {
    r_.timing = {{"measure", opt_.device == Device::kCuda ? "device" : "wall"}};
  }
  const std::vector<std::string>& Notes() const { return notes_; }

 private:
  // MakeTimingSecrets draws the timing seed and two distinct timed calls whose outputs are checked;
  // the candidate cannot know which.
  void MakeTimingSecrets() {
    if (timing_seed_ != 0) return;
    std::vector<int64_t> secret = SecretSeeds(3);
    timing_seed_ = secret[0] | 1;
    int a = static_cast<int>(secret[1] % opt_.iters);
    int b =
        opt_.iters > 1 ? static_cast<int>((a + 1 + secret[2] % (opt_.iters - 1)) % opt_.iters) : a;
    spot_calls_ = a == b ? Json::array({a}) : Json::array({std::min(a, b), std::max(a, b)});
  }

  Json ProfileSpec(const std::string& target) {
    MakeTimingSecrets();
    const BackendFlags& flags =
        target == "candidate" ? opt_.policy.candidate : opt_.policy.baselines;
    return {{"target", target},
            {"device", r_.device},
            {"task_path", dirs_->task_file.string()},
            {"backend_flags", flags.ToJson()},
            {"init_inputs_path", dirs_->InitInputs()},
            {"state_dict_path", dirs_->StateDict()},
            {"seed", timing_seed_},
            {"warmup", opt_.warmup},
            {"iters", opt_.iters},
            {"flush_l2", true},
            {"spot_check_calls", spot_calls_}};
  }

  Json ProfileSummary(const JobOutcome& job) const {
    const Json& res = job.result;
    Json s = Json::object();
    for (const char* key :
         {"median_wall_us", "median_device_us", "mean_device_us", "wall_us", "device_us", "iters",
          "warmup", "num_threads", "compile_seconds", "phase_seconds", "profiler_seconds"}) {
      if (res.contains(key)) s[key] = res[key];
    }
    s["time_us"] = opt_.device == Device::kCuda ? s.value("median_device_us", Json())
                                                : s.value("median_wall_us", Json());
    return s;
  }

  static std::pair<std::string, std::string> DescribeCandidateFailure(const JobOutcome& job,
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

  const HarnessEnv& env_;
  const JudgeOptions& opt_;
  JudgeResult& r_;
  Clock::time_point start_;
  fs::path cache_dir_;
  std::unique_ptr<WorkDirs> dirs_;
  std::unique_ptr<WorkFolderGuard> guard_;
  Toolchain toolchain_;
  std::string output_signature_;
  Json input_scales_ = Json::array();
  Json input_shifts_ = Json::array();
  std::vector<std::string> float_dtypes_;
  BinaryInspection inspection_;
  std::set<std::string> own_keys_;  // KernelKey of every kernel the built extension contains
  std::vector<int64_t> check_seeds_;
  int64_t timing_seed_ = 0;
  Json spot_calls_ = Json::array();
  Json candidate_spots_ = Json::array();
  Json spot_expected_ = Json::array();  // the reference's outputs of the spot-checked timed calls
  Json min_bytes_;                      // bytes of one timed call's inputs and output (reference)
  Json calibration_;  // the device calibration of this judgement's candidate profile
  double inspect_seconds_ = 0;
  std::map<std::string, EarlyJob> early_;  // by name: started, not yet given their go
  std::mutex jobs_mu_;                     // r_.jobs: jobs run on several threads
  std::vector<std::string> notes_;
  std::unique_ptr<BaselineStore> store_;
  const Sandbox& sandbox_;
  SandboxPolicy base_policy_;
  std::string python_inside_;
  Isolation weakest_ = Isolation::kFull;
};

// RunGuarded runs the stages; an exception (a bug of ours, e.g. a malformed harness answer) becomes
// an internal error instead of a crash of the judge.
template <typename Stages>
void RunGuarded(Pipeline& p, Stages& stages) {
  try {
    stages();
  } catch (const std::exception& e) {
    p.Internal(std::string("unexpected exception: ") + e.what());
  }
  p.Finish();
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

JudgeResult Judge::Run(const Task* task, const fs::path& candidate_dir, const JudgeOptions& opt) {
  JudgeResult r;
  Pipeline p(env_, opt, r);
  r.candidate = {{"dir", candidate_dir.string()}, {"hash", CandidateHash(candidate_dir)}};
  std::unique_ptr<RewardSchedule> schedule = MakeRewardSchedule(opt.reward_schedule);
  auto run = [&]() {
    if (!schedule) return p.Internal("unknown reward schedule '" + opt.reward_schedule + "'");
    if (!task && opt.until != Stage::kBuild) return p.Internal("no task given");
    if (p.PrepareWork() == Next::kStop) return Next::kStop;
    if (task && p.CheckTask(*task) == Next::kStop) return Next::kStop;
    if (p.StaticChecks(candidate_dir) == Next::kStop) return Next::kStop;
    if (p.DiscoverEnvironment() == Next::kStop) return Next::kStop;
    // The candidate's profile job starts its profiler now and waits for its go (ProfileCandidate).
    if (opt.until == Stage::kDone) p.StartCandidateProfile();
    // The reference needs no build: it runs while the candidate compiles; verification's jobs get
    // ready meanwhile (early jobs).
    std::future<Pipeline::ReferenceRun> reference;
    if (opt.until != Stage::kBuild) {
      reference = p.StartReference(opt.checks, opt.until == Stage::kDone);
      p.StartVerifyJobs();
    }
    if (p.Build(candidate_dir) == Next::kStop) {
      if (reference.valid()) reference.wait();  // a build failure is the verdict; the job just ends
      return Next::kStop;
    }
    if (reference.valid() && p.FinishReference(reference) == Next::kStop) return Next::kStop;
    // The machine code is read while the candidate is verified; its verdict comes first.
    std::future<BinaryInspection> inspection = p.StartInspect();
    Next verified = p.Verify();
    if (p.FinishInspect(inspection) == Next::kStop || verified == Next::kStop) return Next::kStop;
    p.StartTiming();
    if (p.ProfileCandidate() == Next::kStop) return Next::kStop;
    if (p.ProfileBaselines(/*reuse=*/true) == Next::kStop) return Next::kStop;
    if (p.CheckTimedCalls() == Next::kStop) return Next::kStop;
    return p.Reward(*schedule);
  };
  RunGuarded(p, run);
  return r;
}

JudgeResult Judge::Baselines(const Task& task, const JudgeOptions& opt) {
  JudgeResult r;
  Pipeline p(env_, opt, r);
  auto run = [&]() {
    if (p.PrepareWork() == Next::kStop) return Next::kStop;
    if (p.CheckTask(task) == Next::kStop) return Next::kStop;
    if (p.DiscoverEnvironment() == Next::kStop) return Next::kStop;
    // The baseline jobs start their profilers while the reference writes the init inputs and the
    // weights (no checks: a baseline needs no expected outputs).
    p.StartBaselineProfiles();
    std::future<Pipeline::ReferenceRun> reference = p.StartReference(0, /*timing=*/false);
    if (p.FinishReference(reference) == Next::kStop) return Next::kStop;
    p.StartTiming();
    if (p.ProfileBaselines(/*reuse=*/false) == Next::kStop)
      return Next::kStop;  // re-measures the store
    r.stage = Stage::kDone;
    r.reason = "baselines measured";
    for (const auto& n : p.Notes()) r.reason += "; " + n;
    return Next::kStop;
  };
  RunGuarded(p, run);
  return r;
}

}  // namespace cuda_agent
