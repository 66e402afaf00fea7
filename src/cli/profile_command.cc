// profile_command.cc — `cuda-agent profile --ncu --task T --candidate C [--json]`: Nsight Compute
// on the candidate's own kernels (ncu/ncu_run.h); the report as text for the agent or JSON.
#include <iostream>

#include "cli/commands.h"
#include "cli/judge_flags.h"
#include "common/fs.h"
#include "ncu/ncu_run.h"

namespace cuda_agent {
namespace {

std::vector<OptionSpec> ProfileSpecs() {
  std::vector<OptionSpec> specs = {
      {"ncu", false, "profile the candidate's own kernels with Nsight Compute (required)", ""},
      {"ncu-path", true, "the ncu binary (default: PATH, <CUDA home>/bin, /usr/local/cuda/bin)",
       ""},
      {"raw-out", true, "copy ncu's raw CSV to FILE", ""},
      {"json-out", true, "also write the report as JSON to FILE (whatever stdout shows)", ""},
      {"max-launches", true, "kernel launches of the profiled call that ncu profiles at most",
       "32"},
  };
  // The judge's flags: --device, --policy, --warmup (unprofiled calls before the profiled one),
  // --timeout (the whole ncu run), --build-timeout, --cache-dir, --keep-work; the others are
  // accepted (the judge gateway passes a session's judge flags) and have no effect here.
  for (const OptionSpec& s : JudgeSpecs()) specs.push_back(s);
  return specs;
}

int Emit(const NcuReport& report, bool json, const std::string& json_out) {
  if (!json_out.empty()) {
    Status written = WriteFileAtomic(json_out, NcuReportToJson(report).dump(2) + "\n");
    if (!written.ok()) std::cerr << "cuda-agent profile: " << written.message() << "\n";
  }
  if (json) {
    std::cout << NcuReportToJson(report).dump(2) << "\n";
  } else {
    std::cout << NcuReportText(report);
  }
  return NcuExitStatus(report);
}

}  // namespace

int ProfileCommand(const Args& args) {
  const std::vector<OptionSpec> specs = ProfileSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("profile", a.status().message(), specs);
  if (!a->positional().empty())
    return UsageError("profile", "unexpected argument '" + a->positional()[0] + "'", specs);
  if (!a->Has("ncu")) {
    return UsageError("profile",
                      "--ncu is required (Nsight Compute is the profiler this command runs; for "
                      "times use `cuda-agent judge --until profile` or utils.profiling)",
                      specs);
  }
  if (a->Get("task").empty()) return UsageError("profile", "--task is required", specs);
  if (a->Get("candidate").empty()) return UsageError("profile", "--candidate is required", specs);
  fs::path folder = a->Get("candidate");
  if (!fs::is_directory(folder))
    return UsageError("profile", "candidate folder not found: " + folder.string(), specs);
  Result<JudgeOptions> judge = OptionsFromArgs(a.value());
  if (!judge.ok()) return UsageError("profile", judge.status().message(), specs);
  Result<int> max_launches = ParseIntFlag(a.value(), "max-launches");
  if (!max_launches.ok()) return UsageError("profile", max_launches.status().message(), specs);
  if (max_launches.value() < 1)
    return UsageError("profile", "--max-launches must be at least 1", specs);
  NcuOptions options;
  options.judge = judge.value();
  options.warmup = judge->warmup;
  options.max_launches = max_launches.value();
  options.ncu_path = a->Get("ncu-path");
  if (!a->Get("raw-out").empty()) options.raw_csv_out = fs::absolute(a->Get("raw-out"));
  const bool json = a->Has("json");
  const std::string json_out = a->Get("json-out");

  NcuReport report;
  report.device = DeviceName(options.judge.device);
  report.candidate = folder.string();
  Result<Task> task = LoadTask(a->Get("task"));
  if (!task.ok()) {
    if (task.status().code() == StatusCode::kNotFound && !fs::exists(a->Get("task"))) {
      return UsageError("profile", task.status().message(), specs);
    }
    report.status = "task_error";
    report.message = "task error: " + task.status().message();
    return Emit(report, json, json_out);
  }
  report.task = task->name;
  Result<Candidate> candidate = Candidate::FromFolder(folder);
  if (!candidate.ok()) {
    report.status = "rejected";
    report.message = "cannot read the candidate: " + candidate.status().message();
    return Emit(report, json, json_out);
  }
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent profile: " << env.status().message() << "\n";
    return kExitInternal;
  }
  return Emit(ProfileWithNcu(env.value(), task.value(), candidate.value(), folder, options), json,
              json_out);
}

}  // namespace cuda_agent
