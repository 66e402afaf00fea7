// synth.cc — the C++ side of `cuda-agent synth` (synth.h).
#include "synth/synth.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "harness/job_policy.h"
#include "judge/precision.h"
#include "synth/llm_composer.h"
#include "task/task.h"

namespace cuda_agent {

namespace {

constexpr int kMaxRestartsWithoutProgress = 2;

// DecisionLines counts the lines of DIR/decisions.jsonl (how far the job got).
size_t DecisionLines(const fs::path& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return 0;
  size_t n = 0;
  for (char c : text.value()) n += c == '\n';
  return n;
}

// WriteSuite writes the decontamination suite's programs where the job can read them.
Result<Json> WriteSuite(const fs::path& suite_path, const fs::path& dir) {
  Result<std::vector<Task>> suite = LoadSuite(suite_path);
  if (!suite.ok()) return InvalidArgument("--decontaminate: " + suite.status().message());
  if (suite->empty())
    return InvalidArgument("--decontaminate: " + suite_path.string() + " holds no task");
  fs::create_directories(dir);
  Json tasks = Json::array();
  for (size_t i = 0; i < suite->size(); ++i) {
    const Task& t = suite->at(i);
    fs::path file = dir / ("task_" + std::to_string(i) + ".py");
    if (Status s = WriteFileAtomic(file, t.code); !s.ok()) return s;
    tasks.push_back({{"name", t.name}, {"path", file.string()}});
  }
  return Json{{"name", suite_path.string()}, {"tasks", tasks}};
}

}  // namespace

std::map<int, double> PaperMix() {
  return {{kTransformersMixKey, 1.2}, {1, 3.4}, {2, 83.8}, {3, 7.6}, {4, 2.8}, {5, 1.2}};
}

Result<std::map<int, double>> ParseMix(const std::string& text) {
  std::map<int, double> mix;
  std::stringstream in(text);
  std::string part;
  double total = 0;
  while (std::getline(in, part, ',')) {
    size_t colon = part.find(':');
    char* end = nullptr;
    const bool transformers = colon == 1 && part[0] == 't';
    long n = colon == std::string::npos ? 0
             : transformers             ? kTransformersMixKey
                                        : std::strtol(part.c_str(), &end, 10);
    bool count_ok = colon != std::string::npos &&
                    (transformers || (end == part.c_str() + colon && n >= 1 && n <= 5));
    double w = count_ok ? std::strtod(part.c_str() + colon + 1, &end) : -1;
    if (!count_ok || *end != '\0' || !(w >= 0) || !std::isfinite(w)) {
      return InvalidArgument(
          "--mix entry '" + part +
          "' is not COUNT:WEIGHT (counts 1..5 or t for single transformers ops, weights >= 0)");
    }
    mix[static_cast<int>(n)] = w;
    total += w;
  }
  if (!(total > 0)) return InvalidArgument("--mix needs at least one positive weight");
  return mix;
}

std::pair<double, double> RuntimeWindow(Device device) {
  return device == Device::kCuda ? std::pair{1.0, 100.0} : std::pair{0.1, 100.0};
}

// DefaultWorkers: --jobs, else one on the CPU (the filters time wall-clock there) and on CUDA one
// per spare CPU up to 12 (compilation runs on the CPUs; timed measurements take turns per GPU).
int DefaultWorkers(const SynthOptions& opt) {
  if (opt.workers > 0) return opt.workers;
  if (opt.device != Device::kCuda) return 1;
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cpus - 2, 1, 12);
}

