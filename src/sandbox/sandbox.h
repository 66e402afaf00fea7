// sandbox.h — runs an untrusted command contained: its own user/mount/pid/net/ipc/uts namespaces
// (bubblewrap), the root filesystem read-only, home folders and the judge's cache hidden, a private
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

namespace cuda_agent {

enum class Isolation { kFull, kDegraded, kNone };
const char* IsolationName(Isolation level);

struct SandboxPolicy {
  std::vector<fs::path> writable;   // bound read-write (the job's own output folders)
  std::vector<fs::path> read_only;  // bound read-only after hiding (interpreter, harness, inputs)
  std::vector<fs::path> hidden;     // replaced by an empty tmpfs (caches, other work folders)
  std::vector<fs::path> protected_files;  // bound read-only, hashed before and checked after
  bool network = false;
  bool gpu = false;                 // bind /dev/nvidia* (the job holds a GPU lease)
  uint64_t memory_bytes = 0;        // cgroup memory limit; 0: none
  uint64_t max_pids = 0;            // cgroup pids limit; 0: none
  uint64_t tmp_bytes = 0;           // size of the private /tmp and /dev/shm; 0: 1 GiB
  ResourceLimits limits;            // rlimits inside
};

struct SandboxRun {
  RunResult process;
  Isolation isolation = Isolation::kNone;
  bool oom_killed = false;          // the cgroup memory limit was hit
  bool host_uid_dropped = false;    // the job ran as uid 65534 on the host, not only inside
  std::vector<std::string> tampered;  // protected files whose content changed during the run
};

class Sandbox {
 public:
  // Default detects bubblewrap ($CUDA_AGENT_BWRAP, <home>/dist/bin/bwrap, PATH) once; the mode can
  // be forced with $CUDA_AGENT_SANDBOX=bwrap|none.
  static const Sandbox& Default();
  static Sandbox WithBubblewrap(std::string bwrap_path);
  static Sandbox Unisolated(std::string why);

  Isolation Level() const;
  // Describe: "full (bubblewrap …; cgroup v1 …)" or why it is degraded.
  std::string Describe() const;
  Result<SandboxRun> Run(const SandboxPolicy& policy, const RunOptions& inner) const;

  // BubblewrapArgs builds the bwrap command line for `policy` around `inner_argv` (for tests).
  std::vector<std::string> BubblewrapArgs(const SandboxPolicy& policy, const RunOptions& inner) const;

 private:
  std::string bwrap_;  // empty: unisolated
  std::string why_;
};

}  // namespace cuda_agent
