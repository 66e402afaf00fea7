// dist_commands.cc — `cuda-agent worker` (judge jobs from Redis Streams), `cuda-agent queue
// status|submit|bench` (look at, use and measure the queue) and the hidden `__judge-job` that a
// worker runs for each judgement (docs/scaling.md).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "harness/client.h"
#include "queue/redis_judge.h"
#include "queue/worker.h"

namespace cuda_agent {
namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

void InstallStopHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

Result<std::vector<std::string>> ParseGpuList(const std::string& text) {
  std::vector<std::string> gpus;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty() || item.size() > 3 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return InvalidArgument("--gpus expects GPU indices like 0,1,2, got '" + text + "'");
    gpus.push_back(item);
  }
  if (gpus.empty()) return InvalidArgument("--gpus expects GPU indices like 0,1,2");
  return gpus;
}

const std::vector<OptionSpec>& WorkerSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"redis", true, "the queue: redis://HOST[:PORT][/DB] (required)", ""},
      {"device", true, "cuda or cpu: the stream this worker takes jobs from", "cuda"},
      {"gpus", true, "CUDA: one consumer per GPU index, e.g. 0,1,2,3 (default: 0)", "0"},
      {"consumers", true,
       "jobs judged at a time: on the CPU in all, on CUDA per GPU (timings stay one at a time)",
       "1"},
      {"name", true, "this worker's name in Redis (default: HOST-PID)", ""},
      {"visibility", true, "seconds after which a dead consumer's job is taken over", "60"},
      {"max-deliveries", true, "deliveries without a result before the dead-letter stream", "3"},
      {"job-timeout", true, "seconds one judgement may take before it is killed", "3600"},
      {"heartbeat", true, "seconds between heartbeats (the state hash expires after 3)", "5"},
      {"result-ttl", true, "seconds a stored result is kept (equal jobs share it)", "3600"},
      {"cache-dir", true, "this host's objects, toolchain, work folders and baseline store", ""},
      {"baseline-store", true, "this host's baseline store (default: <cache-dir>/store.sqlite)",
       ""},
      {"build-jobs", true, "parallel compilations per judgement (0: all CPUs)", "0"},
  };
  return specs;
}

}  // namespace

int WorkerCommand(const Args& args) {
  const auto& specs = WorkerSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("worker", a.status().message(), specs);
  if (!a->positional().empty())
    return UsageError("worker", "unexpected argument '" + a->positional()[0] + "'", specs);
  if (a->Get("redis").empty()) return UsageError("worker", "--redis URL is required", specs);
  WorkerOptions o;
  o.url = a->Get("redis");
  if (Result<RedisUrl> u = ParseRedisUrl(o.url); !u.ok())
    return UsageError("worker", "--redis: " + u.status().message(), specs);
  Result<Device> device = ParseDevice(a->Get("device"));
  if (!device.ok()) return UsageError("worker", "--device: " + device.status().message(), specs);
  o.device = device.value();
  if (o.device == Device::kCuda) {
    Result<std::vector<std::string>> gpus = ParseGpuList(a->Get("gpus"));
    if (!gpus.ok()) return UsageError("worker", gpus.status().message(), specs);
    o.gpus = gpus.value();
  } else if (a->Has("gpus")) {
    return UsageError("worker", "--gpus is for --device cuda; on the CPU use --consumers N", specs);
  }
  Result<int> consumers = ParseIntFlag(a.value(), "consumers");
  if (!consumers.ok()) return UsageError("worker", consumers.status().message(), specs);
  if (consumers.value() < 1 || consumers.value() > 1024)
    return UsageError("worker", "--consumers must be 1..1024", specs);
  o.consumers = consumers.value();
  Result<int> deliveries = ParseIntFlag(a.value(), "max-deliveries");
  if (!deliveries.ok()) return UsageError("worker", deliveries.status().message(), specs);
  if (deliveries.value() < 1) return UsageError("worker", "--max-deliveries must be >= 1", specs);
  o.max_deliveries = deliveries.value();
  for (auto [name, field] : {std::pair{"visibility", &o.visibility_s},
                             {"job-timeout", &o.job_timeout_s},
                             {"heartbeat", &o.heartbeat_s},
                             {"result-ttl", &o.result_ttl_s}}) {
    Result<double> v = ParseDoubleFlag(a.value(), name);
    if (!v.ok()) return UsageError("worker", v.status().message(), specs);
    *field = v.value();
  }
  o.name = a->Get("name");
  o.judge_command = {ExecutablePath().string(), "__judge-job", "--device", DeviceName(o.device)};
  for (const char* flag : {"cache-dir", "baseline-store", "build-jobs"}) {
    if (a->Has(flag)) {
      o.judge_command.push_back(std::string("--") + flag);
      o.judge_command.push_back(a->Get(flag));
    }
  }
  if (a->Has("cache-dir")) o.work_dir = fs::path(a->Get("cache-dir")) / "dist";
  InstallStopHandlers();
  Status s = RunWorker(o, g_stop);
  if (!s.ok()) {
    std::cerr << "cuda-agent worker: " << s.message() << "\n";
    return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  }
  return kExitVerdict;
}

