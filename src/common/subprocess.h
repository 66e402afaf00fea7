// subprocess.h — run a command with argv, environment, cwd, rlimits and a wall-clock watchdog.
//
// The child starts a new session (its own process group); when the watchdog fires, or when the
// child exits, the whole group is killed with SIGKILL so no stray grandchild survives. stdout and
// stderr are captured with a cap: the head and the tail are kept, the middle is elided.
//
//   RunOptions opt;
//   opt.argv = {"g++", "-c", "x.cpp"};
//   opt.timeout_seconds = 120;
//   Result<RunResult> r = RunProcess(opt);
//   if (r.ok() && !r->Succeeded()) Report(r->Describe(), r->err);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace cuda_agent {

// ResourceLimits are setrlimit values for the child; 0 leaves a limit unchanged.
struct ResourceLimits {
  uint64_t address_space_bytes = 0;
  uint64_t cpu_seconds = 0;
  uint64_t open_files = 0;
  uint64_t processes = 0;
  uint64_t file_size_bytes = 0;
  uint64_t core_file_bytes = 0;  // 0 here means: disable core dumps (the default for judged code)
};

struct RunOptions {
  std::vector<std::string> argv;
  std::vector<std::string> env_set;    // "KEY=VALUE", added to or overriding the inherited ones
  std::vector<std::string> env_unset;  // names removed from the inherited environment
  bool inherit_env = true;
  // When non-empty, only the inherited variables it names pass (a name, or a prefix ending in '*');
  // env_set still adds. JudgedEnvironment() is the list for processes that compile or run judged
  // code.
  std::vector<std::string> env_allow;
  std::string cwd;                    // empty: the parent's
  double timeout_seconds = 0;         // 0: no watchdog
  size_t max_output_bytes = 1 << 20;  // per stream: half kept from the head, half from the tail
  ResourceLimits limits;
  // Files the child writes its pid into before exec (cgroup.procs / tasks of its cgroups).
  std::vector<std::string> join_cgroup_files;
  // When >= 0 (and we are root), the child drops to this uid/gid (no supplementary groups) before
  // exec.
  int run_as_uid = -1;
  int run_as_gid = -1;
};

struct RunResult {
  int exit_code = -1;   // valid when term_signal == 0 and !timed_out
  int term_signal = 0;  // the signal that ended the child, if any
  bool timed_out = false;
  double wall_seconds = 0;
  std::string out;
  std::string err;
  bool out_truncated = false;
  bool err_truncated = false;

  bool Succeeded() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  // Describe says how the child ended: "exit status 1", "killed by SIGSEGV", "timed out after 5 s".
  std::string Describe() const;
};

// RunProcess returns an error Status only when the command could not be started at all
// (argv empty, executable not found, fork failure); every way the child can end is a RunResult.
Result<RunResult> RunProcess(const RunOptions& options);

// SignalName returns "SIGSEGV" etc., or "signal N".
std::string SignalName(int signal_number);

// ApplyResourceLimits sets the non-zero limits (and the core-file limit, 0 disabling core dumps) on
// the calling process; only setrlimit, so it is safe between fork and exec.
void ApplyResourceLimits(const ResourceLimits& limits);

// BuildEnvironment: the environment a child of RunProcess gets ("KEY=VALUE"): the inherited one
// (unless !inherit_env; only env_allow's names when that is set), minus env_unset, plus env_set.
std::vector<std::string> BuildEnvironment(const RunOptions& options);

// JudgedEnvironment: the inherited variables a compiler, a harness job or the fork server may see —
// what toolchains, CUDA, torch and the locale read, and our own CUDA_AGENT_* switches. Everything
// else (API keys for the agent's model, cloud credentials, tokens) stays out of reach of judged
// code, which could otherwise print it (`#include "/proc/self/environ"` in a compile error, for
// one).
const std::vector<std::string>& JudgedEnvironment();

// SpawnDetached starts `argv` (environment `env`, "KEY=VALUE") in a session of its own whose parent
// is init, stdout and stderr appended to `log`, and returns at once: for helpers that outlive the
// caller (the fork server, a precompiled header being made).
Status SpawnDetached(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& log);

// FindExecutable resolves a bare name through $PATH; a name containing '/' is returned as is.
Result<std::string> FindExecutable(const std::string& name);

}  // namespace cuda_agent
