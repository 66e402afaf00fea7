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
#include <memory>
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

// StandbyOffer: keep a job as a standby (an early job started for a later judgement) under `key`.
struct StandbyOffer {
  std::string key;
  int max_waiting = 1;               // the server declines when this many wait under the key
  std::vector<std::string> cleanup;  // removed by the server when the standby ends unclaimed
  Json record = Json::object();      // handed to whoever claims it
  double idle_s = 0;                 // > 0: the server ends it once it waited this long unclaimed
  // Non-empty: when it starts to wait (offered or released) the server ends the group's
  // longest-waiting standbys until fewer than `group_max` wait (what they hold is shared).
  std::string group;
  int group_max = 1;
};

class ServerConnection;

// ClaimedJob: a standby this process claimed; it owns the job (destroying it before the job ended
// kills the job).
class ClaimedJob {
 public:
  ClaimedJob(std::unique_ptr<ServerConnection> conn, pid_t pid, double waited_seconds, Json record);
  ClaimedJob(ClaimedJob&&) noexcept;
  ~ClaimedJob();

  pid_t pid() const { return pid_; }
  // WaitedSeconds: how long it had waited for a claim.
  double WaitedSeconds() const { return waited_seconds_; }
  // Record: what its offer said about it (StandbyOffer::record).
  const Json& Record() const { return record_; }
  // Wait waits for the job's end as ForkServer::Run does (`job` names its output files and whether
  // it was jailed), at most `timeout_seconds` from now, then kills it.
  Result<RunResult> Wait(const ForkServerJob& job, double timeout_seconds);
  // Abandon lets go of the job: if it still runs, the server kills it.
  void Abandon();
  // WaitOrReleased is Wait for a job that may be handed back (a kept job, harness/kept_jobs.h):
  // it also returns when the server took the job back after SendRelease (`*released` true; the
  // RunResult then says nothing). When the server declines the release, the job is killed and its
  // end returned. The connection stays open until this object goes.
  Result<RunResult> WaitOrReleased(const ForkServerJob& job, double timeout_seconds,
                                   bool* released);
  // SendRelease asks the server to put the job back under the key it was offered with, for the
  // next claim; the answer goes to WaitOrReleased, which another thread may be blocked in.
  Status SendRelease();

 private:
  std::unique_ptr<ServerConnection> conn_;
  pid_t pid_;
  double waited_seconds_;
  Json record_;
};

class ForkServer {
 public:
  // Ensure returns a client of the running server for `env`, starting one when none answers.
  static Result<ForkServer> Ensure(const HarnessEnv& env, const ForkServerOptions& options);

  // Run runs one job and waits for it (at most `timeout_seconds`, then kills it). An error Status
  // means the server failed us (it went away, the jail could not be entered), never the job.
  Result<RunResult> Run(const ForkServerJob& job, double timeout_seconds) const;
  // Offer starts `job` as a standby that outlives this client: true when it waits, false when the
  // server declined (enough wait under the key already). The job's spec must make it wait for a go.
  Result<bool> Offer(const ForkServerJob& job, const StandbyOffer& offer) const;
  // Claim takes the oldest standby waiting under `key`; none when there is none.
  Result<std::optional<ClaimedJob>> Claim(const std::string& key) const;

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