int JudgeJobCommand(const Args& args) {
  std::vector<OptionSpec> specs = WithJudgeSpecs(
      {{"job", true, "the job's JSON file", ""}, {"out", true, "the result file", ""}});
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("__judge-job", a.status().message(), specs);
  if (a->Get("job").empty() || a->Get("out").empty())
    return UsageError("__judge-job", "--job and --out are required", specs);
  Result<JudgeOptions> local = OptionsFromArgs(a.value());
  if (!local.ok()) return UsageError("__judge-job", local.status().message(), specs);
  Status s = JudgeJobFile(a->Get("job"), a->Get("out"), local.value());
  if (!s.ok()) {
    std::cerr << "cuda-agent __judge-job: " << s.message() << "\n";
    return kExitInternal;
  }
  return kExitVerdict;
}

namespace {

int QueueStatus(const Args& args) {
  static const std::vector<OptionSpec> specs = {
      {"redis", true, "the queue: redis://HOST[:PORT][/DB] (required)", ""}};
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("queue status", a.status().message(), specs);
  if (a->Get("redis").empty()) return UsageError("queue status", "--redis URL is required", specs);
  Result<Json> states = WorkerStates(a->Get("redis"));
  if (!states.ok()) {
    std::cerr << "cuda-agent queue status: " << states.status().message() << "\n";
    return states.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  }
  std::cout << states->dump(2) << "\n";
  return kExitVerdict;
}

int QueueDead(const Args& args) {
  static const std::vector<OptionSpec> specs = {
      {"redis", true, "the queue: redis://HOST[:PORT][/DB] (required)", ""},
      {"device", true, "the stream: cuda or cpu", "cuda"},
      {"count", true, "at most this many, oldest first", "100"}};
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("queue dead", a.status().message(), specs);
  if (a->Get("redis").empty()) return UsageError("queue dead", "--redis URL is required", specs);
  Result<Device> device = ParseDevice(a->Get("device"));
  if (!device.ok()) return UsageError("queue dead", device.status().message(), specs);
  Result<int> count = ParseIntFlag(a.value(), "count");
  if (!count.ok() || count.value() < 1)
    return UsageError("queue dead", "--count must be a positive integer", specs);
  Result<Json> letters = DeadLetters(a->Get("redis"), device.value(), count.value());
  if (!letters.ok()) {
    std::cerr << "cuda-agent queue dead: " << letters.status().message() << "\n";
    return letters.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
  }
  std::cout << letters->dump(2) << "\n";
  return kExitVerdict;
}

const std::vector<OptionSpec>& SubmitSpecs() {
  static const std::vector<OptionSpec> specs = WithJudgeSpecs(
      {{"redis", true, "the queue: redis://HOST[:PORT][/DB] (required)", ""},
       {"wait", true, "seconds to wait for the result (reconnects included)", "7200"},
       {"count", true, "(bench) jobs to submit", "100"},
       {"concurrency", true, "(bench) jobs in flight at a time", "1"},
       {"noop", false,
        "(bench) the no-op benchmark mode: workers answer without judging, so the "
        "times are the queue's alone",
        ""},
       {"results", true,
        "(bench) a JSONL file for every job's whole result (stages, jobs, evidence), in the "
        "order they came back",
        ""}});
  return specs;
}

struct Submission {
  Task task;
  fs::path candidate;
  JudgeOptions options;
  std::unique_ptr<RedisJudge> judge;
};

// PrepareSubmission reads the flags common to submit and bench; on error it prints and returns the
// exit status in `exit_status`.
std::optional<Submission> PrepareSubmission(const std::string& command, const Args& args,
                                            ParsedArgs* parsed, int* exit_status, bool noop) {
  const auto& specs = SubmitSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) {
    *exit_status = UsageError(command, a.status().message(), specs);
    return std::nullopt;
  }
  *parsed = a.value();
  auto usage = [&](const std::string& m) {
    *exit_status = UsageError(command, m, specs);
    return std::nullopt;
  };
  if (a->Get("redis").empty()) return usage("--redis URL is required");
  if (a->Get("task").empty()) return usage("--task is required");
  if (a->Get("candidate").empty()) return usage("--candidate is required");
  Submission s;
  s.candidate = a->Get("candidate");
  if (!fs::is_directory(s.candidate))
    return usage("candidate folder not found: " + s.candidate.string());
  Result<JudgeOptions> opt = OptionsFromArgs(a.value());
  if (!opt.ok()) return usage(opt.status().message());
  s.options = opt.value();
  Result<Task> task = LoadTask(a->Get("task"));
  if (!task.ok()) return usage(task.status().message());
  s.task = task.value();
  Result<double> wait = ParseDoubleFlag(a.value(), "wait");
  if (!wait.ok()) return usage(wait.status().message());
  Result<std::unique_ptr<RedisJudge>> judge = RedisJudge::Connect(
      {.url = a->Get("redis"), .wait_seconds = wait.value(), .noop_benchmark = noop});
  if (!judge.ok()) {
    std::cerr << "cuda-agent " << command << ": " << judge.status().message() << "\n";
    *exit_status =
        judge.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitInternal;
    return std::nullopt;
  }
  s.judge = std::move(judge).value();
  return s;
}

