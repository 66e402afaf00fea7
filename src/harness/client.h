// client.h — the C++ side of the Python harness (python/cuda_agent_harness): runs one harness job
// in a child process and returns its JSON result. The protocol is docs/harness-protocol.md.
//
//   HarnessEnv env = HarnessEnv::Discover();
//   Result<JobOutcome> r = RunHarnessJob(env, "reference", spec, job_dir, 300);
//   if (r.ok() && r->has_result && r->result["ok"]) ...
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "sandbox/sandbox.h"

namespace cuda_agent {

// HarnessEnv says where the project's files are and which Python runs the harness.
struct HarnessEnv {
  fs::path home;  // repository root or bundle root: holds python/ and templates/
  std::string python = "python3";
  // The fork server (harness/fork_server.h) forks harness jobs from a warm interpreter; off: every
  // job starts its own. It ends after fork_server_idle_s without work.
  bool fork_server = true;
  double fork_server_idle_s = 600;

  // Discover reads the host's settings, once, at the command line's edge: home from
  // $CUDA_AGENT_HOME, else the folder above the binary if it holds python/cuda_agent_harness, else
  // the source tree the binary was built from; python from $CUDA_AGENT_PYTHON, else python3;
  // $CUDA_AGENT_FORK_SERVER=0 and $CUDA_AGENT_FORK_SERVER_IDLE (seconds).
  static Result<HarnessEnv> Discover();
  fs::path TemplateDir() const { return home / "templates" / "workspace"; }
};

// JobSandbox: how to contain one job. The job's own folder (spec and result) is made writable and
// <home>/python readable on top of `policy`.
struct JobSandbox {
  const Sandbox* sandbox = nullptr;
  SandboxPolicy policy;
  std::string python;  // the interpreter as seen inside (a real path, not a pyenv shim)
  std::vector<std::string> wrapper;  // argv put before the interpreter (e.g. compute-sanitizer ...)
  std::vector<std::string> env_set;  // "KEY=VALUE" added to the job's environment
};

struct JobOutcome {
  bool has_result = false;  // the job wrote its result file
  Isolation isolation = Isolation::kNone;
  bool oom_killed = false;  // the sandbox's memory limit ended it
  Json result;              // the result object when has_result
  RunResult process;        // how the child ended, with captured output

  // Ok: the job ran and reported ok == true.
  bool Ok() const;
  std::string ErrorKind() const;
  std::string Reason() const;
  // ReadResult takes the job's result from `path` when it holds a JSON object (has_result).
  void ReadResult(const fs::path& path);
  // StderrTail returns the last `lines` lines of the child's stderr.
  std::string StderrTail(int lines = 20) const;
};

// RunHarnessJob writes `spec` (plus result_path) into a folder of its own under `jobs_dir` and runs
// the job, inside `sandbox` when given. An error Status means the harness could not be started at
// all (no python, missing package). The job "synth" is data synthesis's, not the harness's: it runs
// as `python3 -m cuda_agent_synth --spec SPEC` (python/cuda_agent_synth), never in the fork server.
// `started_pid`, when given, receives the job's pid once it runs as a child of the fork server (its
// caller may then kill it: SIGKILL ends the job's whole namespace); it stays 0 otherwise.
Result<JobOutcome> RunHarnessJob(const HarnessEnv& env, const std::string& job, Json spec,
                                 const fs::path& jobs_dir, double timeout_seconds,
                                 const JobSandbox* sandbox = nullptr,
                                 std::atomic<pid_t>* started_pid = nullptr);

// HarnessRunOptions: the command line and environment of `job` on `spec_path` (no cwd, no time
// limit): what RunHarnessJob runs, whichever way it starts the job.
RunOptions HarnessRunOptions(const HarnessEnv& env, const std::string& job,
                             const fs::path& spec_path, const JobSandbox* sandbox);

class ForkServer;
// HarnessForkServer: this process's client of the fork server (started on first use), or null when
// it is switched off ($CUDA_AGENT_FORK_SERVER=0) or could not start.
const ForkServer* HarnessForkServer(const HarnessEnv& env);

// ExecutablePath returns the absolute path of the running binary.
fs::path ExecutablePath();

}  // namespace cuda_agent
