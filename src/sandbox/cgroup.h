// cgroup.h — memory and process-count limits for one sandboxed job, through whichever cgroup
// hierarchy is writable: v2 (one unified tree) or v1 (separate memory and pids trees).
//
//   Result<CgroupJob> cg = Cgroups::Detect().Create("judge-42", 8 << 30, 1024);
//   opts.join_cgroup_files = cg->ProcsFiles();   // the child joins before exec
//   ... run ...; bool oom = cg->OomKilled();     // the group is removed when `cg` goes away
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

// CgroupJob is one job's group (one folder per hierarchy); removed on destruction.
class CgroupJob {
 public:
  CgroupJob(std::vector<fs::path> dirs, bool v2) : dirs_(std::move(dirs)), v2_(v2) {}
  ~CgroupJob();
  CgroupJob(const CgroupJob&) = delete;
  CgroupJob& operator=(const CgroupJob&) = delete;

  std::vector<std::string> ProcsFiles() const;
  const std::vector<fs::path>& Dirs() const { return dirs_; }
  bool V2() const { return v2_; }
  // Release: the folders outlive this object (a standby's cgroup, removed by whoever claims it or
  // by the fork server).
  void Release() { dirs_.clear(); }
  // OomKilled says whether the memory limit killed a process of the group.
  bool OomKilled() const;

 private:
  std::vector<fs::path> dirs_;
  bool v2_;
};

// Cgroups finds a writable hierarchy once.
class Cgroups {
 public:
  static const Cgroups& Detect();
  bool Available() const { return !memory_parent_.empty(); }
  // Why is a one-line description: "cgroup v2 at …", or why none is usable.
  const std::string& Why() const { return why_; }
  Result<std::unique_ptr<CgroupJob>> Create(const std::string& name, uint64_t memory_bytes,
                                            uint64_t max_pids) const;

 private:
  bool v2_ = false;
  fs::path memory_parent_;  // v2: the one parent; v1: the memory hierarchy's parent
  fs::path pids_parent_;    // v1 only
  std::string why_;
};

}  // namespace cuda_agent
