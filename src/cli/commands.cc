// commands.cc — judge, build, workspace, tasks and sandbox subcommands (bench and baselines:
// eval_commands.cc).
#include "cli/commands.h"

#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "cli/options.h"
#include "cli/task_check_command.h"
#include "judge/judge.h"
#include "judge/single_file_judge.h"
#include "sandbox/sandbox.h"
#include "synth/synth.h"
#include "workspace/single_file.h"
#include "workspace/workspace.h"

namespace cuda_agent {

int UsageError(const std::string& command, const std::string& message,
               const std::vector<OptionSpec>& specs) {
  std::cerr << "cuda-agent " << command << ": " << message << "\n\noptions:\n" << FormatHelp(specs);
  return kExitUsage;
}

const std::vector<OptionSpec>& JudgeSpecs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> all = {
        {"task", true, "task: FILE.py, SUITE_DIR#NAME or DATA.jsonl#ID", ""},
        {"candidate", true,
         "candidate folder (kernels/, model_new.py) or workspace; judge also takes a KernelBench "
         "single-file solution (FILE.py with load_inline)",
         ""},
        {"json", false, "print the JudgeResult as JSON", ""},
        {"out", true, "(build) where to write cuda_extension.so", ""},
    };
    // The judgement's own options (judge/judge_options.h), defaults and help from their table.
    const JudgeOptions defaults;
    for (const JudgeOptionField& f : JudgeOptionTable()) {
      all.push_back(
          {f.flag, f.kind != OptionKind::kSwitch, f.help, JudgeOptionText(defaults, f.flag)});
    }
    return all;
  }();
  return specs;
}

// WithJudgeSpecs: the judge's flags plus a command's own (which win over a judge flag of the same
// name).
std::vector<OptionSpec> WithJudgeSpecs(const std::vector<OptionSpec>& own) {
  std::set<std::string> names;
  for (const OptionSpec& s : own) names.insert(s.name);
  std::vector<OptionSpec> specs;
  for (const OptionSpec& s : JudgeSpecs()) {
    if (!names.count(s.name)) specs.push_back(s);
  }
  specs.insert(specs.end(), own.begin(), own.end());
  return specs;
}

Result<JudgeOptions> OptionsFromArgs(const ParsedArgs& a) {
  JudgeOptions opt;
  for (const JudgeOptionField& f : JudgeOptionTable()) {
    // Given, mirrored from the environment, or a command's own default (bench's, say); empty: the
    // option's default (a command without the flag, as solve has no --until, keeps it too).
    const std::string text =
        f.kind == OptionKind::kSwitch ? (a.Has(f.flag) ? "1" : "") : a.Get(f.flag);
    if (text.empty()) continue;
    if (Status s = SetJudgeOption(opt, f.flag, text); !s.ok()) return s;
  }
  return opt;
}

