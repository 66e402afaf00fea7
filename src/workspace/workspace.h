// workspace.h — the agent's working folder: materialised from templates/workspace (SKILL.md, the
// fixed binding files, the protected utils/ commands) plus the task's model.py, with the hashes of
// its protected files. The candidate in it is read as a value (workspace/candidate.h).
//
//   InitWorkspace({.task = t, .dir = "ws", .device = Device::kCuda, .env = env});
//   Result<Candidate> c = Candidate::FromFolder("ws");
#pragma once

#include <string>
#include <vector>

#include "common/device.h"
#include "harness/client.h"
#include "task/task.h"

namespace cuda_agent {

struct WorkspaceSpec {
  Task task;
  fs::path dir;
  Device device = Device::kCuda;
  HarnessEnv env;
  fs::path binary;  // the cuda-agent binary the utils/ commands call
};

// The files of a workspace that the agent may not change.
std::vector<std::string> ProtectedFiles(const fs::path& workspace_dir);

// InitWorkspace creates `spec.dir` (it must not exist or be empty) and writes
// .cuda-agent/workspace.json with the task, device, binary and the hashes of protected files.
Status InitWorkspace(const WorkspaceSpec& spec);

// VerifyProtectedFiles compares a workspace's protected files with the hashes recorded at init.
Status VerifyProtectedFiles(const fs::path& workspace_dir);

}  // namespace cuda_agent
