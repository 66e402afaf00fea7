// sandbox.cc — the bubblewrap backend and the unisolated fallback.
#include "sandbox/sandbox.h"

#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/hash.h"
#include "common/host_environment.h"
#include "common/log.h"
#include "sandbox/cgroup.h"

namespace cuda_agent {
namespace {

constexpr int kNobody = 65534;

// Probe runs `bwrap ... true` once, so a bwrap that cannot create namespaces here is not trusted.
bool BubblewrapWorks(const Sandbox& sandbox, std::string* why) {  // (or the jail)
  RunOptions probe;
  probe.argv = {"/bin/true"};
  probe.timeout_seconds = 20;
  Result<SandboxRun> r = sandbox.Run(SandboxPolicy{}, probe);
  if (r.ok() && r->process.Succeeded()) return true;
  *why = r.ok() ? "bubblewrap cannot create namespaces here (" + r->process.Describe() + ": " +
                      r->process.err.substr(0, 200) + ")"
                : r.status().message();
  return false;
}

// ReachableByNobody checks, in a forked child that became uid 65534, that every path can be
// reached (and read) — the condition for dropping the host uid before bubblewrap binds them.
bool ReachableByNobody(const std::vector<fs::path>& paths) {
  std::vector<std::string> names;
  for (const auto& p : paths) names.push_back(p.string());
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    for (const auto& n : names) {
      if (access(n.c_str(), R_OK) != 0) _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// GiveTo makes the writable folders (and what is in them) belong to `uid`: 65534 for a job that
// drops the host uid (everything, as the judge may have written files there since), root for one
// that keeps it, which could not write a folder an earlier job was given (whether a job drops the
// uid depends on the paths its command names). A folder root already owns is left as it is: a job
// as 65534 cannot have written in it. lchown, and no symbolic link is followed.
void GiveTo(const std::vector<fs::path>& dirs, uid_t uid) {
  std::error_code ec;
  for (const auto& dir : dirs) {
    struct stat st {};
    if (uid == 0 && (lstat(dir.c_str(), &st) != 0 || st.st_uid == 0)) continue;
    if (lchown(dir.c_str(), uid, uid) != 0) continue;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      (void)!lchown(it->path().c_str(), uid, uid);
    }
  }
}

// HiddenFolders: the home folders and the policy's hidden folders.
std::vector<fs::path> HiddenFolders(const SandboxPolicy& policy) {
  std::vector<fs::path> hidden = {"/root", "/home"};
  if (const std::string& home = HostValue(HostVar::kHome); !home.empty() && fs::path(home) != "/")
    hidden.emplace_back(home);
  hidden.insert(hidden.end(), policy.hidden.begin(), policy.hidden.end());
  return hidden;
}

std::string FindBubblewrap() {
  if (const std::string& bwrap = HostValue(HostVar::kBubblewrap); !bwrap.empty()) return bwrap;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate : {exe.parent_path() / "bwrap",
                                      exe.parent_path().parent_path() / "dist" / "bin" / "bwrap"}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  Result<std::string> on_path = FindExecutable("bwrap");
  return on_path.ok() ? on_path.value() : "";
}

}  // namespace

const char* IsolationName(Isolation level) {
  switch (level) {
    case Isolation::kFull:
      return "full";
    case Isolation::kDegraded:
      return "degraded";
    case Isolation::kNone:
      return "none";
  }
  return "none";
}

Sandbox Sandbox::WithBubblewrap(std::string bwrap_path) {
  Sandbox s;
  s.bwrap_ = std::move(bwrap_path);
  return s;
}

Sandbox Sandbox::WithJail(std::string self_path) {
  Sandbox s;
  s.jail_ = std::move(self_path);
  return s;
}

Sandbox Sandbox::Unisolated(std::string why) {
  Sandbox s;
  s.why_ = std::move(why);
  return s;
}

const Sandbox& Sandbox::Default() {
  static const Sandbox sandbox = [] {
    const std::string& mode = HostValue(HostVar::kSandbox);
    if (mode == "none") {
      Sandbox off = Unisolated("sandbox disabled by CUDA_AGENT_SANDBOX=none");
      off.jail_allowed_ = false;
      return off;
    }
    std::string why;
    if (mode != "jail") {
      std::string bwrap = FindBubblewrap();
      if (bwrap.empty()) {
        why = "bubblewrap not found (install it, or set CUDA_AGENT_BWRAP)";
      } else {
        Sandbox s = WithBubblewrap(bwrap);
        if (BubblewrapWorks(s, &why)) return s;
      }
      if (mode == "bwrap") return Unisolated(why);
    }
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    Sandbox jail = WithJail(self.string());
    std::string jail_why;
    if (!ec && BubblewrapWorks(jail, &jail_why)) return jail;
    return Unisolated((why.empty() ? "" : why + "; ") +
                      "the jail does not work here either: " + jail_why);
  }();
  static std::atomic<bool> warned{false};
  if (sandbox.Level() != Isolation::kFull && !warned.exchange(true)) {
    LogWarn("UNSANDBOXED: candidate code runs without isolation: " + sandbox.Describe());
  }
  return sandbox;
}

Isolation Sandbox::Level() const {
  if (bwrap_.empty() && jail_.empty()) return Isolation::kNone;
  return Cgroups::Detect().Available() ? Isolation::kFull : Isolation::kDegraded;
}

std::string Sandbox::Describe() const {
  if (bwrap_.empty() && jail_.empty()) {
    return std::string("none: ") + why_ + "; only rlimits and the watchdog apply";
  }
  std::string backend = bwrap_.empty() ? "jail (cuda-agent's own namespaces, " + jail_ + " __jail)"
                                       : "bubblewrap " + bwrap_;
  std::string text =
      std::string(IsolationName(Level())) + ": " + backend + "; " + Cgroups::Detect().Why();
  if (geteuid() == 0) {
    text +=
        "; uid 65534 in its namespace, and on the host too when the job's paths are reachable by "
        "it";
  }
  return text;
}

std::vector<std::string> Sandbox::BubblewrapArgs(const SandboxPolicy& policy,
                                                 const RunOptions& inner) const {
  // A private /tmp and /dev/shm, bounded (the cgroup memory limit bounds them too).
  std::string tmp_size = std::to_string(policy.tmp_bytes ? policy.tmp_bytes : (1ull << 30));
  std::vector<std::string> a = {bwrap_,   "--ro-bind", "/",       "/",       "--dev",   "/dev",
                                "--proc", "/proc",     "--size",  tmp_size,  "--tmpfs", "/tmp",
                                "--size", tmp_size,    "--tmpfs", "/dev/shm"};
  // Home folders and caches disappear; what the job needs is bound back below.
  std::vector<fs::path> hidden = HiddenFolders(policy);
  std::error_code ec;
  std::vector<fs::path> hidden_here = {"/tmp", "/dev/shm"};
  for (const auto& h : hidden) {
    if (!fs::is_directory(h, ec)) continue;
    a.insert(a.end(), {"--tmpfs", h.string()});
    hidden_here.push_back(h);
  }
  // Writable first, read-only after: a protected file inside a writable folder stays read-only.
  // A read-only path outside every hidden folder is already visible through the read-only root.
  auto under_hidden = [&](const fs::path& p) {
    for (const auto& h : hidden_here) {
      auto rel = p.lexically_relative(h);
      if (!rel.empty() && *rel.begin() != "..") return true;
    }
    return false;
  };
  for (const auto& p : policy.writable) {
    if (fs::exists(p, ec)) a.insert(a.end(), {"--bind", p.string(), p.string()});
  }
  for (const auto& p : policy.read_only) {
    if (fs::exists(p, ec) && under_hidden(p))
      a.insert(a.end(), {"--ro-bind", p.string(), p.string()});
  }
  if (policy.gpu) {
    for (const auto& entry : fs::directory_iterator("/dev", ec)) {
      std::string name = entry.path().filename().string();
      if (name.rfind("nvidia", 0) == 0)
        a.insert(a.end(), {"--dev-bind", entry.path().string(), entry.path().string()});
    }
  }
  a.insert(a.end(), {"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                     "--unshare-cgroup-try", "--uid", std::to_string(kNobody), "--gid",
                     std::to_string(kNobody), "--hostname", "sandbox", "--die-with-parent",
                     "--new-session", "--cap-drop", "ALL"});
  if (!policy.network) a.push_back("--unshare-net");
  if (!inner.cwd.empty()) a.insert(a.end(), {"--chdir", inner.cwd});
  a.push_back("--");
  a.insert(a.end(), inner.argv.begin(), inner.argv.end());
  return a;
}

Result<JobContainment> Sandbox::PrepareJail(const SandboxPolicy& policy,
                                            const std::vector<fs::path>& needed,
                                            const std::string& cwd) const {
  // A writable folder that does not exist would be silently missing inside, and writes to it would
  // land in the sandbox's tmpfs and vanish: refuse instead.
  for (const auto& dir : policy.writable) {
    std::error_code ec;
    if (!fs::exists(dir, ec))
      return Internal("sandbox: writable folder does not exist: " + dir.string());
  }
  JobContainment c;
  c.isolation = Cgroups::Detect().Available() ? Isolation::kFull : Isolation::kDegraded;
  for (const auto& file : policy.protected_files) {
    Result<std::string> digest = Sha256File(file);
    c.fingerprints.emplace_back(file, digest.ok() ? digest.value() : "missing");
  }
  // As root, drop the host uid too when everything the job needs is reachable by 65534; else the
  // job is uid 65534 only inside its user namespace (no capabilities; homes and caches hidden).
  std::vector<fs::path> reach = needed;
  reach.insert(reach.end(), policy.read_only.begin(), policy.read_only.end());
  reach.insert(reach.end(), policy.writable.begin(), policy.writable.end());
  if (geteuid() == 0 && !policy.keep_host_uid && ReachableByNobody(reach)) {
    GiveTo(policy.writable, kNobody);
    c.host_uid_dropped = true;
  } else if (geteuid() == 0) {
    GiveTo(policy.writable, 0);
  }
  const Cgroups& cgroups = Cgroups::Detect();
  if (cgroups.Available() && (policy.memory_bytes || policy.max_pids)) {
    static std::atomic<int> counter{0};
    std::string name = "cuda-agent-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    Result<std::unique_ptr<CgroupJob>> job =
        cgroups.Create(name, policy.memory_bytes, policy.max_pids);
    if (job.ok()) {
      c.cgroup = std::move(job).value();
    } else {
      LogWarn("cgroup limits not applied: " + job.status().message());
      c.isolation = Isolation::kDegraded;
    }
  }
  JailSpec& j = c.jail;
  auto strings = [](const std::vector<fs::path>& paths) {
    std::vector<std::string> out;
    for (const auto& p : paths) out.push_back(p.string());
    return out;
  };
  j.writable = strings(policy.writable);
  j.read_only = strings(policy.read_only);
  j.hidden = strings(HiddenFolders(policy));
  j.protected_files = strings(policy.protected_files);
  j.gpu = policy.gpu;
  j.network = policy.network;
  j.tmp_bytes = policy.tmp_bytes;
  j.limits = policy.limits;
  if (!cgroups.Available() && policy.memory_bytes && !policy.gpu) {
    // No cgroup: cap the address space instead (not for GPU jobs: CUDA reserves huge ranges).
    j.limits.address_space_bytes = policy.memory_bytes;
  }
  if (c.cgroup) j.cgroup_procs = c.cgroup->ProcsFiles();
  j.drop_host_uid = c.host_uid_dropped;
  j.cwd = cwd;
  return c;
}

void Sandbox::Settle(const JobContainment& c, SandboxRun* run) {
  if (c.cgroup) run->oom_killed = c.cgroup->OomKilled();
  for (const auto& [file, before] : c.fingerprints) {
    Result<std::string> after = Sha256File(file);
    if ((after.ok() ? after.value() : "missing") != before) run->tampered.push_back(file.string());
  }
}

Result<SandboxRun> Sandbox::Run(const SandboxPolicy& policy, const RunOptions& inner) const {
  SandboxRun out;
  RunOptions run = inner;
  run.limits = policy.limits;
  JobContainment c;
  if (!jail_.empty()) {
    std::vector<fs::path> needed;
    for (const auto& a : inner.argv) {
      if (!a.empty() && a[0] == '/') needed.push_back(a);
    }
    Result<JobContainment> prepared = PrepareJail(policy, needed, inner.cwd);
    if (!prepared.ok()) return prepared.status();
    c = std::move(prepared).value();
    run.argv = {jail_, "__jail", JailSpecToJson(c.jail).dump(), "--"};
    run.argv.insert(run.argv.end(), inner.argv.begin(), inner.argv.end());
    run.cwd.clear();  // the jail changes into it inside
  } else if (!bwrap_.empty()) {
    SandboxPolicy effective = policy;
    effective.read_only.insert(effective.read_only.end(), policy.protected_files.begin(),
                               policy.protected_files.end());
    std::vector<fs::path> needed = {bwrap_};
    for (const auto& a : inner.argv) {
      if (!a.empty() && a[0] == '/') needed.push_back(a);
    }
    Result<JobContainment> prepared = PrepareJail(policy, needed, inner.cwd);
    if (!prepared.ok()) return prepared.status();
    c = std::move(prepared).value();
    run.argv = BubblewrapArgs(effective, inner);
    run.cwd.clear();  // bwrap --chdir sets it inside
    if (c.host_uid_dropped) {
      run.run_as_uid = kNobody;
      run.run_as_gid = kNobody;
    }
    run.limits.address_space_bytes = c.jail.limits.address_space_bytes;
    run.join_cgroup_files = c.jail.cgroup_procs;
  } else {
    for (const auto& dir : policy.writable) {
      std::error_code ec;
      if (!fs::exists(dir, ec))
        return Internal("sandbox: writable folder does not exist: " + dir.string());
    }
  }
  out.isolation = bwrap_.empty() && jail_.empty() ? Isolation::kNone : c.isolation;
  out.host_uid_dropped = c.host_uid_dropped;
  std::string line;
  for (const auto& a : run.argv) line += a + " ";
  LogDebug("sandbox: " + line);
  Result<RunResult> r = RunProcess(run);
  if (!r.ok()) return r.status();
  out.process = std::move(r).value();
  // bubblewrap reports a child killed by signal N as exit status 128 + N.
  RunResult& p = out.process;
  if (!bwrap_.empty() && !p.timed_out && p.term_signal == 0 && p.exit_code > 128 &&
      p.exit_code <= 128 + 64) {
    p.term_signal = p.exit_code - 128;
    p.exit_code = -1;
  }
  Settle(c, &out);
  return out;
}

int RunJailed(const std::vector<std::string>& args) {
  auto fail = [](const std::string& why) {
    std::string line = "cuda-agent jail: " + why + "\n";
    (void)!write(STDERR_FILENO, line.data(), line.size());
    return kJailSetupExit;
  };
  if (args.size() < 3 || args[1] != "--")
    return fail("usage: cuda-agent __jail SPEC_JSON -- COMMAND...");
  Result<Json> parsed = ParseJson(args[0], "jail spec");
  if (!parsed.ok()) return fail(parsed.status().message());
  Result<JailSpec> spec = JailSpecFromJson(parsed.value());
  if (!spec.ok()) return fail(spec.status().message());
  if (Status s = EnterJail(spec.value(), -1); !s.ok()) return fail(s.message());
  std::vector<char*> argv;
  for (size_t i = 2; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  signal(SIGPIPE, SIG_DFL);
  execvp(argv[0], argv.data());
  std::string line =
      std::string("cuda-agent jail: cannot run ") + argv[0] + ": " + std::strerror(errno) + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
  _exit(127);
}

}  // namespace cuda_agent
