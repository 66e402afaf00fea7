// eval_commands.cc — `cuda-agent bench` and `cuda-agent baselines` (with `baselines
// export|import`): the command-line side of eval/ (docs/bench.md, docs/cli.md).
#include <algorithm>
#include <iostream>
#include <mutex>
#include <sstream>

#include "cli/agent_flags.h"
#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "eval/baselines_run.h"
#include "eval/bench.h"
#include "eval/report.h"
#include "judge/single_file_judge.h"
#include "queue/redis_judge.h"

namespace cuda_agent {
namespace {

Result<std::vector<int>> ParseLevels(const std::string& text) {
  std::vector<int> levels;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (item.find_first_not_of("0123456789") != std::string::npos || item.size() > 3) {
      return InvalidArgument("--levels expects numbers like 1,2,3, got '" + text + "'");
    }
    levels.push_back(std::stoi(item));
  }
  return levels;
}

struct Selection {
  fs::path suite;         // absolute
  std::vector<Task> all;  // every task of the suite
  std::vector<Task> tasks;
  std::vector<int> levels;  // --levels; empty: all
};

// SelectSuite loads SUITE and keeps the tasks of --levels, then --select and --limit.
Result<Selection> SelectSuite(const ParsedArgs& a) {
  if (a.positional().size() != 1) return InvalidArgument("expected one SUITE");
  Selection sel;
  sel.suite = fs::weakly_canonical(fs::absolute(a.positional()[0]));
  Result<std::vector<int>> levels = ParseLevels(a.Get("levels"));
  if (!levels.ok()) return levels.status();
  sel.levels = levels.value();
  Result<int> limit = ParseIntFlag(a, "limit");
  if (!limit.ok()) return limit.status();
  Result<std::vector<Task>> suite = LoadSuite(sel.suite);
  if (!suite.ok()) return suite.status();
  sel.all = suite.value();
  std::vector<Task> in_levels;
  for (const Task& t : suite.value()) {
    if (sel.levels.empty() ||
        std::find(sel.levels.begin(), sel.levels.end(), t.level) != sel.levels.end()) {
      in_levels.push_back(t);
    }
  }
  sel.tasks = SelectTasks(in_levels, a.Get("select"), limit.value());
  if (sel.tasks.empty()) return InvalidArgument("no task of " + sel.suite.string() + " matches");
  return sel;
}

// SuiteCommandSpecs: the judge's flags, the suite selection and --jobs, and a command's own flags.
std::vector<OptionSpec> SuiteCommandSpecs(const std::vector<OptionSpec>& own) {
  std::vector<OptionSpec> specs = {
      {"levels", true, "only tasks of these levels, e.g. 1,2,3", ""},
      {"select", true, "comma-separated task names or ids", ""},
      {"limit", true, "at most this many tasks", "0"},
      {"jobs", true, "tasks at once (timings still take the device one at a time)", "1"},
  };
  specs.insert(specs.end(), own.begin(), own.end());
  return WithJudgeSpecs(specs);
}

// SuiteArgs are what both suite commands parse the same way.
struct SuiteArgs {
  JudgeOptions options;
  int jobs = 1;
  Selection selection;
};

Result<SuiteArgs> ParseSuiteArgs(const ParsedArgs& a) {
  SuiteArgs s;
  Result<JudgeOptions> opt = OptionsFromArgs(a);
  if (!opt.ok()) return opt.status();
  s.options = std::move(opt).value();
  Result<int> jobs = ParseIntFlag(a, "jobs");
  if (!jobs.ok()) return jobs.status();
  if (jobs.value() < 1) return InvalidArgument("--jobs must be at least 1");
  s.jobs = jobs.value();
  Result<Selection> sel = SelectSuite(a);
  if (!sel.ok()) return sel.status();
  s.selection = std::move(sel).value();
  return s;
}

fs::path CacheDir(const JudgeOptions& opt) {
  return opt.cache_dir.empty() ? DefaultCacheDir() : opt.cache_dir;
}

fs::path BaselineStorePath(const JudgeOptions& opt) {
  return opt.baseline_store.empty() ? CacheDir(opt) / "store.sqlite" : opt.baseline_store;
}

int Internal(const std::string& command, const std::string& message) {
  std::cerr << "cuda-agent " << command << ": " << message << "\n";
  return kExitInternal;
}

// OverallLine: the overall row of the paper's table in one line.
std::string OverallLine(const Json& report) {
  const Json& o = report["metrics"]["overall"];
  std::string line = "overall: pass " + FormatRate(o["pass_rate"]);
  for (const char* b : {"eager", "compile"}) {
    if (!o[b].is_object()) continue;
    line += std::string(", faster than ") + b + " " + FormatRate(o[b]["faster_rate"]) +
            ", geomean vs " + b + " " + FormatTimes(o[b]["geomean_all"]) + " (correct only " +
            FormatTimes(o[b]["geomean_correct"]) + ")";
  }
  return line;
}

// --- baselines export / import ---

const std::vector<OptionSpec>& StoreSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"baseline-store", true,
       "SQLite file of stored baseline times (default: <cache-dir>/store.sqlite)", ""},
      {"cache-dir", true, "cache folder", ""},
      {"out", true, "(export) write the JSONL here instead of stdout", ""}};
  return specs;
}