namespace {

// kTestSkipStatic is the hidden, test-only switch of `judge` (JudgeOptions::test_skip_static). It
// is kept out of JudgeSpecs on purpose: no help line, no CUDA_AGENT_* mirror, and build, bench and
// baselines do not know it.
constexpr const char* kTestSkipStatic = "--test-skip-static";

// TakeTestSkipStatic removes kTestSkipStatic from the options of `args` (those before any "--")
// and says whether it was there; an error when it is given a value or is not allowed here.
Result<bool> TakeTestSkipStatic(Args& args) {
  bool found = false;
  const std::string with_value = std::string(kTestSkipStatic) + "=";
  for (auto it = args.begin(); it != args.end() && *it != "--";) {
    if (*it == kTestSkipStatic) {
      found = true;
      it = args.erase(it);
      continue;
    }
    if (it->rfind(with_value, 0) == 0) {
      return InvalidArgument(std::string(kTestSkipStatic) + " takes no value");
    }
    ++it;
  }
  if (found && !TestSwitchesAllowed()) {
    return InvalidArgument(std::string(kTestSkipStatic) +
                           " is a test-only switch (it judges without the static rules, so the "
                           "result is not a verdict); it is honoured only with " +
                           kTestingEnv + "=1 in the environment");
  }
  return found;
}

int Emit(const JudgeResult& result, bool json) {
  if (json) {
    std::cout << result.ToJson().dump(2) << "\n";
  } else {
    std::cout << result.ToText();
  }
  return ExitStatusFor(result);
}

// JudgeOneFile judges KernelBench's single-file solution `file` (judge/single_file_judge.h) and
// prints the conversion's notes with a text verdict.
int JudgeOneFile(const HarnessEnv& env, const Task& task, const fs::path& file,
                 const JudgeOptions& opt, bool json) {
  std::vector<std::string> notes;
  Result<JudgeResult> result = JudgeSingleFile(env, task, file, opt, &notes);
  if (!result.ok()) {
    std::cerr << "cuda-agent judge: " << result.status().message() << "\n";
    return kExitInternal;
  }
  if (!json) {
    for (const std::string& note : notes) std::cerr << "note: " << note << "\n";
  }
  return Emit(result.value(), json);
}

}  // namespace

int JudgeCommand(const Args& given) {
  const auto& specs = JudgeSpecs();
  Args args = given;
  Result<bool> skip_static = TakeTestSkipStatic(args);
  if (!skip_static.ok()) return UsageError("judge", skip_static.status().message(), specs);
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("judge", a.status().message(), specs);
  if (!a->positional().empty())
    return UsageError("judge", "unexpected argument '" + a->positional()[0] + "'", specs);
  if (a->Get("task").empty()) return UsageError("judge", "--task is required", specs);
  if (a->Get("candidate").empty()) return UsageError("judge", "--candidate is required", specs);
  fs::path candidate = a->Get("candidate");
  // KernelBench's single-file solution (load_inline): converted first (workspace/single_file.h).
  std::optional<fs::path> single_file = SingleFileOf(candidate);
  if (!single_file && !fs::is_directory(candidate))
    return UsageError("judge", "candidate folder or .py file not found: " + candidate.string(),
                      specs);
  Result<JudgeOptions> opt = OptionsFromArgs(a.value());
  if (!opt.ok()) return UsageError("judge", opt.status().message(), specs);
  opt->test_skip_static = skip_static.value();
  Result<Task> task = LoadTask(a->Get("task"));
  if (!task.ok()) {
    if (task.status().code() == StatusCode::kNotFound && !fs::exists(a->Get("task"))) {
      return UsageError("judge", task.status().message(), specs);
    }
    JudgeResult r;
    r.outcome = Outcome::kTaskError;
    r.stage = Stage::kTask;
    r.error_kind = "task";
    r.reason = "task error: " + task.status().message();
    r.device = a->Get("device");
    if (opt->test_skip_static) r.MarkStaticSkipped();
    return Emit(r, a->Has("json"));
  }
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent judge: " << env.status().message() << "\n";
    return kExitInternal;
  }
  if (single_file) {
    return JudgeOneFile(env.value(), task.value(), *single_file, opt.value(), a->Has("json"));
  }
  JudgeResult result = Judge(env.value()).Run(&task.value(), candidate, opt.value());
  return Emit(result, a->Has("json"));
}

