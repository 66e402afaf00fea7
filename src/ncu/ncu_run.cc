// ncu_run.cc — `profile --ncu` (ncu_run.h): finding ncu, building the candidate with the judge's
// stages, running the `ncu_target` job under ncu in the sandbox, and telling apart why a run gave
// no numbers.
#include "ncu/ncu_run.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include "builder/binary_inspector.h"
#include "common/host_environment.h"
#include "judge/stages/stages.h"

namespace cuda_agent {
namespace {

constexpr double kVersionTimeoutS = 30;
constexpr size_t kErrorLinesShown = 3;

bool IsExecutableFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

bool Contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

std::string FirstLines(const std::vector<std::string>& lines, size_t n) {
  std::string out;
  for (size_t i = 0; i < lines.size() && i < n; ++i) out += (i ? " | " : "") + lines[i];
  return out;
}

// NcuVersion: the line of `ncu --version` that names the version ("Version 2025.1.0.0 ..."), or "".
std::string NcuVersion(const std::string& ncu) {
  RunOptions run;
  run.argv = {ncu, "--version"};
  run.timeout_seconds = kVersionTimeoutS;
  Result<RunResult> r = RunProcess(run);
  if (!r.ok() || !r->Succeeded()) return "";
  std::string last;
  size_t pos = 0;
  while (pos < r->out.size()) {
    size_t eol = r->out.find('\n', pos);
    if (eol == std::string::npos) eol = r->out.size();
    std::string line = r->out.substr(pos, eol - pos);
    pos = eol + 1;
    if (Contains(line, "Version")) return line;
    if (!line.empty()) last = line;
  }
  return last;
}

// Fail sets a status and its message.
void Fail(NcuReport* report, const std::string& status, const std::string& message) {
  report->status = status;
  report->message = message;
}

// FromJudgement: the report's status when one of the judge's stages stopped.
void FromJudgement(const JudgeResult& r, NcuReport* report) {
  if (r.outcome == Outcome::kTaskError) return Fail(report, "task_error", r.reason);
  if (r.outcome == Outcome::kInternalError) return Fail(report, "internal", r.reason);
  if (r.stage == Stage::kBuild) {
    std::string text = r.reason;
    if (r.build.is_object()) {
      int shown = 0;
      for (const auto& e : r.build.value("errors", Json::array())) {
        if (shown++ == 3) break;
        text += "\n" + e.value("text", "");
      }
    }
    return Fail(report, "build_failed", "the candidate does not build: " + text);
  }
  Fail(report, "rejected", "the judge's checks refuse the candidate: " + r.reason);
}

// OwnKeys: what names the extension's kernels, for matching ncu's kernel names: the mangled names
// and the KernelKeys of their demangled forms.
std::set<std::string> OwnKeys(const BinaryInspection& inspection) {
  std::set<std::string> keys;
  for (const DeviceKernel& k : inspection.kernels) {
    if (!k.mangled.empty()) keys.insert(k.mangled);
    if (!k.name.empty()) keys.insert(KernelKey(k.name));
  }
  return keys;
}

}  // namespace

std::string NcuNeedsGpuMessage(const std::string& device_detail) {
  return "ncu needs a GPU: " + device_detail +
         ". Nsight Compute reads the hardware counters of CUDA kernels; without a GPU there are "
         "none, and no numbers are made up. utils.profiling still times the candidate.";
}

std::string NcuMissingMessage(const std::string& looked_at) {
  return "Nsight Compute (ncu) is not installed here (looked at: " + looked_at +
         "; set CUDA_AGENT_NCU_PATH to its path). The episode goes on without hardware counters; "
         "utils.profiling still times the candidate.";
}

std::string NcuNotPermittedMessage() {
  return "ncu may not read the GPU's performance counters on this machine (ERR_NVGPUCTRPERM): "
         "the driver keeps them for administrators, and the profiled process runs unprivileged "
         "in the sandbox. Fix, by the machine's owner: load the nvidia kernel module with "
         "NVreg_RestrictProfilingToAdminUsers=0 (a line `options nvidia "
         "NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d/, then reload the module or "
         "reboot; see https://developer.nvidia.com/ERR_NVGPUCTRPERM). Until then there are no "
         "hardware counters; utils.profiling still times the candidate.";
}

std::vector<fs::path> NcuSearchHomes() {
  std::vector<fs::path> homes;
  for (HostVar var : {HostVar::kCudaHome, HostVar::kCudaPath}) {
    if (const std::string& v = HostValue(var); !v.empty()) homes.emplace_back(v);
  }
  if (Result<std::string> nvcc = FindExecutable("nvcc"); nvcc.ok()) {
    std::error_code ec;
    fs::path real = fs::canonical(nvcc.value(), ec);
    if (!ec) homes.push_back(real.parent_path().parent_path());
  }
  homes.emplace_back("/usr/local/cuda");
  return homes;
}

Result<std::string> FindNcu(const std::string& explicit_path,
                            const std::vector<fs::path>& cuda_homes) {
  if (!explicit_path.empty()) {
    if (IsExecutableFile(explicit_path)) return explicit_path;
    return NotFound(explicit_path + " (not an executable file)");
  }
  std::string looked = "PATH";
  if (Result<std::string> on_path = FindExecutable("ncu");
      on_path.ok() && IsExecutableFile(on_path.value())) {
    return on_path.value();
  }
  for (const fs::path& home : cuda_homes) {
    if (home.empty()) continue;
    fs::path candidate = home / "bin" / "ncu";
    looked += ", " + candidate.string();
    if (IsExecutableFile(candidate)) return candidate.string();
  }
  return NotFound(looked);
}

std::vector<std::string> NcuArgs(const std::string& ncu, const fs::path& log_file,
                                 int max_launches) {
  std::vector<std::string> args = {ncu,
                                   "--profile-from-start",
                                   "off",
                                   "--target-processes",
                                   "all",
                                   "--clock-control",
                                   "base",
                                   "--launch-count",
                                   std::to_string(max_launches)};
  for (const char* section : kNcuSections) args.insert(args.end(), {"--section", section});
  std::string metrics;
  for (const std::string& m : NcuExtraMetrics()) metrics += (metrics.empty() ? "" : ",") + m;
  args.insert(args.end(), {"--metrics", metrics, "--csv", "--page", "raw", "--print-units", "base",
                           "--print-kernel-base", "mangled", "--log-file", log_file.string()});
  return args;
}

void InterpretNcuRun(const NcuRun& run, const std::set<std::string>& own_keys, NcuReport* report) {
  const RunResult& p = run.job.process;
  const std::string everything = run.log + "\n" + p.out + "\n" + p.err;
  if (Contains(everything, "ERR_NVGPUCTRPERM")) {
    return Fail(report, "not_permitted", NcuNotPermittedMessage());
  }
  Result<NcuCsv> csv = ParseNcuRawCsv(everything);
  NcuCsv parsed;
  if (csv.ok()) {
    parsed = std::move(csv).value();
  } else {
    report->notes.push_back("ncu's CSV: " + csv.status().message());
  }
  if (!parsed.launches.empty()) {
    AnalyzeLaunches(parsed.launches, own_keys, report);
    for (const std::string& e : parsed.errors) report->notes.push_back("ncu: " + e);
    if (!run.job.Ok()) {
      report->notes.push_back("the forward call failed after the profiled launches: " +
                              DescribeCandidateFailure(run.job, "the ncu run").second);
    }
    if (report->launches_profiled >= 1 && report->kernels.empty()) {
      return Fail(report, "no_kernels",
                  "the profiled forward call ran " + std::to_string(report->launches_profiled) +
                      " kernel launches, none of them a kernel of the candidate's extension (the "
                      "work must be done by the candidate's own kernels)");
    }
    report->status = "ok";
    return;
  }
  if (p.timed_out) {
    return Fail(report, "timeout",
                "ncu did not finish within " + std::to_string(static_cast<int>(run.timeout_s)) +
                    " s (each profiled kernel is replayed dozens of times; a long forward or many "
                    "kernels take long)");
  }
  // The candidate's own failure (import, construction, a forward that raises or crashes) says
  // more than ncu's echo of it.
  if (run.job.has_result && !run.job.Ok()) {
    return Fail(report, "candidate_failed",
                "the candidate failed under ncu: " +
                    DescribeCandidateFailure(run.job, "the ncu run").second);
  }
  for (const std::string& e : parsed.errors) {
    std::string lower = e;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (Contains(lower, "replay") || Contains(lower, "failed to profile") ||
        Contains(lower, "profiling failed") || Contains(lower, "unable to profile")) {
      return Fail(report, "replay_failed",
                  "ncu could not profile (replay) the candidate's kernels: " +
                      FirstLines(parsed.errors, kErrorLinesShown) +
                      ". The kernels themselves ran; ncu saves and restores device memory to "
                      "replay each kernel, which some kernels do not survive.");
    }
  }
  if (!parsed.errors.empty()) {
    return Fail(report, "ncu_error", "ncu failed: " + FirstLines(parsed.errors, kErrorLinesShown));
  }
  if (!run.job.has_result) {
    if (p.term_signal != 0 || p.exit_code != 0) {
      return Fail(report, "candidate_failed",
                  "the run under ncu ended without a result: " +
                      DescribeCandidateFailure(run.job, "the ncu run").second);
    }
    return Fail(report, "ncu_error",
                "ncu ended without profiling anything and without a result (" + p.Describe() +
                    "): " + run.job.StderrTail(5));
  }
  Fail(report, "no_kernels",
       "the profiled forward call launched no kernel (ncu profiled nothing between "
       "cudaProfilerStart and cudaProfilerStop)");
}

int NcuExitStatus(const NcuReport& report) {
  const std::string& s = report.status;
  if (s == "ok") return 0;
  if (s == "build_failed" || s == "rejected" || s == "candidate_failed" || s == "replay_failed" ||
      s == "no_kernels" || s == "timeout") {
    return 1;
  }
  if (s == "task_error") return 3;
  return 4;  // needs_gpu, ncu_missing, not_permitted, ncu_error, internal
}

Json NcuTargetSpec(const fs::path& task_file, const fs::path& candidate_dir,
                   const fs::path& extension_dir, const NcuOptions& options) {
  const PrecisionPolicy& policy = options.judge.policy;
  return {{"device", "cuda"},
          {"task_path", fs::absolute(task_file).string()},
          {"candidate_dir", fs::absolute(candidate_dir).string()},
          {"extension_dir", fs::absolute(extension_dir).string()},
          {"seed", options.seed},
          {"warmup", options.warmup},
          {"backend_flags", policy.candidate.ToJson()},
          // The judgement's rules (weights by position under kernelbench): the profiled ModelNew
          // loads its weights as the candidate job does.
          {"policy_rules", policy.rules.ToJson()}};
}

NcuReport ProfileWithNcu(const HarnessEnv& env, const Task& task, const Candidate& candidate,
                         const fs::path& folder, const NcuOptions& options) {
  auto started = Clock::now();
  NcuReport report;
  report.task = task.name.empty() ? task.id : task.name;
  report.candidate = folder.string();
  report.device = DeviceName(options.judge.device);
  report.warmup = options.warmup;
  auto done = [&]() {
    report.seconds = SecondsSince(started);
    return report;
  };
  if (options.judge.device != Device::kCuda) {
    Fail(&report, "needs_gpu",
         NcuNeedsGpuMessage("this " + report.device + " workspace runs no CUDA kernels"));
    return done();
  }
  // ncu first: without it nothing else is worth doing.
  std::string explicit_path =
      !options.ncu_path.empty() ? options.ncu_path : HostValue(HostVar::kNcuPath);
  Result<std::string> ncu = FindNcu(explicit_path, NcuSearchHomes());
  if (!ncu.ok()) {
    Fail(&report, "ncu_missing", NcuMissingMessage(ncu.status().message()));
    return done();
  }
  report.ncu_path = ncu.value();
  // The judge's stages up to the build, with nothing of a judgement's timing or baselines.
  JudgeOptions jo = options.judge;
  jo.until = Stage::kVerify;
  jo.use_baseline_store = false;
  jo.eager_baseline = jo.compile_baseline = false;
  jo.sanitizer.clear();
  jo.export_library.clear();
  JudgeResult scratch;
  Judgement j(env, jo, scratch);
  auto stopped = [&]() {
    FromJudgement(scratch, &report);
    return done();
  };
  try {
    if (j.PrepareWork() == Next::kStop || CheckTask(j, task) == Next::kStop ||
        WriteSnapshot(j, candidate) == Next::kStop ||
        StaticChecks(j, candidate, folder) == Next::kStop) {
      return stopped();
    }
    if (j.DiscoverEnvironment() == Next::kStop) {
      // The harness's toolchain job says so when torch sees no GPU (jobs/toolchain.py).
      if (scratch.reason.find("torch.cuda.is_available() is False") != std::string::npos) {
        Fail(&report, "needs_gpu", NcuNeedsGpuMessage("torch sees no CUDA GPU on this machine"));
        return done();
      }
      return stopped();
    }
    const Toolchain& toolchain = j.toolchain();
    if (!toolchain.gpu) {
      Fail(&report, "needs_gpu", NcuNeedsGpuMessage("torch sees no CUDA GPU on this machine"));
      return done();
    }
    report.gpu = toolchain.gpu->name;
    report.ncu_version = NcuVersion(ncu.value());
    if (Build(j, candidate) == Next::kStop) return stopped();
    std::future<BinaryInspection> inspect = StartInspect(j);
    BinaryInspection inspection = inspect.valid() ? inspect.get() : BinaryInspection();
    std::set<std::string> own = OwnKeys(inspection);
    if (inspection.source == "none") {
      report.notes.push_back("the extension's kernels could not be listed (" + inspection.note +
                             ")");
    }

    const WorkDirs& dirs = j.dirs();
    fs::path out = dirs.root / "ncu";
    fs::create_directories(out);
    fs::path log = out / "ncu.csv";
    Json spec = NcuTargetSpec(dirs.task_file, dirs.src, dirs.build, options);
    std::vector<fs::path> readable = {dirs.src, dirs.build, dirs.task_file};
    std::error_code ec;
    fs::path real_ncu = fs::canonical(ncu.value(), ec);
    if (!ec) readable.push_back(real_ncu.parent_path());  // ncu's own files, wherever it lives
    JobSandbox box = j.Contain(readable, {out});
    box.policy.gpu = true;
    box.wrapper = NcuArgs(ncu.value(), log, options.max_launches);
    // ncu locks the GPU's clocks while it runs: no timing of another judgement may overlap it.
    Result<DeviceLease> lease = j.Lease(LeaseMode::kExclusive, "ncu");
    if (!lease.ok()) {
      Fail(&report, "internal", "the device lease: " + lease.status().message());
      return done();
    }
    NcuRun run;
    run.timeout_s = jo.candidate_timeout_s;
    Result<JobOutcome> job = j.RunJob("ncu", "ncu_target", spec, run.timeout_s, &box);
    if (!job.ok()) {
      Fail(&report, "internal", "the ncu run could not start: " + job.status().message());
      return done();
    }
    run.job = std::move(job).value();
    Result<std::string> text = ReadFile(log);
    const bool have_log = text.ok();
    if (have_log) run.log = std::move(text).value();
    if (!options.raw_csv_out.empty() && have_log) {
      if (Status s = WriteFileAtomic(options.raw_csv_out, run.log); s.ok()) {
        report.raw_csv = options.raw_csv_out.string();
      } else {
        report.notes.push_back("cannot keep ncu's CSV: " + s.message());
      }
    }
    InterpretNcuRun(run, own, &report);
    if (jo.keep_work) report.notes.push_back("work folder kept: " + dirs.root.string());
  } catch (const std::exception& e) {
    Fail(&report, "internal", std::string("unexpected exception: ") + e.what());
  }
  return done();
}

}  // namespace cuda_agent
