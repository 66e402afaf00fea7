// standby.cc — offering, claiming and running standby jobs (a fork server's children).
#include "harness/standby.h"

#include <algorithm>

#include "common/hash.h"
#include "sandbox/cgroup.h"

namespace cuda_agent {
namespace {

// The standby's go files and marks (its spec's wait_for): a standby offered by a binary with other
// ones is never claimed (2: the third go, "time").
constexpr int kStandbyProtocol = 2;

// The standby's folders (see the header).
struct StandbyDirs {
  fs::path root, job, in, out, signals;
  explicit StandbyDirs(const fs::path& r)
      : root(r), job(r / "job"), in(r / "in"), out(r / "out"), signals(r / "signals") {}
  fs::path Go() const { return job / "go"; }
  fs::path Then() const { return job / "then"; }
  // The third go is the judge's alone: candidate code has run by then, and job/ is writable.
  fs::path Time() const { return signals / "time"; }
  EarlyMarks Marks() const { return {job, /*prepares=*/true, /*checks=*/true, out}; }
  fs::path Spec() const { return job / "spec.json"; }
  fs::path Result() const { return job / "result.json"; }
  fs::path Stdout() const { return job / "stdout.txt"; }
  fs::path Stderr() const { return job / "stderr.txt"; }
};

// The policy the standby's jail gets: the job's, its own folders, the harness.
SandboxPolicy StandbyPolicy(const HarnessEnv& env, const StandbyJob& job, const StandbyDirs& d) {
  SandboxPolicy policy = job.box.policy;
  policy.writable.insert(policy.writable.end(), {d.job, d.out});
  policy.read_only.insert(policy.read_only.end(), {d.in, d.signals, env.home / "python"});
  return policy;
}

bool Contained(const StandbyJob& job) { return job.box.sandbox && job.box.sandbox->JailAllowed(); }

// ServerFor: the fork server that can run `job` as its child, or why none can.
Result<const ForkServer*> ServerFor(const HarnessEnv& env, const StandbyJob& job) {
  if (!job.box.wrapper.empty()) return FailedPrecondition("a wrapped job cannot stand by");
  const ForkServer* server = HarnessForkServer(env);
  if (!server) return FailedPrecondition("no fork server");
  if (Contained(job) && server->Jail() != "ok")
    return FailedPrecondition("the fork server has no working jail");
  if ((job.box.policy.gpu || job.spec.value("device", std::string()) == "cuda") &&
      !server->CudaUsable()) {
    return FailedPrecondition("the fork server's children cannot use CUDA");
  }
  return server;
}

void AddPaths(Sha256& h, const char* what, const std::vector<fs::path>& paths) {
  h.Update(std::string(what) + "=");
  for (const auto& p : paths) h.Update(p.string() + ";");
}

// Rebase rewrites every string of `value` that is `from` or lies under it to lie under `to`.
void Rebase(Json& value, const std::string& from, const std::string& to) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s == from ||
        (s.size() > from.size() && s.compare(0, from.size(), from) == 0 && s[from.size()] == '/')) {
      value = to + s.substr(from.size());
    }
  } else if (value.is_array() || value.is_object()) {
    for (auto& item : value) Rebase(item, from, to);
  }
}

ForkServerJob JobFiles(const StandbyDirs& d) {
  ForkServerJob files;
  files.stdout_path = d.Stdout().string();
  files.stderr_path = d.Stderr().string();
  return files;
}

}  // namespace

std::string StandbyKey(const HarnessEnv& env, const StandbyJob& job) {
  Sha256 h;
  h.Update(std::to_string(kStandbyProtocol) + "|" + job.job + "|" + job.spec.dump() + "|" +
           env.home.string() + "|" + env.python + "|" + job.box.python + "|" +
           (Contained(job) ? "jail" : "free") + "|");
  for (const auto& kv : BuildEnvironment(HarnessRunOptions(env, job.job, "", &job.box)))
    h.Update(kv + ";");
  const SandboxPolicy& p = job.box.policy;
  AddPaths(h, "rw", p.writable);
  AddPaths(h, "ro", p.read_only);
  AddPaths(h, "hidden", p.hidden);
  AddPaths(h, "protected", p.protected_files);
  const ResourceLimits& l = p.limits;
  for (uint64_t v : {uint64_t{p.network}, uint64_t{p.gpu}, p.memory_bytes, p.max_pids, p.tmp_bytes,
                     l.address_space_bytes, l.cpu_seconds, l.open_files, l.processes,
                     l.file_size_bytes, l.core_file_bytes}) {
    h.Update(std::to_string(v) + ",");
  }
  return h.HexDigest().substr(0, 24);
}