int BuildCommand(const Args& args) {
  const auto& specs = JudgeSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("build", a.status().message(), specs);
  if (a->Get("candidate").empty()) return UsageError("build", "--candidate is required", specs);
  fs::path candidate = a->Get("candidate");
  if (!fs::is_directory(candidate))
    return UsageError("build", "candidate folder not found: " + candidate.string(), specs);
  Result<JudgeOptions> opt = OptionsFromArgs(a.value());
  if (!opt.ok()) return UsageError("build", opt.status().message(), specs);
  opt->until = Stage::kBuild;
  if (!a->Get("out").empty()) opt->export_library = fs::absolute(a->Get("out"));
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent build: " << env.status().message() << "\n";
    return kExitInternal;
  }
  JudgeResult result = Judge(env.value()).Run(nullptr, candidate, opt.value());
  if (!a->Has("json") && result.outcome == Outcome::kVerdict) {
    // The short form for a compile command: the reason and the first compiler errors.
    std::cout << result.reason << "\n";
    if (result.build.is_object()) {
      for (const auto& e : result.build["errors"]) std::cout << e.value("text", "") << "\n";
    }
    return result.reward.value_or(0) == -1 ? kExitBuildFailed : kExitVerdict;
  }
  int status = Emit(result, a->Has("json"));
  // For `build`, a failed build is a failure of the command (exit 1), unlike a judge verdict.
  return status == kExitVerdict && result.reward.value_or(0) == -1 ? kExitBuildFailed : status;
}

namespace {

// `workspace import FILE.py DIR`: KernelBench's single-file solution converted into DIR's
// kernels/ and model_new.py (workspace/single_file.h); a refused file writes nothing (exit 1).
int WorkspaceImport(const Args& args) {
  static const std::vector<OptionSpec> specs = {};
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("workspace import", a.status().message(), specs);
  if (a->positional().size() != 2)
    return UsageError("workspace import", "expected FILE.py and DIR", specs);
  fs::path file = a->positional()[0];
  fs::path dir = a->positional()[1];
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || file.extension() != ".py")
    return UsageError("workspace import", "not a .py file: " + file.string(), specs);
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return UsageError("workspace import", "not a folder: " + dir.string(), specs);
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent workspace: " << env.status().message() << "\n";
    return kExitInternal;
  }
  Result<SingleFileConversion> c = ConvertSingleFile(env.value(), file, dir);
  if (!c.ok()) {
    std::cerr << "cuda-agent workspace import: " << c.status().message() << "\n";
    return kExitInternal;
  }
  if (!c->ok) {
    std::cerr << "cuda-agent workspace import: refused: " << c->error << "\n";
    return kExitBuildFailed;
  }
  for (const std::string& rel : c->files) std::cout << (dir / rel).string() << "\n";
  for (const std::string& note : c->notes) std::cerr << "note: " << note << "\n";
  return 0;
}

}  // namespace

int WorkspaceCommand(const Args& args) {
  static const std::vector<OptionSpec> specs = {
      {"task", true, "task: FILE.py, SUITE_DIR#NAME or DATA.jsonl#ID", ""},
      {"device", true, "cuda or cpu", "cuda"},
  };
  if (!args.empty() && args[0] == "import") {
    return WorkspaceImport(Args(args.begin() + 1, args.end()));
  }
  if (args.empty() || args[0] != "init") {
    return UsageError("workspace",
                      "usage: cuda-agent workspace init --task TASK [--device D] DIR | workspace "
                      "import FILE.py DIR",
                      specs);
  }
  Result<ParsedArgs> a = ParseArgs(specs, Args(args.begin() + 1, args.end()));
  if (!a.ok()) return UsageError("workspace init", a.status().message(), specs);
  if (a->positional().size() != 1)
    return UsageError("workspace init", "expected one folder DIR", specs);
  if (a->Get("task").empty()) return UsageError("workspace init", "--task is required", specs);
  Result<Task> task = LoadTask(a->Get("task"));
  if (!task.ok()) return UsageError("workspace init", task.status().message(), specs);
  Result<Device> device = ParseDevice(a->Get("device"));
  if (!device.ok()) return UsageError("workspace init", device.status().message(), specs);
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent workspace: " << env.status().message() << "\n";
    return kExitInternal;
  }
  WorkspaceSpec spec{task.value(), a->positional()[0], device.value(), env.value(),
                     ExecutablePath()};
  Status s = InitWorkspace(spec);
  if (!s.ok()) {
    std::cerr << "cuda-agent workspace init: " << s.message() << "\n";
    return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  }
  std::cout << "workspace for " << task->name << " (" << task->id << ") ready in "
            << a->positional()[0] << "\n";
  return 0;
}