fs::path StorePathFlag(const ParsedArgs& a) {
  if (!a.Get("baseline-store").empty()) return a.Get("baseline-store");
  return (a.Get("cache-dir").empty() ? DefaultCacheDir() : fs::path(a.Get("cache-dir"))) /
         "store.sqlite";
}

int BaselinesExport(const Args& args) {
  const std::vector<OptionSpec>& specs = StoreSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("baselines export", a.status().message(), specs);
  const fs::path path = StorePathFlag(a.value());
  if (!fs::exists(path))
    return UsageError("baselines export", "no store at " + path.string(), specs);
  Result<BaselineStore> store = BaselineStore::Open(path);
  if (!store.ok()) return Internal("baselines export", store.status().message());
  Result<std::vector<BaselineEntry>> entries = store->List();
  if (!entries.ok()) return Internal("baselines export", entries.status().message());
  std::string text;
  for (const BaselineEntry& e : entries.value()) text += BaselineEntryToJson(e).dump() + "\n";
  if (a->Get("out").empty()) {
    std::cout << text;
  } else if (Status s = WriteFileAtomic(a->Get("out"), text); !s.ok()) {
    return Internal("baselines export", s.message());
  }
  std::cerr << entries->size() << " baselines exported from " << path.string() << "\n";
  return 0;
}

int BaselinesImport(const Args& args) {
  const std::vector<OptionSpec>& specs = StoreSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("baselines import", a.status().message(), specs);
  if (a->positional().size() != 1)
    return UsageError("baselines import", "expected one FILE.jsonl", specs);
  Result<std::string> text = ReadFile(a->positional()[0]);
  if (!text.ok()) return UsageError("baselines import", text.status().message(), specs);
  const fs::path path = StorePathFlag(a.value());
  Result<BaselineStore> store = BaselineStore::Open(path);
  if (!store.ok()) return Internal("baselines import", store.status().message());
  std::istringstream lines(text.value());
  std::string line;
  int imported = 0, kept = 0, number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<Json> j = ParseJson(line, a->positional()[0] + ":" + std::to_string(number));
    Result<BaselineEntry> e =
        j.ok() ? BaselineEntryFromJson(j.value()) : Result<BaselineEntry>(j.status());
    if (!e.ok()) {
      return UsageError("baselines import",
                        "line " + std::to_string(number) + ": " + e.status().message(), specs);
    }
    // A newer measurement already stored here wins (ISO 8601 UTC times compare as text).
    std::optional<StoredBaseline> have = store->Get(e->key);
    if (have && have->measured_at > e->stored.measured_at) {
      ++kept;
      continue;
    }
    if (Status s = store->Import(e.value()); !s.ok())
      return Internal("baselines import", s.message());
    ++imported;
  }
  std::cout << imported << " baselines imported into " << path.string() << ", " << kept
            << " kept (newer here)\n";
  return 0;
}

}  // namespace