Result<Json> RunSynth(const HarnessEnv& env, const SynthOptions& opt) {
  if (opt.out_dir.empty()) return InvalidArgument("--out is required");
  const bool llm = opt.composer.rfind("llm:", 0) == 0;
  if (opt.composer != "random" && !(llm && opt.composer.size() > 4)) {
    return InvalidArgument("--composer '" + opt.composer +
                           "' is not available: use 'random' or 'llm:<model spec>'");
  }
  if (llm && !opt.candidates.empty())
    return InvalidArgument("--candidates and --composer llm:... exclude each other");
  if (opt.count < 1) return InvalidArgument("--count must be at least 1");
  if (opt.workers < 0)
    return InvalidArgument("--jobs must be at least 1 (0: the device's default)");
  if (opt.max_ops < 1 || opt.max_ops > 5) return InvalidArgument("--max-ops must be 1..5");
  if (opt.compile_check != "on" && opt.compile_check != "off" && opt.compile_check != "auto") {
    return InvalidArgument("--compile-check expects on, off or auto, got '" + opt.compile_check +
                           "'");
  }
  auto [min_default, max_default] = RuntimeWindow(opt.device);
  const double min_ms = opt.min_ms >= 0 ? opt.min_ms : min_default;
  const double max_ms = opt.max_ms >= 0 ? opt.max_ms : max_default;
  if (!(min_ms < max_ms)) return InvalidArgument("the runtime window needs --min-ms < --max-ms");
  const std::map<int, double> mix = opt.mix.empty() ? PaperMix() : opt.mix;
  bool any_allowed = false;
  for (auto [n, w] : mix) any_allowed |= n <= opt.max_ops && w > 0;  // (transformers: 0 <= max_ops)
  if (!any_allowed) return InvalidArgument("the op-count mix has no weight at or below --max-ops");
  if (!opt.candidates.empty() && !fs::is_regular_file(opt.candidates)) {
    return InvalidArgument("--candidates: no such file " + opt.candidates.string());
  }
  Result<PrecisionPolicy> policy = MakePrecisionPolicy(opt.policy);
  if (!policy.ok()) return policy.status();

  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  if (ec)
    return InvalidArgument("cannot create --out " + opt.out_dir.string() + ": " + ec.message());
  const fs::path out = fs::absolute(opt.out_dir);
  const fs::path jobs_dir = out / "work" / "jobs";
  fs::create_directories(jobs_dir);
  Json suite;
  if (!opt.decontaminate.empty()) {
    Result<Json> written = WriteSuite(opt.decontaminate, out / "work" / "suite");
    if (!written.ok()) return written.status();
    suite = written.value();
  }
  const fs::path cache_dir = opt.cache_dir.empty() ? DefaultCacheDir() : opt.cache_dir;
  Result<Toolchain> toolchain = DiscoverToolchain(env, opt.device, cache_dir, jobs_dir);
  if (!toolchain.ok()) return toolchain.status();
  const Sandbox& sandbox = opt.sandbox ? *opt.sandbox : Sandbox::Default();
  JobSandbox box{&sandbox,
                 BaseJobPolicy(toolchain.value(), {opt.device, cache_dir, 0, 4096,
                                                   std::max(opt.candidate_timeout_s, 60.0)}),
                 PythonInside(toolchain.value()),
                 {},
                 {"TORCHINDUCTOR_CACHE_DIR=" + (out / "work" / "inductor").string()}};
  box.policy.writable.push_back(out);
  if (!opt.candidates.empty()) box.policy.read_only.push_back(fs::absolute(opt.candidates));

  Json mix_json = Json::object();
  for (auto [n, w] : mix) {
    if (n != kTransformersMixKey) mix_json[std::to_string(n)] = w;
  }
  const double transformers_share =
      mix.count(kTransformersMixKey) ? mix.at(kTransformersMixKey) : 0.0;
  const bool compile =
      opt.compile_check == "on" || (opt.compile_check == "auto" && opt.device == Device::kCuda);
  Json spec = {{"out_dir", out.string()},
               {"device", DeviceName(opt.device)},
               {"seed", opt.seed},
               {"count", opt.count},
               {"max_ops", opt.max_ops},
               {"mix", mix_json},
               {"transformers_share", transformers_share},
               {"tolerance", policy->Tolerance()},
               {"min_ms", min_ms},
               {"max_ms", max_ms},
               {"compile_check", compile},
               {"contamination_threshold", opt.contamination_threshold},
               {"dedup_threshold", opt.dedup_threshold},
               {"max_candidates", opt.max_candidates > 0 ? opt.max_candidates : 20 * opt.count},
               {"candidate_timeout_s", opt.candidate_timeout_s},
               {"workers", DefaultWorkers(opt)},
               {"time_limit_s", opt.time_limit_s},
               {"suite", suite},
               {"candidates_path",
                opt.candidates.empty() ? Json() : Json(fs::absolute(opt.candidates).string())}};
  const fs::path decisions = out / "decisions.jsonl";
  // run_job runs the job to its end and returns its result, restarting it when it dies on a
  // candidate.
  auto run_job = [&](const Json& job_spec) -> Result<Json> {
    int stalled = 0;
    while (true) {
      const size_t before = DecisionLines(decisions);
      Result<JobOutcome> job = RunHarnessJob(env, "synth", job_spec, jobs_dir, 0, &box);
      if (!job.ok()) return job.status();
      if (job->Ok()) return job->result;
      if (job->has_result) {
        Status failed(
            job->ErrorKind() == "task" ? StatusCode::kInvalidArgument : StatusCode::kInternal,
            "the synth job failed: " + job->Reason());
        return failed;
      }
      // The process died on a candidate; the next run records it as dropped ("crash") and goes on.
      stalled = DecisionLines(decisions) > before + 1 ? 0 : stalled + 1;
      if (stalled > kMaxRestartsWithoutProgress) {
        return Internal("the synth job keeps dying without progress: " + job->StderrTail(10));
      }
    }
  };
  Result<Json> summary =
      llm ? RunLlmComposer(opt, out, spec, mix, spec["max_candidates"].get<int>(), run_job)
          : [&]() -> Result<Json> {
    Result<Json> r = run_job(spec);
    if (!r.ok()) return r.status();
    return r->value("summary", Json::object());
  }();
  if (summary.ok()) fs::remove_all(out / "work" / "suite", ec);
  return summary;
}

}  // namespace cuda_agent