namespace {

// `tasks check` (judge/task_check.h): trivial answers that pass a suite's tasks.
int TasksCheck(const Args& args) {
  static const std::vector<OptionSpec> specs = {
      {"device", true, "cuda or cpu", "cuda"},
      {"policy", true, "all | strict | tf32-fair | paper", "all"},
      {"select", true, "comma-separated task names or ids", ""},
      {"limit", true, "at most this many tasks", "0"},
      {"out", true, "write the markdown report to FILE (rewritten as tasks finish)", ""},
      {"json", false, "print the report as JSON", ""},
      {"cache-dir", true, "toolchain cache and work folder", ""},
      {"task-timeout", true, "seconds for each task", "600"},
      {"progress", true, "JSONL of finished tasks (kept up to date); tasks in it are not run again",
       ""},
      {"seed", true, "seed of the weights and input sets", "1234"},
  };
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("tasks check", a.status().message(), specs);
  if (a->positional().size() != 1) return UsageError("tasks check", "expected one SUITE", specs);
  TaskCheckRequest req;
  req.suite = a->positional()[0];
  req.select = a->Get("select");
  req.out = a->Get("out");
  req.json = a->Has("json");
  Result<Device> device = ParseDevice(a->Get("device"));
  Result<std::vector<std::string>> policies = TaskCheckPolicies(a->Get("policy"));
  Result<int> limit = ParseIntFlag(a.value(), "limit");
  Result<int> seed = ParseIntFlag(a.value(), "seed");
  Result<double> timeout = ParseDoubleFlag(a.value(), "task-timeout");
  for (const Status& s :
       {device.status(), policies.status(), limit.status(), seed.status(), timeout.status()}) {
    if (!s.ok()) return UsageError("tasks check", s.message(), specs);
  }
  req.limit = limit.value();
  req.options.device = device.value();
  req.options.policies = policies.value();
  req.options.seed = seed.value();
  req.options.task_timeout_s = timeout.value();
  req.options.cache_dir = a->Get("cache-dir");
  req.options.progress_file = a->Get("progress");
  return TaskCheckCommand(req);
}

}  // namespace

int TasksCommand(const Args& args) {
  static const std::vector<OptionSpec> specs = {{"json", false, "one JSON object per task", ""}};
  if (!args.empty() && args[0] == "check") return TasksCheck(Args(args.begin() + 1, args.end()));
  if (args.empty() || args[0] != "list") {
    return UsageError("tasks",
                      "usage: cuda-agent tasks list SUITE [--json] | tasks check SUITE [options]",
                      specs);
  }
  Result<ParsedArgs> a = ParseArgs(specs, Args(args.begin() + 1, args.end()));
  if (!a.ok()) return UsageError("tasks list", a.status().message(), specs);
  if (a->positional().size() != 1) return UsageError("tasks list", "expected one SUITE", specs);
  Result<std::vector<Task>> suite = LoadSuite(a->positional()[0]);
  if (!suite.ok()) {
    std::cerr << "cuda-agent tasks list: " << suite.status().message() << "\n";
    return suite.status().code() == StatusCode::kNotFound ? kExitUsage : kExitTaskError;
  }
  int malformed = 0;
  for (const Task& t : suite.value()) {
    Status shape = CheckTaskShape(t);
    if (!shape.ok()) ++malformed;
    if (a->Has("json")) {
      Json row = {{"id", t.id},
                  {"name", t.name},
                  {"level", t.level},
                  {"path", t.source_path.string()},
                  {"ops", t.ops},
                  {"data_source", t.data_source},
                  {"problem", shape.ok() ? Json() : Json(shape.message())}};
      std::cout << row.dump() << "\n";
    } else {
      std::cout << t.id << "  " << t.name << (shape.ok() ? "" : "  [" + shape.message() + "]")
                << "\n";
    }
  }
  if (!a->Has("json")) {
    std::cerr << suite->size() << " tasks, " << malformed << " malformed\n";
  }
  return 0;
}

