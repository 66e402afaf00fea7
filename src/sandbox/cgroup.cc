// cgroup.cc — detection and per-job groups for cgroup v2 and v1.
#include "sandbox/cgroup.h"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>

namespace cuda_agent {
namespace {

bool WriteText(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::string ReadText(const fs::path& file) {
  Result<std::string> r = ReadFile(file);
  return r.ok() ? r.value() : "";
}

// OwnCgroup returns our path in a hierarchy from /proc/self/cgroup ("" for v2's "0::").
std::string OwnCgroup(const std::string& controller) {
  std::istringstream lines(ReadText("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    std::stringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name == controller) return path;
    }
    if (controller.empty() && controllers.empty()) return path;
  }
  return "";
}

// RelativeCgroup is our path in a hierarchy without its leading '/', or nullopt when we are in
// none.
std::optional<std::string> RelativeCgroup(const std::string& controller) {
  std::string path = OwnCgroup(controller);
  if (path.empty()) return std::nullopt;
  return path.substr(1);
}

bool CanMakeChild(const fs::path& parent) {
  fs::path probe = parent / ("cuda-agent-probe-" + std::to_string(getpid()));
  std::error_code ec;
  if (!fs::create_directory(probe, ec)) return false;
  fs::remove(probe, ec);
  return true;
}

}  // namespace

CgroupJob::~CgroupJob() {
  // The job's processes are gone (the sandbox kills its whole tree); remove the folders.
  for (const auto& dir : dirs_) {
    std::error_code ec;
    for (int attempt = 0; attempt < 50 && fs::exists(dir, ec); ++attempt) {
      if (::rmdir(dir.c_str()) == 0) break;
      usleep(20000);
    }
  }
}

std::vector<std::string> CgroupJob::ProcsFiles() const {
  std::vector<std::string> files;
  for (const auto& dir : dirs_) files.push_back((dir / "cgroup.procs").string());
  return files;
}

bool CgroupJob::OomKilled() const {
  if (dirs_.empty()) return false;
  if (v2_) {
    std::istringstream events(ReadText(dirs_[0] / "memory.events"));
    std::string key;
    long value = 0;
    while (events >> key >> value) {
      if (key == "oom_kill" && value > 0) return true;
    }
    return false;
  }
  std::istringstream control(ReadText(dirs_[0] / "memory.oom_control"));
  std::string key;
  long value = 0;
  while (control >> key >> value) {
    if (key == "oom_kill" && value > 0) return true;
  }
  return std::atol(ReadText(dirs_[0] / "memory.failcnt").c_str()) > 0;
}

const Cgroups& Cgroups::Detect() {
  static const Cgroups detected = [] {
    Cgroups c;
    if (geteuid() != 0) {
      c.why_ = "cgroups not used: not running as root";
      return c;
    }
    // v2: the unified tree, where our own group's subtree can get memory and pids.
    std::error_code ec;
    for (const fs::path& root : {fs::path("/sys/fs/cgroup"), fs::path("/sys/fs/cgroup/unified")}) {
      if (!fs::exists(root / "cgroup.controllers", ec)) continue;
      std::string controllers = ReadText(root / "cgroup.controllers");
      std::optional<std::string> own = RelativeCgroup("");
      if (!own || controllers.find("memory") == std::string::npos) continue;
      // Our own group's subtree first; a group of processes cannot hand controllers to children
      // (cgroup v2's no-internal-process rule), so then a "cuda-agent" group under the root.
      for (const fs::path& parent : {root / *own, root / "cuda-agent"}) {
        if (parent == root / "cuda-agent") {
          WriteText(root / "cgroup.subtree_control", "+memory +pids");
          fs::create_directory(parent, ec);
        }
        WriteText(parent / "cgroup.subtree_control", "+memory +pids");
        std::string enabled = ReadText(parent / "cgroup.subtree_control");
        if (enabled.find("memory") != std::string::npos && CanMakeChild(parent)) {
          c.v2_ = true;
          c.memory_parent_ = parent;
          c.why_ = "cgroup v2 at " + parent.string();
          return c;
        }
      }
    }
    // v1: separate memory and pids hierarchies.
    std::optional<std::string> own_mem = RelativeCgroup("memory");
    std::optional<std::string> own_pids = RelativeCgroup("pids");
    fs::path mem = fs::path("/sys/fs/cgroup/memory") / own_mem.value_or("");
    fs::path pids = fs::path("/sys/fs/cgroup/pids") / own_pids.value_or("");
    if (own_mem && fs::exists(mem / "memory.limit_in_bytes", ec) && CanMakeChild(mem)) {
      c.memory_parent_ = mem;
      if (own_pids && fs::exists(pids / "pids.max", ec) && CanMakeChild(pids))
        c.pids_parent_ = pids;
      c.why_ =
          "cgroup v1 at " + mem.string() + (c.pids_parent_.empty() ? "" : " and " + pids.string());
      return c;
    }
    c.why_ = "no writable cgroup hierarchy with a memory controller";
    return c;
  }();
  return detected;
}

Result<std::unique_ptr<CgroupJob>> Cgroups::Create(const std::string& name, uint64_t memory_bytes,
                                                   uint64_t max_pids) const {
  if (!Available()) return FailedPrecondition(why_);
  std::vector<fs::path> dirs;
  auto make = [&](const fs::path& parent) -> Status {
    fs::path dir = parent / name;
    std::error_code ec;
    if (!fs::create_directory(dir, ec)) return Internal("cannot create cgroup " + dir.string());
    dirs.push_back(dir);
    return OkStatus();
  };
  Status made = make(memory_parent_);
  if (made.ok() && !v2_ && !pids_parent_.empty()) made = make(pids_parent_);
  // The job owns every folder made so far, so they are removed even when a later step fails.
  auto job = std::make_unique<CgroupJob>(dirs, v2_);
  if (!made.ok()) return made;
  const fs::path& memory_dir = dirs[0];
  if (v2_) {
    if (memory_bytes) WriteText(memory_dir / "memory.max", std::to_string(memory_bytes));
    if (memory_bytes) WriteText(memory_dir / "memory.swap.max", "0");
    if (max_pids) WriteText(memory_dir / "pids.max", std::to_string(max_pids));
  } else {
    if (memory_bytes) {
      WriteText(memory_dir / "memory.limit_in_bytes", std::to_string(memory_bytes));
      WriteText(memory_dir / "memory.memsw.limit_in_bytes", std::to_string(memory_bytes));
    }
    if (max_pids && dirs.size() > 1) WriteText(dirs[1] / "pids.max", std::to_string(max_pids));
  }
  return job;
}

}  // namespace cuda_agent
