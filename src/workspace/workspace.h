// workspace.h — the agent's working folder: materialised from templates/workspace (SKILL.md, the
// fixed binding files, the protected utils/ commands) plus the task's model.py; and the candidate
// snapshot the judge builds from, which holds only the candidate's own files.
//
//   InitWorkspace({.task = t, .dir = "ws", .device = Device::kCuda, .env = env});
//   SnapshotCandidate("ws", "job/src", env.TemplateDir());
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

// CandidateFiles lists the candidate's files (relative): kernels/** sources and headers, and
// model_new.py when present. Everything else in the folder is ignored.
std::vector<fs::path> CandidateFiles(const fs::path& candidate_dir);

// SnapshotCandidate copies the candidate's files and the template's binding files into `dest`.
Status SnapshotCandidate(const fs::path& candidate_dir, const fs::path& dest,
                         const fs::path& template_dir);

// CandidateHash hashes the candidate's files (names and contents).
std::string CandidateHash(const fs::path& candidate_dir);

// VerifyProtectedFiles compares a workspace's protected files with the hashes recorded at init.
Status VerifyProtectedFiles(const fs::path& workspace_dir);

}  // namespace cuda_agent