namespace {

std::vector<fs::path> PathList(const std::string& text) {
  std::vector<fs::path> paths;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) paths.push_back(fs::absolute(item));
  }
  return paths;
}

}  // namespace

int SandboxCommand(const Args& args) {
  static const std::vector<OptionSpec> specs = {
      {"writable", true, "comma-separated folders bound read-write", ""},
      {"read-only", true, "comma-separated folders bound read-only (after homes are hidden)", ""},
      {"hide", true, "comma-separated folders replaced by an empty tmpfs", ""},
      {"protect", true, "comma-separated files kept read-only and checked unchanged after the run",
       ""},
      {"cwd", true, "working folder inside", ""},
      {"gpu", false, "make /dev/nvidia* visible", ""},
      {"network", false, "keep the network", ""},
      {"timeout", true, "wall-clock seconds", "60"},
      {"memory", true, "cgroup memory limit in MiB (0: none)", "4096"},
      {"pids", true, "cgroup/rlimit process limit (0: none)", "256"},
      {"file-size", true, "largest file it may write, MiB", "1024"},
      {"json", false, "print the outcome as JSON instead of passing the output through", ""},
  };
  if (args.empty() || (args[0] != "run" && args[0] != "info")) {
    return UsageError(
        "sandbox", "usage: cuda-agent sandbox info | sandbox run [options] -- COMMAND...", specs);
  }
  const Sandbox& sandbox = Sandbox::Default();
  if (args[0] == "info") {
    std::cout << sandbox.Describe() << "\n";
    return 0;
  }
  Result<ParsedArgs> a = ParseArgs(specs, Args(args.begin() + 1, args.end()));
  if (!a.ok()) return UsageError("sandbox run", a.status().message(), specs);
  if (a->positional().empty())
    return UsageError("sandbox run", "no command given (put it after --)", specs);
  Result<double> timeout = ParseDoubleFlag(a.value(), "timeout");
  Result<int> memory = ParseIntFlag(a.value(), "memory");
  Result<int> pids = ParseIntFlag(a.value(), "pids");
  Result<int> fsize = ParseIntFlag(a.value(), "file-size");
  for (const Status& s : {timeout.status(), memory.status(), pids.status(), fsize.status()}) {
    if (!s.ok()) return UsageError("sandbox run", s.message(), specs);
  }
  SandboxPolicy policy;
  policy.writable = PathList(a->Get("writable"));
  policy.read_only = PathList(a->Get("read-only"));
  policy.hidden = PathList(a->Get("hide"));
  policy.protected_files = PathList(a->Get("protect"));
  policy.gpu = a->Has("gpu");
  policy.network = a->Has("network");
  policy.memory_bytes = static_cast<uint64_t>(memory.value()) << 20;
  policy.max_pids = static_cast<uint64_t>(pids.value());
  policy.limits.processes = static_cast<uint64_t>(pids.value());
  policy.limits.file_size_bytes = static_cast<uint64_t>(fsize.value()) << 20;
  policy.limits.open_files = 1024;
  policy.limits.cpu_seconds =
      static_cast<uint64_t>(timeout.value()) * 4 + 1;  // the watchdog comes first
  RunOptions inner;
  inner.argv = a->positional();
  inner.cwd = a->Get("cwd");
  inner.timeout_seconds = timeout.value();
  Result<SandboxRun> run = sandbox.Run(policy, inner);
  if (!run.ok()) {
    std::cerr << "cuda-agent sandbox run: " << run.status().message() << "\n";
    return kExitInternal;
  }
  const RunResult& p = run->process;
  if (a->Has("json")) {
    Json out = {{"isolation", IsolationName(run->isolation)},
                {"exit_code", p.exit_code},
                {"signal", p.term_signal},
                {"timed_out", p.timed_out},
                {"oom_killed", run->oom_killed},
                {"host_uid_dropped", run->host_uid_dropped},
                {"ended", p.Describe()},
                {"tampered", run->tampered},
                {"wall_seconds", p.wall_seconds},
                {"stdout", p.out},
                {"stderr", p.err}};
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << p.out;
  std::cerr << p.err;
  if (p.timed_out || p.term_signal) std::cerr << "cuda-agent sandbox: " << p.Describe() << "\n";
  for (const auto& f : run->tampered)
    std::cerr << "cuda-agent sandbox: protected file changed: " << f << "\n";
  if (!run->tampered.empty()) return 3;
  return p.timed_out ? 124 : p.term_signal ? 128 + p.term_signal : p.exit_code;
}

}  // namespace cuda_agent

