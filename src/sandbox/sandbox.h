// sandbox.h — runs an untrusted command contained: its own user/mount/pid/net/ipc/uts namespaces
// (bubblewrap, or our own jail: sandbox/jail.h, entered by re-executing this binary), the root
// filesystem read-only, home folders and the judge's cache hidden, a private
// /tmp, only the folders the job needs bound back (read-only, or writable for its outputs), no
// network, no capabilities, uid 65534 when the judge runs as root, rlimits, cgroup memory and pids
// limits where a hierarchy is writable, GPU device nodes only for jobs that hold the GPU, and the
// subprocess watchdog that kills the whole tree. Where bubblewrap cannot run, the command runs with
// rlimits and the watchdog only, and the isolation level says so ("degraded"/"none").
//
//   const Sandbox& sb = Sandbox::Default();
//   SandboxPolicy p; p.writable = {out_dir}; p.read_only = {src_dir}; p.gpu = true;
//   Result<SandboxRun> r = sb.Run(p, run_options);
#pragma once

#include <string>
#include <vector>

#include "common/fs.h"
#include "common/subprocess.h"
#include "sandbox/cgroup.h"
#include "sandbox/jail.h"

namespace cuda_agent {

enum class Isolation { kFull, kDegraded, kNone };
const char* IsolationName(Isolation level);

struct SandboxPolicy {
  std::vector<fs::path> writable;   // bound read-write (the job's own output folders)
  std::vector<fs::path> read_only;  // bound read-only after hiding (interpreter, harness, inputs)
  std::vector<fs::path> hidden;     // replaced by an empty tmpfs (caches, other work folders)
  std::vector<fs::path> protected_files;  // bound read-only, hashed before and checked after
  bool network = false;
  bool gpu = false;           // bind /dev/nvidia* (the job holds a GPU lease)
  uint64_t memory_bytes = 0;  // cgroup memory limit; 0: none
  uint64_t max_pids = 0;      // cgroup pids limit; 0: none
  uint64_t tmp_bytes = 0;     // size of the private /tmp and /dev/shm; 0: 1 GiB
  ResourceLimits limits;      // rlimits inside
  // Never run as uid 65534 on the host (still 65534 inside, without capabilities). For jobs that
  // write one folder at the same time: whether a job can drop the host uid depends on the paths
  // its command names, and a folder given to 65534 for one is not writable by another that keeps
  // it (a build's compilers).
  bool keep_host_uid = false;
};

struct SandboxRun {
  RunResult process;
  Isolation isolation = Isolation::kNone;
  bool oom_killed = false;            // the cgroup memory limit was hit
  bool host_uid_dropped = false;      // the job ran as uid 65534 on the host, not only inside
  std::vector<std::string> tampered;  // protected files whose content changed during the run
};

// JobContainment is the host side of containing one job: what Run does around the command, shared
// with jobs that enter the jail themselves (the fork server's children, harness/fork_server.h).
struct JobContainment {
  JailSpec jail;                      // the policy, as the jail reads it
  std::unique_ptr<CgroupJob> cgroup;  // the job's cgroup; removed with this object
  std::vector<std::pair<fs::path, std::string>> fingerprints;  // protected files before the run
  Isolation isolation = Isolation::kNone;
  bool host_uid_dropped = false;
};

class Sandbox {
 public:
  // Default detects bubblewrap ($CUDA_AGENT_BWRAP, <home>/dist/bin/bwrap, PATH) once and uses it
  // when it works, else the jail when it works, else nothing (and says so); the backend can be
  // forced with $CUDA_AGENT_SANDBOX=bwrap|jail|none.
  static const Sandbox& Default();
  static Sandbox WithBubblewrap(std::string bwrap_path);
  // WithJail: `cuda-agent __jail SPEC -- COMMAND...` (RunJailed) enters the jail and execs COMMAND.
  static Sandbox WithJail(std::string self_path);
  static Sandbox Unisolated(std::string why);

  Isolation Level() const;
  // Describe: "full (bubblewrap …; cgroup v1 …)" or why it is degraded.
  std::string Describe() const;
  Result<SandboxRun> Run(const SandboxPolicy& policy, const RunOptions& inner) const;

  // JailAllowed: false only when containment was switched off ($CUDA_AGENT_SANDBOX=none).
  bool JailAllowed() const { return jail_allowed_; }
  // PrepareJail does, for a job that will enter the jail itself, what Run does around a command:
  // refuses missing writable folders, fingerprints protected files, drops the host uid when
  // everything in `needed` (and the policy's folders) is reachable by uid 65534 (giving the
  // writable folders to it), creates the cgroup, and fills `jail` (cwd inside: `cwd`).
  Result<JobContainment> PrepareJail(const SandboxPolicy& policy,
                                     const std::vector<fs::path>& needed,
                                     const std::string& cwd) const;
  // Settle reports, once the job ended, whether the cgroup's memory limit killed it and which
  // protected files changed.
  static void Settle(const JobContainment& containment, SandboxRun* run);

  // BubblewrapArgs builds the bwrap command line for `policy` around `inner_argv` (for tests).
  std::vector<std::string> BubblewrapArgs(const SandboxPolicy& policy,
                                          const RunOptions& inner) const;

 private:
  std::string bwrap_;  // bubblewrap's path; empty: another backend
  std::string jail_;   // this binary's path when the jail backend runs commands
  std::string why_;
  bool jail_allowed_ = true;
};

// RunJailed is `cuda-agent __jail SPEC_JSON -- COMMAND...`: enters the jail described by SPEC_JSON
// (JailSpecToJson) and execs COMMAND; exit status kJailSetupExit with a message when it cannot.
int RunJailed(const std::vector<std::string>& args);

}  // namespace cuda_agent
