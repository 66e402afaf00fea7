// client.h — the C++ side of the Python harness (python/cuda_agent_harness): runs one harness job
// in a child process and returns its JSON result. The protocol is docs/harness-protocol.md.
//
//   HarnessEnv env = HarnessEnv::Discover();
//   Result<JobOutcome> r = RunHarnessJob(env, "reference", spec, job_dir, 300);
//   if (r.ok() && r->has_result && r->result["ok"]) ...
#pragma once

#include <string>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace cuda_agent {

// HarnessEnv says where the project's files are and which Python runs the harness.
struct HarnessEnv {
  fs::path home;                 // repository root or bundle root: holds python/ and templates/
  std::string python = "python3";

  // Discover: home from $CUDA_AGENT_HOME, else the folder above the binary if it holds
  // python/cuda_agent_harness, else the source tree the binary was built from; python from
  // $CUDA_AGENT_PYTHON, else python3.
  static Result<HarnessEnv> Discover();
  fs::path TemplateDir() const { return home / "templates" / "workspace"; }
};

struct JobOutcome {
  bool has_result = false;   // the job wrote its result file
  Json result;               // the result object when has_result
  RunResult process;         // how the child ended, with captured output

  // Ok: the job ran and reported ok == true.
  bool Ok() const;
  std::string ErrorKind() const;
  std::string Reason() const;
  // StderrTail returns the last `lines` lines of the child's stderr.
  std::string StderrTail(int lines = 20) const;
};

// RunHarnessJob writes `spec` (plus result_path) into `job_dir` and runs the job. An error Status
// means the harness could not be started at all (no python, missing package).
Result<JobOutcome> RunHarnessJob(const HarnessEnv& env, const std::string& job, Json spec,
                                 const fs::path& job_dir, double timeout_seconds,
                                 const ResourceLimits& limits = {});

// ExecutablePath returns the absolute path of the running binary.
fs::path ExecutablePath();

}  // namespace cuda_agent