namespace cuda_agent {

// `synth` (synth/synth.h): composes and filters fresh fused-op tasks into DIR.
int SynthCommand(const Args& args) {
  static const std::vector<OptionSpec> specs = {
      {"out", true, "output folder (tasks.jsonl, summary.json; rerun to resume)", ""},
      {"count", true, "tasks to keep", "100"},
      {"composer", true,
       "random (seeded, in the job) or llm:<model spec> (a model writes each program: "
       "llm:openai:URL#MODEL, llm:anthropic:MODEL, llm:replay:FILE; docs/synth.md)",
       "random"},
      {"max-ops", true, "most ops per program (1..5)", "5"},
      {"mix", true,
       "mix COUNT:WEIGHT,... over op counts 1..5 and t (single transformers ops) (default: the "
       "published 1:3.4,2:83.8,3:7.6,4:2.8,5:1.2,t:1.2)",
       ""},
      {"decontaminate", true, "suite (KernelBench folder, file or JSONL) no kept task may resemble",
       ""},
      {"candidates", true, "JSONL of {\"code\", \"ops\"} programs to filter instead of composing",
       ""},
      {"device", true, "cuda or cpu", "cuda"},
      {"seed", true, "seed of the candidates", "0"},
      {"min-ms", true, "eager runtime window, low end in ms (default: 1 on cuda, 0.1 on cpu)", ""},
      {"max-ms", true, "eager runtime window, high end in ms (default: 100)", ""},
      {"compile-check", true, "on | off | auto (auto: on for cuda, off for cpu)", "auto"},
      {"contamination-threshold", true, "drop above this AST similarity to a suite task", "0.9"},
      {"dedup-threshold", true, "drop at or above this similarity to a kept task with the same ops",
       "0.95"},
      {"max-candidates", true, "stop after this many candidates (default: 20 x count)", "0"},
      {"candidate-timeout", true, "seconds for one candidate's filters", "300"},
      {"time-limit", true,
       "stop after this many seconds (candidates in flight are filtered again on resume); 0: none",
       "0"},
      {"jobs", true,
       "candidates filtered at once (worker processes; default: 1 on cpu, min(CPUs - 2, 12) on "
       "cuda)",
       "0"},
      {"policy", true,
       "precision policy of the comparisons (strict | tf32-fair | paper | kernelbench)", "strict"},
      {"cache-dir", true, "toolchain cache", ""},
      {"json", false, "print the summary as JSON", ""},
  };
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("synth", a.status().message(), specs);
  if (!a->positional().empty())
    return UsageError("synth", "unexpected argument '" + a->positional()[0] + "'", specs);
  SynthOptions opt;
  opt.out_dir = a->Get("out");
  opt.composer = a->Get("composer");
  opt.decontaminate = a->Get("decontaminate");
  opt.candidates = a->Get("candidates");
  opt.compile_check = a->Get("compile-check");
  opt.policy = a->Get("policy");
  opt.cache_dir = a->Get("cache-dir");
  Result<Device> device = ParseDevice(a->Get("device"));
  Result<int> count = ParseIntFlag(a.value(), "count");
  Result<int> max_ops = ParseIntFlag(a.value(), "max-ops");
  Result<int> seed = ParseIntFlag(a.value(), "seed");
  Result<int> max_candidates = ParseIntFlag(a.value(), "max-candidates");
  Result<double> contamination = ParseDoubleFlag(a.value(), "contamination-threshold");
  Result<double> dedup = ParseDoubleFlag(a.value(), "dedup-threshold");
  Result<double> timeout = ParseDoubleFlag(a.value(), "candidate-timeout");
  Result<int> jobs = ParseIntFlag(a.value(), "jobs");
  for (const Status& s :
       {device.status(), count.status(), max_ops.status(), seed.status(), max_candidates.status(),
        contamination.status(), dedup.status(), timeout.status(), jobs.status()}) {
    if (!s.ok()) return UsageError("synth", s.message(), specs);
  }
  for (auto [flag, field] : {std::pair{"min-ms", &opt.min_ms}, {"max-ms", &opt.max_ms}}) {
    if (a->Get(flag).empty()) continue;
    Result<double> v = ParseDoubleFlag(a.value(), flag, true);
    if (!v.ok()) return UsageError("synth", v.status().message(), specs);
    *field = v.value();
  }
  if (!a->Get("mix").empty()) {
    Result<std::map<int, double>> mix = ParseMix(a->Get("mix"));
    if (!mix.ok()) return UsageError("synth", mix.status().message(), specs);
    opt.mix = mix.value();
  }
  opt.device = device.value();
  opt.count = count.value();
  opt.max_ops = max_ops.value();
  opt.seed = seed.value();
  opt.max_candidates = max_candidates.value();
  opt.contamination_threshold = contamination.value();
  opt.dedup_threshold = dedup.value();
  opt.candidate_timeout_s = timeout.value();
  opt.workers = jobs.value();
  if (!a->Get("time-limit").empty()) {
    Result<double> limit = ParseDoubleFlag(a.value(), "time-limit", true);
    if (!limit.ok()) return UsageError("synth", limit.status().message(), specs);
    opt.time_limit_s = limit.value();
  }
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent synth: " << env.status().message() << "\n";
    return kExitInternal;
  }
  Result<Json> summary = RunSynth(env.value(), opt);
  if (!summary.ok()) {
    std::cerr << "cuda-agent synth: " << summary.status().message() << "\n";
    return summary.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  }
  if (a->Has("json")) {
    std::cout << summary->dump(1) << "\n";
  } else {
    std::cout << "kept " << summary->value("kept", 0) << " of " << summary->value("candidates", 0)
              << " candidates (" << summary->value("requested", 0) << " requested) in "
              << opt.out_dir.string() << "/tasks.jsonl\n";
    const Json run = summary->value("run", Json::object());
    if (run.value("seconds", 0.0) > 0) {
      std::cout << "this run: " << run.value("kept", 0) << " kept of " << run.value("candidates", 0)
                << " candidates in " << run.value("seconds", 0.0) << " s with "
                << run.value("workers", 1) << " workers (" << run.value("kept_per_hour", 0.0)
                << " kept per hour)\n";
    }
    const Json stages = summary->value("stages", Json::object());
    for (const auto& stage_name : summary->value("stage_order", Json::array())) {
      const std::string stage = stage_name.get<std::string>();
      if (!stages.contains(stage)) continue;
      const Json& row = stages[stage];
      std::cout << "  " << stage << ": kept " << row.value("kept", 0) << ", dropped "
                << row.value("dropped", 0);
      if (row.value("skipped", 0) > 0) std::cout << ", skipped " << row.value("skipped", 0);
      std::cout << "\n";
    }
  }
  return summary->value("complete", false) ? 0 : kExitTaskError;
}

}  // namespace cuda_agent
