// fork_server.h — the client of the harness fork server (python/cuda_agent_harness/forkserver.py):
// a long-lived Python process that imported torch once and forks one child per job, each of which
// enters the jail (sandbox/jail.h) and runs the job. A job then costs its work and a CUDA
// initialisation (~0.3 s on an H100) instead of an interpreter start and a torch import (5 s
// there).
//
// One server per user × Python × harness version (its socket under /tmp/cuda-agent-<uid>/) serves
// every judge process of that user: the first client starts it detached; it exits after
// `idle_seconds` without work. Protocol: docs/harness-protocol.md, "Fork server".
//
//   Result<ForkServer> fs = ForkServer::Ensure(env, ForkServerOptions{});
//   ForkServerJob job{.job = "reference", .spec_path = ..., .stdout_path = ..., .stderr_path =
//   ...}; Result<RunResult> r = fs->Run(job, /*timeout_seconds=*/300);
#pragma once

#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "common/subprocess.h"
#include "sandbox/jail.h"

namespace cuda_agent {

struct HarnessEnv;

struct ForkServerOptions {
  double idle_seconds = 600;     // the server exits after this long without work
  double start_timeout_s = 180;  // how long to wait for a new server to listen (torch import)
};

struct ForkServerJob {
  std::string job;  // a harness job name (runner.JOB_MODULES)
  std::string spec_path;
  std::string cwd;
  std::vector<std::string> env;  // the job's whole environment, "KEY=VALUE"
  std::string stdout_path, stderr_path;
  std::optional<JailSpec> jail;       // none: the job runs unjailed
  size_t max_output_bytes = 1 << 20;  // per stream, head and tail kept
  std::atomic<pid_t>* started_pid =
      nullptr;  // set to the child's pid once it runs (to call it off)
};

class ForkServer {
 public:
  // Ensure returns a client of the running server for `env`, starting one when none answers.
  static Result<ForkServer> Ensure(const HarnessEnv& env, const ForkServerOptions& options);

  // Run runs one job and waits for it (at most `timeout_seconds`, then kills it). An error Status
  // means the server failed us (it went away, the jail could not be entered), never the job.
  Result<RunResult> Run(const ForkServerJob& job, double timeout_seconds) const;

  // Jail: "ok" when the server's children can enter the jail, else why not (or "" when the server
  // has no jail library).
  const std::string& Jail() const { return jail_; }
  // CudaUsable: the server's children may initialise CUDA (nothing the server imported touched the
  // driver); when false, GPU jobs must start their own interpreter.
  bool CudaUsable() const { return cuda_fork_ == "ok"; }
  const std::string& SocketPath() const { return socket_; }

  // SocketFor names the socket of the server that serves `env` (for tests and `cuda-agent
  // harness`).
  static std::string SocketFor(const HarnessEnv& env);

 private:
  std::string socket_;
  std::string jail_;
  std::string cuda_fork_;
};

// JailLibraryPath: libcuda_agent_jail.so next to the running binary, or "" when it is missing.
std::string JailLibraryPath();

}  // namespace cuda_agent