// --- baselines ---

int BaselinesCommand(const Args& args) {
  if (!args.empty() && args[0] == "export")
    return BaselinesExport(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "import")
    return BaselinesImport(Args(args.begin() + 1, args.end()));
  const std::vector<OptionSpec> specs =
      SuiteCommandSpecs({{"force", false, "measure again tasks whose baselines are stored", ""}});
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("baselines", a.status().message(), specs);
  Result<SuiteArgs> parsed = ParseSuiteArgs(a.value());
  if (!parsed.ok()) return UsageError("baselines", parsed.status().message(), specs);
  const JudgeOptions& opt = parsed->options;
  const Selection& sel = parsed->selection;
  if (!opt.use_baseline_store) {
    return UsageError("baselines",
                      "baselines are kept in the store: --baseline-store none is not possible here",
                      specs);
  }
  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) return Internal("baselines", env.status().message());

  // The store keys baselines by GPU model and torch version: ask the toolchain before measuring.
  const fs::path cache = CacheDir(opt);
  Result<fs::path> scratch = MakeTempDir(cache / "work", "baselines");
  if (!scratch.ok()) return Internal("baselines", scratch.status().message());
  Result<Toolchain> toolchain = DiscoverToolchain(env.value(), opt.device, cache, scratch.value());
  std::error_code ec;
  fs::remove_all(scratch.value(), ec);
  if (!toolchain.ok()) return Internal("baselines", toolchain.status().message());
  auto key = [&](const Task& t, const char* target) {
    return BaselineKeyFor(toolchain.value(), t.id, opt, target);
  };
  const fs::path store_path = BaselineStorePath(opt);
  Result<ResultsStore> results = ResultsStore::Open(store_path);
  Result<BaselineStore> baselines = BaselineStore::Open(store_path);
  if (!results.ok()) return Internal("baselines", results.status().message());
  if (!baselines.ok()) return Internal("baselines", baselines.status().message());
  const BaselineKey any = BaselineKeyFor(toolchain.value(), "", opt, "");
  const std::string run_id = BaselinesRunId(any, opt.eager_baseline, opt.compile_baseline);
  Status begun = results->BeginRun(run_id, {{"kind", "baselines"},
                                            {"device", any.device},
                                            {"torch_version", any.torch_version},
                                            {"policy", any.policy},
                                            {"warmup", any.warmup},
                                            {"iters", any.iters}});
  if (!begun.ok()) return Internal("baselines", begun.message());

  std::mutex lookup;
  const bool force = a->Has("force");
  TaskWork work = [&](const Task& task) {
    if (!force) {
      std::unique_lock<std::mutex> lock(lookup);
      std::optional<StoredBaseline> eager, compile;
      if (opt.eager_baseline) eager = baselines->Get(key(task, "eager"));
      if (opt.compile_baseline) compile = baselines->Get(key(task, "compile"));
      if ((!opt.eager_baseline || eager) && (!opt.compile_baseline || compile)) {
        return StoredBaselinesRecord(eager, compile);
      }
    }
    return BaselinesRecord(Judge(env.value()).Baselines(task, opt));
  };
  Status ran = RunSuite(sel.tasks, results.value(), {run_id, parsed->jobs, force}, work,
                        MakeProgressView(std::cerr));
  if (!ran.ok()) return Internal("baselines", ran.message());
  Result<std::map<std::string, Json>> records = results->Records(run_id);
  if (!records.ok()) return Internal("baselines", records.status().message());

  for (const Task& t : sel.tasks) {
    auto it = records->find(t.id);
    if (it == records->end()) continue;
    if (a->Has("json")) {
      std::cout << it->second.dump() << "\n";
    } else {
      std::cout << FormatBaselinesLine(it->second) << "\n";
    }
  }
  Json summary = BaselinesSummary(sel.tasks, records.value());
  if (a->Has("json")) {
    std::cout << Json{{"summary", summary}}.dump() << std::endl;
  } else {
    std::cout << "\n"
              << summary["tasks"] << " tasks: " << summary["measured"] << " measured, "
              << summary["cannot_run"].size() << " cannot run, " << summary["pending"]
              << " not finished; torch.compile failed on " << summary["compile_failed"].size()
              << "\n";
    for (auto [list, title] : {std::pair{"cannot_run", "tasks that cannot run"},
                               {"compile_failed", "torch.compile failed"},
                               {"internal_errors", "internal errors (re-run to retry)"}}) {
      if (summary[list].empty()) continue;
      std::cout << "\n" << title << ":\n";
      for (const Json& e : summary[list]) {
        std::cout << "  " << e["task"].get<std::string>() << ": " << e["reason"].get<std::string>()
                  << "\n";
      }
    }
    std::cout << std::flush;
  }
  std::cerr << "store: " << store_path.string() << " (run " << run_id << ")\n";
  return summary["internal_errors"].empty() ? 0 : kExitInternal;
}

