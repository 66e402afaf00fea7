// judgement.cc — the work folder, the environment, the job runner and the leases one judgement's
// stages share.
#include "judge/stages/judgement.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>

#include "common/log.h"
#include "common/subprocess.h"
#include "harness/job_policy.h"

namespace cuda_agent {

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<int64_t> SecretSeeds(int n) {
  std::random_device rd;
  std::vector<int64_t> seeds;
  for (int i = 0; i < n; ++i) {
    seeds.push_back(((static_cast<int64_t>(rd()) << 31) ^ rd()) & 0x7fffffffffffLL);
  }
  return seeds;
}

WorkDirs::WorkDirs(const fs::path& r)
    : root(r),
      jobs(r / "jobs"),
      shared(r / "shared"),
      expected_dir(r / "private"),
      outputs(r / "outputs"),
      src(r / "src"),
      build(r / "build"),
      task_file(r / "task.py"),
      spot_candidate(r / "spot_candidate"),
      signals(r / "signals"),
      served(r / "served"),
      answers(r / "answers") {
  for (const auto& d : {jobs, shared, expected_dir, outputs, src, build, spot_candidate, signals,
                        served, answers}) {
    fs::create_directories(d);
  }
}

bool JudgementFacts::Fp32Task() const {
  return !float_dtypes.empty() &&
         std::all_of(float_dtypes.begin(), float_dtypes.end(),
                     [](const std::string& d) { return d == "float32" || d == "complex64"; });
}

Judgement::WorkFolderGuard::~WorkFolderGuard() {
  std::error_code ec;
  if (!keep) fs::remove_all(dir, ec);
}

Judgement::Judgement(const HarnessEnv& env, const JudgeOptions& options, JudgeResult& result)
    : env_(env),
      options_(options),
      result_(result),
      start_(Clock::now()),
      sandbox_(options.sandbox ? *options.sandbox : Sandbox::Default()) {
  // The wall clock at start_ (the sandbox's set-up above may have taken a while).
  result_.started_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      Elapsed();
  result_.device = DeviceName(options.device);
  result_.reward_schedule = options.reward_schedule;
  result_.policy = options.policy.ToJson();
  result_.env = {{"sandbox", IsolationName(sandbox_.Level())},
                 {"sandbox_detail", sandbox_.Describe()}};
}

// The jobs go first: ending them waits for them, and they record themselves in the result.
Judgement::~Judgement() {
  early_.reset();
  served_reference_.reset();
  kept_reference_.reset();
}

Next Judgement::Internal(const std::string& why) {
  result_.outcome = Outcome::kInternalError;
  result_.reward.reset();
  result_.error_kind = "internal";
  result_.reason = "internal error: " + why;
  return Next::kStop;
}

Next Judgement::TaskError(const std::string& why) {
  result_.outcome = Outcome::kTaskError;
  result_.stage = Stage::kTask;
  result_.reward.reset();
  result_.error_kind = "task";
  result_.reason = "task error: " + why;
  return Next::kStop;
}

Next Judgement::Fail(Stage at, const std::string& kind, const std::string& why) {
  result_.Fail(at, kind, why);
  return Next::kStop;
}

void Judgement::Finish() {
  // By now every request was answered, or the judgement stopped before asking: the job goes.
  if (served_reference_) {
    Result<JobOutcome> end = served_reference_->End(/*now=*/true);
    if (end.ok()) Track(end.value());
    if (kept_reference_) {
      const bool kept = kept_reference_->Finish(end);
      std::lock_guard<std::mutex> lock(jobs_mu_);
      result_.env["reference_kept"] = kept;
    }
  }
  std::lock_guard<std::mutex> lock(jobs_mu_);
  if (!result_.leases.empty()) result_.stage_seconds["lease_wait"] = lease_wait_;
  result_.stage_seconds["total"] = SecondsSince(start_);
}

double Judgement::EarlyWaitSeconds() const {
  return 2 * options_.build_timeout_s + 2 * options_.trusted_timeout_s +
         6 * options_.candidate_timeout_s;
}

ServedJob& Judgement::ServeKeptReference(std::unique_ptr<KeptJob> kept,
                                         std::vector<std::string> requests) {
  served_reference_ =
      std::make_unique<ServedJob>(kept->Answers(), kept->Signals(), std::move(requests));
  served_reference_->Attach(kept->Process(), kept->RoundEnd());
  kept_reference_ = std::move(kept);
  return *served_reference_;
}

ServedJob& Judgement::ServeReference(std::vector<std::string> requests) {
  served_reference_ =
      std::make_unique<ServedJob>(dirs_->answers, dirs_->served, std::move(requests));
  return *served_reference_;
}

Next Judgement::PrepareWork() {
  cache_dir_ = options_.cache_dir.empty() ? DefaultCacheDir() : options_.cache_dir;
  Result<fs::path> work = MakeTempDir(cache_dir_ / "work", "judge");
  if (!work.ok()) return Internal(work.status().message());
  // Traversable, so that a sandbox may run as uid 65534 on the host; what is inside is bound
  // into a sandbox only folder by folder (private/ never into one that runs candidate code).
  fs::permissions(work.value(),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  guard_ = std::make_unique<WorkFolderGuard>(WorkFolderGuard{work.value(), options_.keep_work});
  dirs_ = std::make_unique<WorkDirs>(work.value());
  if (options_.keep_work) result_.env["work_dir"] = work.value().string();
  early_ = std::make_unique<EarlyJobs>(
      dirs_->signals, EarlyWaitSeconds(),
      [this](const std::string& name, const std::string& job, const Json& spec, double timeout_s,
             const JobSandbox* box,
             std::atomic<pid_t>* pid) { return RunJob(name, job, spec, timeout_s, box, pid); });
  return Next::kContinue;
}

Next Judgement::DiscoverEnvironment() {
  auto t = Clock::now();
  Result<Toolchain> tc = DiscoverToolchain(env_, options_.device, cache_dir_, dirs_->jobs);
  if (!tc.ok()) return Internal(tc.status().message());
  toolchain_ = std::move(tc).value();
  result_.env["python_version"] = toolchain_.python_version;
  result_.env["torch_version"] = toolchain_.torch_version;
  result_.env["torch_cuda_version"] =
      toolchain_.torch_cuda_version.empty() ? Json() : Json(toolchain_.torch_cuda_version);
  result_.env["gpu"] = toolchain_.gpu ? Json{{"name", toolchain_.gpu->name},
                                             {"arch", toolchain_.gpu->arch},
                                             {"capability", toolchain_.gpu->capability}}
                                      : Json();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  result_.env["host"] = host;
  result_.stage_seconds["toolchain"] = SecondsSince(t);
  // What every contained job may read (interpreter, torch, CUDA) and its limits.
  python_inside_ = PythonInside(toolchain_);
  base_policy_ = BaseJobPolicy(
      toolchain_, {options_.device, cache_dir_, options_.job_memory_bytes, options_.job_max_pids,
                   std::max(options_.trusted_timeout_s, options_.build_timeout_s)});
  return Next::kContinue;
}

JobSandbox Judgement::Contain(const std::vector<fs::path>& read_only,
                              const std::vector<fs::path>& writable) const {
  JobSandbox js{&sandbox_, base_policy_, python_inside_, {}, {}};
  js.policy.read_only.insert(js.policy.read_only.end(), read_only.begin(), read_only.end());
  js.policy.writable.insert(js.policy.writable.end(), writable.begin(), writable.end());
  return js;
}

JobSandbox Judgement::ContainWithQueues(const std::vector<fs::path>& read_only,
                                        const std::vector<fs::path>& writable, int queues) const {
  JobSandbox js = Contain(read_only, writable);
  if (options_.device == Device::kCuda && queues > 0)
    js.env_set.push_back("CUDA_DEVICE_MAX_CONNECTIONS=" + std::to_string(queues));
  return js;
}

// The untimed jobs' contexts get one hardware queue: about three times cheaper to create and tear
// down, which the driver does one at a time per host (docs/decisions/host-scaling.md).
JobSandbox Judgement::ContainUntimed(const std::vector<fs::path>& read_only,
                                     const std::vector<fs::path>& writable) const {
  return ContainWithQueues(read_only, writable, 1);
}

JobSandbox Judgement::ContainTimed(const std::vector<fs::path>& read_only,
                                   const std::vector<fs::path>& writable) const {
  return ContainWithQueues(read_only, writable, options_.timed_queues);
}

void Judgement::Track(const JobOutcome& job) {
  if (static_cast<int>(job.isolation) > static_cast<int>(weakest_)) weakest_ = job.isolation;
  result_.env["sandbox"] = IsolationName(weakest_);
}

Result<JobOutcome> Judgement::RunJob(const std::string& name, const std::string& job,
                                     const Json& spec, double timeout_s, const JobSandbox* box,
                                     std::atomic<pid_t>* pid) {
  double started = SecondsSince(start_);
  Result<JobOutcome> out = RunHarnessJob(env_, job, spec, dirs_->jobs, timeout_s, box, pid);
  RecordJob(name, job, started, out);
  return out;
}

double Judgement::Elapsed() const { return SecondsSince(start_); }

void Judgement::RecordJob(const std::string& name, const std::string& job, double started_s,
                          const Result<JobOutcome>& out, const Json& extra) {
  Json entry = {
      {"name", name}, {"job", job}, {"start_s", started_s}, {"end_s", SecondsSince(start_)}};
  if (out.ok() && out->has_result) {
    for (const char* key :
         {"go_wait_seconds", "phase_seconds", "phase_cpu_seconds", "error_kind"}) {
      if (out->result.contains(key) && !out->result[key].is_null()) entry[key] = out->result[key];
    }
  }
  entry.update(extra);
  std::lock_guard<std::mutex> lock(jobs_mu_);
  result_.jobs.push_back(std::move(entry));
}

Result<DeviceLease> Judgement::Lease(LeaseMode mode, const std::string& purpose) {
  const double asked = Elapsed();
  Result<DeviceLease> lease =
      DeviceLease::Acquire(LeaseKey(options_.device), mode, {}, &options_.lease_gather);
  if (!lease.ok()) return lease;
  const double granted = Elapsed();
  std::lock_guard<std::mutex> lock(jobs_mu_);
  lease_wait_ += lease->waited_seconds();
  const size_t index = result_.leases.size();
  result_.leases.push_back({{"for", purpose},
                            {"mode", LeaseModeName(mode)},
                            {"asked_s", asked},
                            {"granted_s", granted},
                            {"released_s", nullptr}});
  lease->OnRelease([this, index]() {
    const double released = Elapsed();
    std::lock_guard<std::mutex> l(jobs_mu_);
    result_.leases[index]["released_s"] = released;
  });
  return lease;
}

const TimingSecrets& Judgement::Secrets() {
  if (secrets_.seed != 0) return secrets_;
  std::vector<int64_t> secret = SecretSeeds(3);
  const int iters = options_.iters;
  secrets_.seed = secret[0] | 1;
  int a = static_cast<int>(secret[1] % iters);
  int b = iters > 1 ? static_cast<int>((a + 1 + secret[2] % (iters - 1)) % iters) : a;
  secrets_.spot_calls = a == b ? Json::array({a}) : Json::array({std::min(a, b), std::max(a, b)});
  return secrets_;
}

}  // namespace cuda_agent