int QueueSubmit(const Args& args) {
  ParsedArgs a;
  int status = 0;
  std::optional<Submission> s = PrepareSubmission("queue submit", args, &a, &status, false);
  if (!s) return status;
  JudgeResult r = s->judge->Evaluate({.task = s->task,
                                      .candidate = {},
                                      .options = s->options,
                                      .workspace = fs::absolute(s->candidate)});
  if (a.Has("json")) {
    std::cout << r.ToJson().dump(2) << "\n";
  } else {
    std::cout << r.ToText();
  }
  return ExitStatusFor(r);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// A distinct candidate per job (a comment in its first source file), so that no job is answered
// by an earlier result and every one is compiled, as new candidates are in training.
Result<Candidate> Variant(const Candidate& base, const std::string& tag) {
  std::map<std::string, std::string> files = base.files();
  if (files.empty()) return InvalidArgument("the candidate has no files");
  auto it = files.begin();
  for (auto f = files.begin(); f != files.end(); ++f) {
    if (f->first.rfind("kernels/", 0) == 0) {
      it = f;
      break;
    }
  }
  bool python = it->first.size() > 3 && it->first.substr(it->first.size() - 3) == ".py";
  it->second += (python ? "\n# " : "\n// ") + tag + "\n";
  return Candidate::FromFiles(std::move(files));
}

int QueueBench(const Args& args) {
  ParsedArgs a;
  int status = 0;
  bool noop = std::find(args.begin(), args.end(), "--noop") != args.end();
  std::optional<Submission> s = PrepareSubmission("queue bench", args, &a, &status, noop);
  if (!s) return status;
  Result<int> count = ParseIntFlag(a, "count");
  Result<int> concurrency = ParseIntFlag(a, "concurrency");
  if (!count.ok() || !concurrency.ok() || count.value() < 1 || concurrency.value() < 1)
    return UsageError("queue bench", "--count and --concurrency must be positive integers",
                      SubmitSpecs());
  Result<Candidate> base = Candidate::FromFolder(s->candidate);
  if (!base.ok()) return UsageError("queue bench", base.status().message(), SubmitSpecs());
  std::string nonce =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000000000LL);
  std::vector<double> latency_ms;
  std::map<std::string, int> outcomes;
  std::mutex mu;
  std::ofstream results;
  if (!a.Get("results").empty()) {
    results.open(a.Get("results"), std::ios::trunc);
    if (!results)
      return UsageError("queue bench", "--results: cannot write " + a.Get("results"),
                        SubmitSpecs());
  }
  std::atomic<int> next{0};
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency.value(); ++t) {
    threads.emplace_back([&] {
      while (true) {
        int i = next.fetch_add(1);
        if (i >= count.value()) return;
        Result<Candidate> c =
            Variant(base.value(), "queue bench " + nonce + " " + std::to_string(i));
        auto start = std::chrono::steady_clock::now();
        JudgeResult r = c.ok() ? s->judge->Evaluate({.task = s->task,
                                                     .candidate = c.value(),
                                                     .options = s->options,
                                                     .workspace = {}})
                               : JudgeResult{};
        double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        std::string key = r.outcome == Outcome::kInternalError ? "internal_error:" + r.error_kind
                          : r.reward ? "reward " + std::to_string(*r.reward)
                                     : "no reward (" + r.error_kind + ")";
        std::lock_guard<std::mutex> lock(mu);
        latency_ms.push_back(ms);
        ++outcomes[key];
        if (results.is_open()) results << r.ToJson().dump() << "\n" << std::flush;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double mean = 0;
  for (double v : latency_ms) mean += v / static_cast<double>(latency_ms.size());
  Json out = {{"redis", s->judge->Describe()},
              {"mode", noop ? "noop (not judged: the queue alone)" : "judged"},
              {"device", DeviceName(s->options.device)},
              {"jobs", count.value()},
              {"concurrency", concurrency.value()},
              {"wall_s", wall},
              {"jobs_per_hour", count.value() / wall * 3600},
              {"latency_ms",
               {{"p50", Percentile(latency_ms, 0.5)},
                {"p90", Percentile(latency_ms, 0.9)},
                {"p99", Percentile(latency_ms, 0.99)},
                {"min", Percentile(latency_ms, 0)},
                {"max", Percentile(latency_ms, 1)},
                {"mean", mean}}},
              {"outcomes", outcomes}};
  if (a.Has("json")) {
    std::cout << out.dump(2) << "\n";
  } else {
    char line[256];
    std::snprintf(line, sizeof(line),
                  "%d jobs (%s), concurrency %d: %.1f s, %.0f jobs/hour; submit→result p50 %.2f "
                  "ms, p90 %.2f ms, p99 %.2f ms\n",
                  count.value(), noop ? "no-op" : "judged", concurrency.value(), wall,
                  count.value() / wall * 3600, Percentile(latency_ms, 0.5),
                  Percentile(latency_ms, 0.9), Percentile(latency_ms, 0.99));
    std::cout << line << "outcomes: " << Json(outcomes).dump() << "\n";
  }
  return kExitVerdict;
}

}  // namespace

int QueueCommand(const Args& args) {
  const std::string usage =
      "usage: cuda-agent queue status --redis URL\n"
      "       cuda-agent queue dead --redis URL [--device cuda|cpu] [--count N]\n"
      "       cuda-agent queue submit --redis URL --task TASK --candidate DIR [judge options]\n"
      "       cuda-agent queue bench --redis URL --task TASK --candidate DIR [--count N] "
      "[--concurrency C] [--noop] [--results FILE.jsonl]\n";
  if (args.empty()) {
    std::cerr << "cuda-agent queue: expected status, dead, submit or bench\n" << usage;
    return kExitUsage;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "status") return QueueStatus(rest);
  if (args[0] == "dead") return QueueDead(rest);
  if (args[0] == "submit") return QueueSubmit(rest);
  if (args[0] == "bench") return QueueBench(rest);
  std::cerr << "cuda-agent queue: unknown subcommand '" << args[0] << "'\n" << usage;
  return kExitUsage;
}

}  // namespace cuda_agent