// --- bench ---

namespace {

// JudgeFolderRemotely judges a candidate folder through a remote judge service as
// Judge::Run(&task, folder, options) judges it here: the folder read once (an unreadable one is the
// same static failure), its protected files checked here when it is a workspace, and the result
// naming the folder.
JudgeResult JudgeFolderRemotely(JudgeService& remote, const Task& task, const fs::path& folder,
                                const JudgeOptions& options) {
  Result<Candidate> candidate = Candidate::FromFolder(folder);
  if (!candidate.ok()) {
    JudgeResult r;
    r.device = DeviceName(options.device);
    r.candidate = {{"dir", folder.string()}, {"hash", Candidate().hash()}};
    r.Fail(Stage::kStatic, "unreadable_candidate",
           "cannot read the candidate: " + candidate.status().message());
    return r;
  }
  JudgeResult r = remote.Evaluate(
      {.task = task, .candidate = candidate.value(), .options = options, .workspace = folder});
  r.candidate["dir"] = folder.string();
  return r;
}

// InternalResult: a judgement our machinery could not make (not final: the task runs again).
JudgeResult InternalResult(const JudgeOptions& options, const std::string& why) {
  JudgeResult r;
  r.outcome = Outcome::kInternalError;
  r.device = DeviceName(options.device);
  r.error_kind = "internal";
  r.reason = why;
  return r;
}

// JudgeFileHere judges KernelBench's single-file solution in this process.
JudgeResult JudgeFileHere(const HarnessEnv& env, const Task& task, const fs::path& file,
                          const JudgeOptions& options) {
  Result<JudgeResult> r = JudgeSingleFile(env, task, file, options);
  if (!r.ok())
    return InternalResult(options, "cannot convert " + file.string() + ": " + r.status().message());
  return std::move(r).value();
}

// JudgeFileRemotely converts the file here (statically) and sends the candidate to the workers.
JudgeResult JudgeFileRemotely(const HarnessEnv& env, JudgeService& remote, const Task& task,
                              const fs::path& file, const JudgeOptions& options) {
  Result<SingleFileCandidate> converted = CandidateFromSingleFile(env, file);
  if (!converted.ok())
    return InternalResult(options,
                          "cannot convert " + file.string() + ": " + converted.status().message());
  if (!converted->conversion.ok) return SingleFileRefusal(file, converted->conversion, options);
  JudgeResult r = remote.Evaluate({.task = task,
                                   .candidate = converted->candidate,
                                   .options = options,
                                   .workspace = fs::path()});
  r.candidate["dir"] = file.string();
  r.candidate["single_file"] = SingleFileJson(file, converted->conversion);
  return r;
}

// PrintInventory: what the solver found in its folder, and each file it cannot use, on stderr.
void PrintInventory(const SolverInventory& inv) {
  if (inv.summary.is_object()) {
    const Json& s = inv.summary;
    std::cerr << "kernelbench: " << s.value("dir", std::string()) << " ("
              << s.value("layout", std::string()) << "): " << s["files"] << " solution files of "
              << s["problems"] << " problems of the suite, " << s["judged_files"]
              << " to judge (--sample " << s.value("sample", std::string()) << ")\n";
  }
  if (!inv.unused.empty()) std::cerr << inv.unused.size() << " files not used:\n";
  for (const Json& u : inv.unused) {
    std::cerr << "  " << u.value("file", std::string()) << ": " << u.value("reason", std::string())
              << "\n";
  }
}

}  // namespace