Result<bool> OfferStandby(const HarnessEnv& env, const StandbyJob& job, const fs::path& root,
                          double wait_s, int max_waiting) {
  Result<const ForkServer*> server = ServerFor(env, job);
  if (!server.ok()) return server.status();
  std::error_code ec;
  fs::create_directories(root, ec);
  Result<fs::path> made = MakeTempDir(root, "standby");
  if (!made.ok()) return made.status();
  StandbyDirs d(made.value());
  // Traversable, so that a job that runs as uid 65534 on the host reaches its folders.
  fs::permissions(d.root, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  for (const auto& dir : {d.job, d.in, d.out, d.signals}) fs::create_directories(dir, ec);
  if (ec) return Internal("cannot make the standby's folders under " + d.root.string());
  auto discard = [&](Status why) {
    fs::remove_all(d.root, ec);
    return why;
  };
  Json spec = job.spec;
  spec["wait_for"] = {{"go", d.Go().string()},
                      {"stop", (d.signals / "stop").string()},
                      {"timeout_s", wait_s},
                      {"consume", true},
                      {"ready", d.Marks().Ready().string()},
                      {"then", d.Then().string()},
                      {"prepared", d.Marks().Prepared().string()},
                      {"time", d.Time().string()},
                      {"checked", d.Marks().Checked().string()}};
  spec["result_path"] = d.Result().string();
  if (Status s = WriteJsonFile(d.Spec(), spec); !s.ok()) return discard(s);

  StandbyOffer offer;
  offer.key = StandbyKey(env, job);
  offer.max_waiting = max_waiting;
  offer.cleanup = {d.root.string()};
  offer.record = {{"dir", d.root.string()}};
  Result<bool> offered = OfferContained(env, job, StandbyPolicy(env, job, d), d.Spec(), d.job,
                                        JobFiles(d), std::move(offer));
  if (!offered.ok()) return discard(offered.status());
  if (!offered.value()) (void)discard(OkStatus());
  return offered;
}

Result<bool> OfferContained(const HarnessEnv& env, const StandbyJob& job,
                            const SandboxPolicy& policy, const fs::path& spec_path,
                            const fs::path& cwd, ForkServerJob request, StandbyOffer offer) {
  Result<const ForkServer*> server = ServerFor(env, job);
  if (!server.ok()) return server.status();
  RunOptions options = HarnessRunOptions(env, job.job, spec_path, &job.box);
  request.job = job.job;
  request.spec_path = spec_path.string();
  request.cwd = cwd.string();
  request.env = BuildEnvironment(options);
  offer.record["jailed"] = false;
  JobContainment containment;
  if (Contained(job)) {
    Result<JobContainment> prepared = job.box.sandbox->PrepareJail(policy, {}, cwd.string());
    if (!prepared.ok()) return prepared.status();
    containment = std::move(prepared).value();
    request.jail = containment.jail;
    Json cgroup = Json::array();
    if (containment.cgroup) {
      for (const auto& dir : containment.cgroup->Dirs()) {
        cgroup.push_back(dir.string());
        offer.cleanup.push_back(dir.string());
      }
    }
    offer.record.update({{"jailed", true},
                         {"isolation", static_cast<int>(containment.isolation)},
                         {"host_uid_dropped", containment.host_uid_dropped},
                         {"cgroup", cgroup},
                         {"cgroup_v2", containment.cgroup && containment.cgroup->V2()}});
  }
  Result<bool> offered = server.value()->Offer(request, offer);
  if (!offered.ok()) return offered.status();
  if (offered.value() && containment.cgroup) containment.cgroup->Release();  // the standby's now
  return offered;
}

Result<std::shared_ptr<Standby>> Standby::Claim(const HarnessEnv& env, const StandbyJob& job) {
  Result<const ForkServer*> server = ServerFor(env, job);
  if (!server.ok()) return std::shared_ptr<Standby>();
  Result<std::optional<ClaimedJob>> claimed = server.value()->Claim(StandbyKey(env, job));
  if (!claimed.ok()) return claimed.status();
  if (!claimed->has_value()) return std::shared_ptr<Standby>();
  std::shared_ptr<Standby> standby(new Standby(std::move(claimed.value().value()), job));
  if (standby->dir_.empty() || !fs::is_directory(standby->dir_))
    return Internal("a claimed standby has no folder: " + standby->claimed_.Record().dump());
  return standby;
}

JobContainment ContainmentFromRecord(const Json& record) {
  JobContainment containment;
  const bool jailed = record.value("jailed", false);
  containment.isolation = static_cast<Isolation>(record.value(
      "isolation", static_cast<int>(jailed ? Isolation::kDegraded : Isolation::kNone)));
  containment.host_uid_dropped = record.value("host_uid_dropped", false);
  std::vector<fs::path> cgroup;
  for (const auto& dir : record.value("cgroup", Json::array()))
    if (dir.is_string()) cgroup.emplace_back(dir.get<std::string>());
  if (!cgroup.empty())
    containment.cgroup = std::make_unique<CgroupJob>(cgroup, record.value("cgroup_v2", false));
  return containment;
}

Standby::Standby(ClaimedJob claimed, const StandbyJob& job)
    : claimed_(std::move(claimed)), containment_(ContainmentFromRecord(claimed_.Record())) {
  const Json& record = claimed_.Record();
  dir_ = record.value("dir", std::string());
  jailed_ = record.value("jailed", false);
  // Nothing but harness code has run in it yet: the protected files as they are now are "before".
  for (const auto& file : job.box.policy.protected_files) {
    Result<std::string> digest = Sha256File(file);
    containment_.fingerprints.emplace_back(file, digest.ok() ? digest.value() : "missing");
  }
}

Standby::~Standby() {
  claimed_.Abandon();           // a job still running is killed by the server
  containment_.cgroup.reset();  // removed once its processes are gone
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

EarlyMarks Standby::Marks() const { return StandbyDirs(dir_).Marks(); }

Status Standby::Then() {
  for (const auto& [from, to] : at_then_) {
    if (Status s = LinkOrCopy(from, to); !s.ok()) return s;
  }
  at_then_.clear();
  return WriteFileAtomic(StandbyDirs(dir_).Then(), "then\n");
}

Status Standby::Time() { return WriteFileAtomic(StandbyDirs(dir_).Time(), "time\n"); }

Status Standby::Go(const Json& spec, const std::vector<fs::path>& readable,
                   const fs::path& writable, const std::vector<fs::path>& at_then) {
  StandbyDirs d(dir_);
  Json go = spec;
  go.erase("wait_for");
  go.erase("result_path");
  int index = 0;
  for (const auto& from : readable) {
    fs::path to = d.in / (std::to_string(index++) + "_" + from.filename().string());
    if (std::find(at_then.begin(), at_then.end(), from) != at_then.end()) {
      at_then_.emplace_back(from, to);
    } else if (Status s = LinkOrCopy(from, to); !s.ok()) {
      return s;
    }
    Rebase(go, from.string(), to.string());
  }
  writable_ = writable;
  Rebase(go, writable.string(), d.out.string());
  return WriteFileAtomic(d.Go(), go.dump() + "\n");
}

Result<JobOutcome> Standby::Wait(double timeout_s) {
  StandbyDirs d(dir_);
  ForkServerJob files = JobFiles(d);
  if (jailed_) files.jail = JailSpec{};
  Result<RunResult> run = claimed_.Wait(files, timeout_s);
  if (!run.ok()) return run.status();
  JobOutcome outcome;
  outcome.process = std::move(run).value();
  outcome.isolation = containment_.isolation;
  SandboxRun settled;
  Sandbox::Settle(containment_, &settled);
  outcome.oom_killed = settled.oom_killed;
  containment_.cgroup.reset();  // removes the folders: the job is over
  std::error_code ec;
  if (fs::exists(d.Go(), ec)) {
    // It ended without reading its go (it failed while standing by): nothing of this judgement
    // ran in it; a fresh job takes its place (EarlyJobs reruns "not_started").
    outcome.has_result = true;
    outcome.result = {
        {"ok", false},
        {"error_kind", "not_started"},
        {"reason", "the standby job ended before its go: " + outcome.process.Describe()}};
    return outcome;
  }
  outcome.ReadResult(d.Result());
  if (!writable_.empty()) {
    for (const auto& entry : fs::directory_iterator(d.out, ec)) {
      fs::rename(entry.path(), writable_ / entry.path().filename(), ec);
      if (ec) return Internal("cannot move the standby's output " + entry.path().string());
    }
    Rebase(outcome.result, d.out.string(), writable_.string());
  }
  return outcome;
}

}  // namespace cuda_agent
