// kept_jobs.cc — offering, claiming and handing back kept jobs (fork server standbys that serve
// one round per claim).
#include "harness/kept_jobs.h"

#include <signal.h>

#include "common/hash.h"

namespace cuda_agent {
namespace {

// The kept job's folders (see the header).
struct KeptDirs {
  fs::path root, in, rounds, signals, job;
  explicit KeptDirs(const fs::path& r)
      : root(r), in(r / "in"), rounds(r / "rounds"), signals(r / "signals"), job(r / "job") {}
  fs::path Round(int r) const { return rounds / std::to_string(r); }
  fs::path Signals(int r) const { return signals / std::to_string(r); }
  fs::path Stop() const { return signals / "stop"; }
  fs::path NextRound() const { return signals / "next_round"; }
  fs::path Spec() const { return job / "spec.json"; }
  fs::path Result() const { return job / "result.json"; }
};

ForkServerJob JobFiles(const KeptDirs& d) {
  ForkServerJob files;
  files.stdout_path = (d.job / "stdout.txt").string();
  files.stderr_path = (d.job / "stderr.txt").string();
  return files;
}

// NextRound: the round a claimer of the kept job in `dir` serves (0 for a job nobody handed back).
int NextRound(const KeptDirs& d) {
  Result<std::string> text = ReadFile(d.NextRound());
  if (!text.ok()) return 0;
  try {
    return std::stoi(text.value());
  } catch (...) {
    return -1;
  }
}

// Offer starts a kept job in a new folder under `root`; false when the server declined.
Result<bool> Offer(const HarnessEnv& env, const StandbyJob& job, const std::string& key,
                   const fs::path& root, const KeptJobOptions& o) {
  std::error_code ec;
  fs::create_directories(root, ec);
  Result<fs::path> made = MakeTempDir(root, "kept");
  if (!made.ok()) return made.status();
  KeptDirs d(made.value());
  // Traversable, so that a job that runs as uid 65534 on the host reaches its folders.
  fs::permissions(d.root, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  for (const auto& dir : {d.in, d.Round(0) / "answers", d.Signals(0), d.job})
    fs::create_directories(dir, ec);
  auto discard = [&](Status why) {
    fs::remove_all(d.root, ec);
    return why;
  };
  if (ec) return discard(Internal("cannot make the kept job's folders under " + d.root.string()));
  Json spec = job.spec;
  for (const auto& [field, file] : o.in_files) {
    const fs::path to = d.in / file.filename();
    fs::copy_file(file, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return discard(Internal("cannot copy " + file.string() + ": " + ec.message()));
    spec[field] = to.string();
  }
  spec["kept"] = {{"rounds_dir", d.rounds.string()}, {"signals_dir", d.signals.string()},
                  {"stop", d.Stop().string()},       {"go", "go_" + o.first_request},
                  {"max_rounds", o.max_rounds},      {"idle_s", o.idle_s + 60}};
  // Round 0's go, as every later round's (the job waits for those itself).
  spec["wait_for"] = {{"go", (d.Signals(0) / ("go_" + o.first_request)).string()},
                      {"stop", d.Stop().string()},
                      {"timeout_s", o.idle_s + 60},
                      {"ready", (d.Round(0) / "answers" / "ready").string()}};
  spec["result_path"] = d.Result().string();
  if (Status s = WriteJsonFile(d.Spec(), spec); !s.ok()) return discard(s);
  SandboxPolicy policy = job.box.policy;
  policy.writable.insert(policy.writable.end(), {d.job, d.rounds});
  policy.read_only.insert(policy.read_only.end(), {d.in, d.signals, env.home / "python"});
  StandbyOffer offer{key,      o.max_waiting, {d.root.string()}, {{"dir", d.root.string()}},
                     o.idle_s, o.group,       o.group_max};
  Result<bool> offered =
      OfferContained(env, job, policy, d.Spec(), d.job, JobFiles(d), std::move(offer));
  if (!offered.ok()) return discard(offered.status());
  if (!offered.value()) (void)discard(OkStatus());
  return offered;
}

}  // namespace

std::string KeptJobKey(const HarnessEnv& env, const StandbyJob& job, const std::string& identity) {
  return Sha256Hex("kept|" + StandbyKey(env, job) + "|" + identity).substr(0, 24);
}

Result<std::unique_ptr<KeptJob>> KeptJob::Take(const HarnessEnv& env, const StandbyJob& job,
                                               const fs::path& root,
                                               const KeptJobOptions& options) {
  const ForkServer* server = HarnessForkServer(env);
  if (!server) return std::unique_ptr<KeptJob>();
  const std::string key = KeptJobKey(env, job, options.identity);
  auto claim = [&]() -> Result<std::unique_ptr<KeptJob>> {
    Result<std::optional<ClaimedJob>> claimed = server->Claim(key);
    if (!claimed.ok()) return claimed.status();
    if (!claimed->has_value()) return std::unique_ptr<KeptJob>();
    fs::path dir = claimed->value().Record().value("dir", std::string());
    std::unique_ptr<KeptJob> kept(
        new KeptJob(std::move(claimed->value()), dir, options.round_timeout_s));
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec) || kept->round_ < 0)
      return Internal("a claimed kept job has no folder or round: " + dir.string());
    fs::create_directories(kept->Signals(), ec);
    if (ec) return Internal("cannot make " + kept->Signals().string() + ": " + ec.message());
    return kept;
  };
  Result<std::unique_ptr<KeptJob>> kept = claim();
  if (!kept.ok() || kept.value()) return kept;
  Result<bool> offered = Offer(env, job, key, root, options);
  if (!offered.ok()) return offered.status();
  if (!offered.value()) return std::unique_ptr<KeptJob>();
  return claim();  // null when another client claimed it first
}

KeptJob::KeptJob(ClaimedJob claimed, fs::path dir, double round_timeout_s)
    : claimed_(std::move(claimed)),
      dir_(std::move(dir)),
      round_(dir_.empty() ? -1 : NextRound(KeptDirs(dir_))),
      containment_(ContainmentFromRecord(claimed_.Record())) {
  process_.pid->store(claimed_.pid());
  process_.isolation = containment_.isolation;
  const Isolation isolation = containment_.isolation;
  std::packaged_task<Result<JobOutcome>()> wait(
      [this, round_timeout_s, isolation]() -> Result<JobOutcome> {
        ForkServerJob files = JobFiles(KeptDirs(dir_));
        if (claimed_.Record().value("jailed", false)) files.jail = JailSpec{};
        bool released = false;
        Result<RunResult> run = claimed_.WaitOrReleased(files, round_timeout_s, &released);
        released_->store(released);
        if (!run.ok()) return run.status();
        JobOutcome outcome;
        outcome.isolation = isolation;
        outcome.process = std::move(run).value();
        outcome.ReadResult(KeptDirs(dir_).Result());
        return outcome;
      });
  process_.outcome = wait.get_future().share();
  waiter_ = std::thread(std::move(wait));
}

KeptJob::~KeptJob() {
  if (waiter_.joinable()) {
    if (!handed_back_ &&
        process_.outcome.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      kill(claimed_.pid(), SIGKILL);  // its init dies with it, and the job's whole namespace
    }
    waiter_.join();
  }
  if (handed_back_) {
    // The fork server's again, and so are its folders and its cgroup (which its process is still
    // in: removing it here would retry for a second and fail).
    if (containment_.cgroup) containment_.cgroup->Release();
    return;
  }
  containment_.cgroup.reset();  // removed once its processes are gone
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

void KeptJob::RemoveRound() const {
  std::error_code ec;
  fs::remove_all(RoundDir(), ec);
  fs::remove_all(Signals(), ec);
}

bool KeptJob::Finish(const Result<JobOutcome>& end) {
  const bool reusable = end.ok() && end->has_result && end->result.value("reusable", false) &&
                        end->result.value("round", -1) == round_;
  if (!reusable ||
      process_.outcome.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    return false;  // the destructor ends it
  }
  RemoveRound();
  if (!WriteFileAtomic(KeptDirs(dir_).NextRound(), std::to_string(round_ + 1) + "\n").ok() ||
      !claimed_.SendRelease().ok()) {
    return false;
  }
  process_.outcome.wait();
  handed_back_ = released_->load();
  return handed_back_;
}

}  // namespace cuda_agent