int BenchCommand(const Args& args) {
  std::vector<OptionSpec> own = {
      {"solver", true,
       "solutions:<dir> (a folder mirroring the suite), kernelbench:<dir> (a KernelBench run "
       "folder or its leaderboard) or agent:<model spec>",
       ""},
      {"sample", true,
       "kernelbench: solver: which sample of each problem: an id (KernelBench's fast_p takes 0), "
       "a leaderboard model, or best (every sample judged, the best kept)",
       ""},
      {"out", true, "write report.md, report.json and report.html into this folder", ""},
      {"store", true, "SQLite file of the run's results (default: <cache-dir>/store.sqlite)", ""},
      {"force", false, "forget this run's stored results and judge every task again", ""},
      {"report-only", false, "judge nothing: build the reports from the stored results", ""},
      {"agent-timeout", true,
       "seconds of each agent episode: no new turn after this long (agent solver)", "7200"},
      {"redis", true,
       "judge on `cuda-agent worker` hosts through this Redis queue: redis://HOST[:PORT][/DB] "
       "(default: in this process; --jobs judgements are then in flight at once)",
       ""},
  };
  // The agent solver's episodes take the same agent flags as `solve`.
  own.insert(own.end(), AgentSpecs().begin(), AgentSpecs().end());
  const std::vector<OptionSpec> specs = SuiteCommandSpecs(own);
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("bench", a.status().message(), specs);
  if (a->Get("solver").empty()) return UsageError("bench", "--solver is required", specs);
  if (a->Get("until") != "profile")
    return UsageError("bench", "--until: a benchmark judges to the end", specs);
  Result<SuiteArgs> parsed = ParseSuiteArgs(a.value());
  if (!parsed.ok()) return UsageError("bench", parsed.status().message(), specs);
  const JudgeOptions& opt = parsed->options;
  const Selection& sel = parsed->selection;
  Result<double> agent_timeout = ParseDoubleFlag(a.value(), "agent-timeout");
  if (!agent_timeout.ok()) return UsageError("bench", agent_timeout.status().message(), specs);

  const fs::path cache = CacheDir(opt);
  const fs::path out = a->Get("out").empty() ? fs::path() : fs::absolute(a->Get("out"));
  const std::string device = DeviceName(opt.device);
  // The harness: the judge's and the agent's workspaces' (checked where it is needed).
  Result<HarnessEnv> env = HarnessEnv::Discover();
  SolverContext ctx{.suite = sel.suite, .work_dir = {}, .episode = {}, .sample = a->Get("sample")};
  if (Status s = AgentOptionsFromArgs(a.value(), &ctx.episode); !s.ok())
    return UsageError("bench", s.message(), specs);
  ctx.episode.judge = opt;
  ctx.episode.time_limit_s = agent_timeout.value();
  ctx.episode.binary = ExecutablePath();
  if (env.ok()) ctx.episode.env = env.value();
  ctx.work_dir =
      !out.empty()
          ? out / "workspaces"
          : cache / "bench-workspaces" /
                MakeRunId("agent", {sel.suite.string(), a->Get("solver"), opt.policy.name, device});
  Result<std::unique_ptr<Solver>> made = MakeSolver(a->Get("solver"), ctx);
  if (!made.ok()) return UsageError("bench", made.status().message(), specs);
  Solver& solver = *made.value();
  if (!a->Get("sample").empty() && a->Get("solver").rfind("kernelbench:", 0) != 0)
    return UsageError("bench", "--sample is for --solver kernelbench:<dir>", specs);
  // A solver that reads a folder of files (kernelbench:) says which it cannot use; without
  // --levels the run takes the levels its files cover (a KernelBench run folder is one level).
  SolverInventory inventory = solver.Inventory(sel.all);
  std::vector<Task> tasks = sel.tasks;
  if (sel.levels.empty() && !inventory.levels.empty()) {
    std::erase_if(tasks, [&](const Task& t) {
      return std::find(inventory.levels.begin(), inventory.levels.end(), t.level) ==
             inventory.levels.end();
    });
    if (tasks.empty())
      return UsageError("bench", "no task of the selection is in the solver's levels", specs);
  }

  BenchRun run{"",         sel.suite.string(), solver.Spec(),        opt.policy.name, device,
               sel.levels, opt.eager_baseline, opt.compile_baseline, inventory};
  run.run_id = BenchRunId(run);
  const fs::path store_path =
      a->Get("store").empty() ? cache / "store.sqlite" : fs::path(a->Get("store"));
  Result<ResultsStore> store = ResultsStore::Open(store_path);
  if (!store.ok()) return Internal("bench", store.status().message());

  if (!a->Has("report-only")) {
    if (!env.ok()) return Internal("bench", env.status().message());
    if (Status s = solver.Check(); !s.ok()) {
      if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument)
        return UsageError("bench", s.message(), specs);
      return Internal("bench", s.message());
    }
    // --redis: the judgements go to the workers (RedisJudge); the records are made the same way.
    std::unique_ptr<RedisJudge> remote;
    if (const std::string url = a->Get("redis"); !url.empty()) {
      if (Result<RedisUrl> parsed = ParseRedisUrl(url); !parsed.ok())
        return UsageError("bench", "--redis: " + parsed.status().message(), specs);
      Result<std::unique_ptr<RedisJudge>> connected = RedisJudge::Connect({.url = url});
      if (!connected.ok())
        return Internal("bench",
                        "--redis: cannot use the judge queue: " + connected.status().message());
      remote = std::move(connected).value();
    }
    JudgeFn judge = [&](const Task& task, const fs::path& candidate) {
      // A .py file is KernelBench's single-file solution (the kernelbench: solver's candidates).
      std::error_code ec;
      if (candidate.extension() == ".py" && fs::is_regular_file(candidate, ec)) {
        if (!remote) return JudgeFileHere(env.value(), task, candidate, opt);
        return JudgeFileRemotely(env.value(), *remote, task, candidate, opt);
      }
      if (!remote) return Judge(env.value()).Run(&task, candidate, opt);
      return JudgeFolderRemotely(*remote, task, candidate, opt);
    };
    PrintInventory(inventory);
    std::cerr << "run " << run.run_id << ": " << tasks.size() << " tasks, store "
              << store_path.string() << "\n";
    Status ran = RunBench(run, tasks, solver, judge, store.value(),
                          {run.run_id, parsed->jobs, a->Has("force")}, MakeProgressView(std::cerr));
    if (!ran.ok()) return Internal("bench", ran.message());
  }
  Result<std::map<std::string, Json>> records = store->Records(run.run_id);
  if (!records.ok()) return Internal("bench", records.status().message());
  Json report = BuildBenchReport(run, tasks, records.value());
  if (!out.empty()) {
    if (Status s = WriteReports(report, out); !s.ok()) return Internal("bench", s.message());
    std::cerr << "reports: " << (out / "report.md").string() << ", report.json, report.html\n";
  }
  if (a->Has("json")) {
    std::cout << report.dump(2) << "\n";
  } else if (out.empty()) {
    std::cout << MakeMarkdownReport()->Render(report, fs::current_path());
  } else {
    std::cout << OverallLine(report) << "\n";
  }
  return report["counts"]["internal_error"] == 0 ? 0 : kExitInternal;
}

}  // namespace cuda_agent
