// jail.h — enters the sandbox from inside the current process, without exec: the fork server's
// children (python/cuda_agent_harness/forkserver.py) call it right after fork, so a job keeps the
// torch its parent imported and still runs as contained as a bubblewrap job (sandbox.h):
//   own user, mount, pid, net, ipc, uts and cgroup namespaces; the root filesystem bound read-only;
//   a private /tmp and /dev/shm; a minimal /dev (plus the GPU nodes for GPU jobs); a fresh /proc;
//   home folders and `hidden` folders replaced by empty tmpfs; `writable` folders bound read-write
//   and `read_only`/`protected_files` read-only on top; no network; uid/gid 65534 (also on the host
//   when the caller drops the host uid first); no capabilities, no new privileges; rlimits; the
//   cgroup the caller chose joined before anything else.
//
// Process layout (as bubblewrap's): the caller C stays on the host and waits; G is pid 1 of the new
// pid namespace (it builds the mounts and reaps); H (pid 2) is the job and the only one that
// returns. C ends with H's exit status or dies by H's signal; killing C kills G (parent-death
// signal) and with G the whole namespace.
//
//   JailSpec spec = JailSpecFromJson(json).value();
//   Status s = EnterJail(spec, ready_fd);   // returns only in H (OK) or in C before any fork
//   (error) if (!s.ok()) { report(s); _exit(1); } run_the_job();
//
// The calling process must be single-threaded (unshare(CLONE_NEWUSER) requires it).
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace cuda_agent {

struct JailSpec {
  std::vector<std::string> writable;         // bound read-write (must exist)
  std::vector<std::string> read_only;        // bound read-only when under a hidden folder
  std::vector<std::string> hidden;           // replaced by an empty tmpfs (with /root, /home)
  std::vector<std::string> protected_files;  // bound read-only on top of everything
  bool gpu = false;                          // bind /dev/nvidia*
  bool network = false;                      // keep the host's network (default: none)
  uint64_t tmp_bytes = 0;                    // private /tmp and /dev/shm size; 0: 1 GiB
  ResourceLimits limits;
  std::vector<std::string> cgroup_procs;  // cgroup.procs / tasks files joined first
  bool drop_host_uid = false;             // as root: become uid 65534 on the host too
  std::string cwd;                        // working folder inside (default "/")
};

// JailSpecFromJson reads the fork server's request field "jail" (keys as the fields above).
Result<JailSpec> JailSpecFromJson(const Json& j);
Json JailSpecToJson(const JailSpec& spec);

// EnterJail: see the header comment. `ready_fd` (>= 0) receives, from C, one line: "ok\n" once H is
// set up, or "error: <why>\n" when setting up failed after the first fork (C then ends with exit
// status kJailSetupExit). Candidate code in H never holds this descriptor.
Status EnterJail(const JailSpec& spec, int ready_fd);

inline constexpr int kJailSetupExit = 125;

}  // namespace cuda_agent
