// jail.cc — the in-process sandbox (see jail.h). Everything here runs in a freshly forked,
// single-threaded child of the fork server: plain system calls, early returns with the errno text.
#include "sandbox/jail.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cuda_agent {
namespace {

constexpr int kNobody = 65534;
constexpr const char* kBase = "/tmp";  // the temporary root the new tree is assembled under

Status Errno(const std::string& what) { return Internal(what + ": " + std::strerror(errno)); }

Status WriteText(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  ssize_t n = write(fd, text.data(), text.size());
  int saved = errno;
  close(fd);
  errno = saved;
  if (n != static_cast<ssize_t>(text.size())) return Errno("write " + path);
  return OkStatus();
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

Status Mount(const std::string& src, const std::string& dst, const char* type, unsigned long flags,
             const char* data = nullptr) {
  if (mount(src.empty() ? nullptr : src.c_str(), dst.c_str(), type, flags, data) != 0) {
    return Errno("mount " + (src.empty() ? std::string(type ? type : "") : src) + " on " + dst);
  }
  return OkStatus();
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// MakeMountPoint creates `path` (a folder, or an empty file when `file`), parents included.
Status MakeMountPoint(const std::string& path, bool file) {
  if (Exists(path)) return OkStatus();
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    std::string parent = path.substr(0, slash);
    if (!Exists(parent)) {
      if (Status s = MakeMountPoint(parent, false); !s.ok()) return s;
    }
  }
  if (file) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("create mount point " + path);
    close(fd);
    return OkStatus();
  }
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Errno("create mount point " + path);
  return OkStatus();
}

// RemountReadOnly makes one existing bind mount read-only, keeping the flags the kernel may have
// locked (nosuid, nodev, noexec, atime) so that the remount is allowed in a user namespace.
Status RemountReadOnly(const std::string& path) {
  struct StatvfsFlag {
    unsigned long st, ms;
  };
  struct statvfs sv;
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
  if (statvfs(path.c_str(), &sv) == 0) {
    for (auto f :
         {StatvfsFlag{ST_NOSUID, MS_NOSUID}, StatvfsFlag{ST_NODEV, MS_NODEV},
          StatvfsFlag{ST_NOEXEC, MS_NOEXEC}, StatvfsFlag{ST_NOATIME, MS_NOATIME},
          StatvfsFlag{ST_NODIRATIME, MS_NODIRATIME}, StatvfsFlag{ST_RELATIME, MS_RELATIME}}) {
      if (sv.f_flag & f.st) flags |= f.ms;
    }
  }
  return Mount("", path, nullptr, flags);
}

// MountPointsUnder lists the mount points at or below `prefix` (from mountinfo), parents first.
std::vector<std::string> MountPointsUnder(const std::string& mountinfo, const std::string& prefix) {
  std::vector<std::string> points;
  std::ifstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    if (!(fields >> id >> parent >> devno >> root >> point)) continue;
    // Octal escapes (\040 for a space) stay escaped: such mounts are skipped, not misread.
    if (point == prefix || point.rfind(prefix + "/", 0) == 0) points.push_back(point);
  }
  std::sort(points.begin(), points.end());
  return points;
}

// MakeTreeReadOnly: the whole tree under `path` read-only, with mount_setattr (Linux 5.12) or,
// where that is missing, one remount per mount point.
Status MakeTreeReadOnly(const std::string& path, const std::string& mountinfo) {
  struct MountAttr {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
  } attr{0x1 /* MOUNT_ATTR_RDONLY */, 0, 0, 0};
#ifdef SYS_mount_setattr
  constexpr long kMountSetattr = SYS_mount_setattr;
#else
  constexpr long kMountSetattr = 442;
#endif
  constexpr int kAtRecursive = 0x8000;
  if (syscall(kMountSetattr, AT_FDCWD, path.c_str(), kAtRecursive, &attr, sizeof(attr)) == 0) {
    return OkStatus();
  }
  if (errno != ENOSYS) return Errno("mount_setattr read-only " + path);
  for (const std::string& point : MountPointsUnder(mountinfo, path)) {
    Status s = RemountReadOnly(point);
    // A mount point the kernel hides from us (EACCES) stays as it was; it was never ours to see.
    if (!s.ok() && errno != EACCES && errno != ENOENT) return s;
  }
  return OkStatus();
}

Status Bind(const std::string& src, const std::string& dst, bool read_only) {
  if (!Exists(src)) return NotFound("bind source missing: " + src);
  if (Status s = MakeMountPoint(dst, !IsDir(src)); !s.ok()) return s;
  if (Status s = Mount(src, dst, nullptr, MS_BIND | MS_REC); !s.ok()) return s;
  return read_only ? RemountReadOnly(dst) : OkStatus();
}

bool Under(const std::string& path, const std::string& folder) {
  return path == folder || path.rfind(folder.back() == '/' ? folder : folder + "/", 0) == 0;
}

std::string TmpfsOptions(uint64_t bytes, const char* mode) {
  return std::string("mode=") + mode + ",size=" + std::to_string(bytes ? bytes : (1ull << 30));
}

// MinimalDev: a tmpfs /dev with the harmless nodes bound from the host, plus the GPU's.
Status MinimalDev(const JailSpec& spec, const std::string& dev) {
  if (Status s = Mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755"); !s.ok())
    return s;
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    if (Status s = Bind(std::string("/oldroot/dev/") + node, dev + "/" + node, false); !s.ok())
      return s;
  }
  for (const auto& [name, target] : {std::pair{"fd", "/proc/self/fd"},
                                     {"stdin", "/proc/self/fd/0"},
                                     {"stdout", "/proc/self/fd/1"},
                                     {"stderr", "/proc/self/fd/2"},
                                     {"ptmx", "pts/ptmx"},
                                     {"core", "/proc/kcore"}}) {
    if (symlink(target, (dev + "/" + name).c_str()) != 0)
      return Errno(std::string("symlink /dev/") + name);
  }
  if (Status s = MakeMountPoint(dev + "/shm", false); !s.ok()) return s;
  std::string shm = TmpfsOptions(spec.tmp_bytes, "1777");
  if (Status s = Mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, shm.c_str()); !s.ok())
    return s;
  if (Status s = MakeMountPoint(dev + "/pts", false); !s.ok()) return s;
  // A private pty instance; not every kernel allows it in a user namespace, and jobs need none.
  (void)mount("devpts", (dev + "/pts").c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=620");
  if (!spec.gpu) return OkStatus();
  DIR* d = opendir("/oldroot/dev");
  if (d == nullptr) return Errno("list /dev");
  std::vector<std::string> nodes;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "nvidia", 6) == 0) nodes.push_back(e->d_name);
  }
  closedir(d);
  for (const auto& n : nodes) {
    if (Status s = Bind("/oldroot/dev/" + n, dev + "/" + n, false); !s.ok()) return s;
  }
  return OkStatus();
}

// BuildRoot assembles the job's filesystem under /newroot and moves into it. Runs in G (new user,
// mount and pid namespaces).
Status BuildRoot(const JailSpec& spec) {
  if (Status s = Mount("", "/", nullptr, MS_SLAVE | MS_REC); !s.ok()) return s;
  if (Status s = Mount("tmpfs", kBase, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1048576");
      !s.ok()) {
    return s;
  }
  for (const char* d : {"/tmp/newroot", "/tmp/oldroot"}) {
    if (mkdir(d, 0755) != 0) return Errno(std::string("mkdir ") + d);
  }
  if (syscall(SYS_pivot_root, kBase, "/tmp/oldroot") != 0)
    return Errno("pivot_root into the staging tmpfs");
  if (chdir("/") != 0) return Errno("chdir /");

  if (Status s = Mount("/oldroot", "/newroot", nullptr, MS_BIND | MS_REC); !s.ok()) return s;
  if (Status s = MakeTreeReadOnly("/newroot", "/oldroot/proc/self/mountinfo"); !s.ok()) return s;

  if (Status s = MinimalDev(spec, "/newroot/dev"); !s.ok()) return s;
  if (Status s = Mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);
      !s.ok()) {
    return s;
  }
  for (const char* sub : {"/newroot/proc/sys", "/newroot/proc/sysrq-trigger", "/newroot/proc/irq",
                          "/newroot/proc/bus"}) {
    if (!Exists(sub)) continue;
    if (Status s = Mount(sub, sub, nullptr, MS_BIND | MS_REC); !s.ok()) return s;
    if (Status s = RemountReadOnly(sub); !s.ok()) return s;
  }
  std::string tmp = TmpfsOptions(spec.tmp_bytes, "1777");
  if (Status s = Mount("tmpfs", "/newroot/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp.c_str());
      !s.ok()) {
    return s;
  }
  std::vector<std::string> hidden = {"/tmp", "/dev/shm"};
  std::vector<std::string> to_hide = {"/root", "/home"};
  to_hide.insert(to_hide.end(), spec.hidden.begin(), spec.hidden.end());
  for (const auto& h : to_hide) {
    if (h.empty() || h == "/" || !IsDir("/oldroot" + h)) continue;
    std::string target = "/newroot" + h;
    if (Status s = MakeMountPoint(target, false); !s.ok()) return s;
    if (Status s = Mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1048576");
        !s.ok()) {
      return s;
    }
    hidden.push_back(h);
  }
  // Writable first, read-only after: a protected file inside a writable folder stays read-only.
  for (const auto& p : spec.writable) {
    if (Status s = Bind("/oldroot" + p, "/newroot" + p, false); !s.ok()) return s;
  }
  for (const auto& p : spec.read_only) {
    bool under_hidden = std::any_of(hidden.begin(), hidden.end(),
                                    [&](const std::string& h) { return Under(p, h); });
    if (!under_hidden || !Exists("/oldroot" + p)) continue;
    if (Status s = Bind("/oldroot" + p, "/newroot" + p, true); !s.ok()) return s;
  }
  for (const auto& p : spec.protected_files) {
    if (Status s = Bind("/oldroot" + p, "/newroot" + p, true); !s.ok()) return s;
  }
  if (chdir("/newroot") != 0) return Errno("chdir /newroot");
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root into the new root");
  if (umount2(".", MNT_DETACH) != 0) return Errno("detach the old root");
  if (chdir("/") != 0) return Errno("chdir /");
  return OkStatus();
}

void LoopbackUp() {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  struct ifreq req;
  std::memset(&req, 0, sizeof(req));
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(s, SIOCGIFFLAGS, &req) == 0) {
    req.ifr_flags |= IFF_UP | IFF_RUNNING;
    (void)ioctl(s, SIOCSIFFLAGS, &req);
  }
  close(s);
}

// DropPrivileges: no capabilities (bounding, ambient, effective, permitted, inheritable), no new
// privileges, the job's rlimits.
Status DropPrivileges(const JailSpec& spec) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Errno("no_new_privs");
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;  // past the last capability this kernel knows
      return Errno("drop capability " + std::to_string(cap));
    }
  }
  (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  std::memset(data, 0, sizeof(data));
  if (syscall(SYS_capset, &header, data) != 0) return Errno("capset");
  ApplyResourceLimits(spec.limits);
  return OkStatus();
}

void CloseFrom(int lowest) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, lowest, ~0U, 0) == 0) return;
#endif
  for (int fd = lowest; fd < 65536; ++fd) close(fd);
}

[[noreturn]] void SetupFailed(int msg_fd, const Status& s) {
  WriteAll(msg_fd, "E" + s.message() + "\n");
  _exit(kJailSetupExit);
}

// RunJobSide is H after its fork: returns to the caller as the job.
Status RunJobSide(const JailSpec& spec, int msg_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  setsid();
  if (Status s = DropPrivileges(spec); !s.ok()) SetupFailed(msg_fd, s);
  std::string cwd = spec.cwd.empty() ? "/" : spec.cwd;
  if (chdir(cwd.c_str()) != 0) SetupFailed(msg_fd, Errno("chdir " + cwd));
  WriteAll(msg_fd, "R\n");
  CloseFrom(3);
  return OkStatus();
}

// RunInit is G: builds the root, starts H, reaps until H ends, reports H's end to C.
Status RunInit(const JailSpec& spec, int msg_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  (void)sethostname("sandbox", 7);
  if (Status s = BuildRoot(spec); !s.ok()) SetupFailed(msg_fd, s);
  if (!spec.network) LoopbackUp();
  pid_t job = fork();
  if (job < 0) SetupFailed(msg_fd, Errno("fork the job"));
  if (job == 0) return RunJobSide(spec, msg_fd);
  int status = 0;
  for (;;) {
    pid_t p = waitpid(-1, &status, 0);
    if (p == job) break;
    if (p < 0 && errno != EINTR) _exit(kJailSetupExit);
  }
  if (WIFSIGNALED(status)) {
    WriteAll(msg_fd, "S" + std::to_string(WTERMSIG(status)) + "\n");
  } else {
    WriteAll(msg_fd, "X" + std::to_string(WEXITSTATUS(status)) + "\n");
  }
  _exit(0);  // as pid 1: the kernel ends whatever the job left behind
}

[[noreturn]] void DieLike(int signal_number) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(signal_number, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal_number);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  kill(getpid(), signal_number);
  _exit(128 + signal_number);
}

// WaitAsOutside is C after the first fork: relays readiness, then H's end, and never returns.
[[noreturn]] void WaitAsOutside(pid_t init, int msg_fd, int ready_fd) {
  std::string buffer;
  char chunk[512];
  bool ready = false;
  std::string error;
  int exit_code = -1, term_signal = 0;
  for (;;) {
    ssize_t n = read(msg_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t eol;
    while ((eol = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, eol);
      buffer.erase(0, eol + 1);
      if (line.empty()) continue;
      char kind = line[0];
      std::string rest = line.substr(1);
      if (kind == 'R' && !ready) {
        ready = true;
        if (ready_fd >= 0) WriteAll(ready_fd, "ok\n");
      } else if (kind == 'E' && error.empty()) {
        error = rest;
      } else if (kind == 'X' && exit_code < 0 && term_signal == 0) {
        exit_code = std::atoi(rest.c_str());
      } else if (kind == 'S' && exit_code < 0 && term_signal == 0) {
        term_signal = std::atoi(rest.c_str());
      }
    }
  }
  int status = 0;
  while (waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ready) {
    if (error.empty()) error = "the sandbox's init process ended before the job started";
    if (ready_fd >= 0) WriteAll(ready_fd, "error: " + error + "\n");
    WriteAll(STDERR_FILENO, "cuda-agent jail: " + error + "\n");
    _exit(kJailSetupExit);
  }
  if (term_signal > 0) DieLike(term_signal);
  if (exit_code >= 0) _exit(exit_code);
  // G itself was killed before it could report (e.g. by the parent-death signal).
  if (WIFSIGNALED(status)) DieLike(WTERMSIG(status));
  _exit(kJailSetupExit);
}

std::vector<std::string> Strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

uint64_t Number(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

}  // namespace

Result<JailSpec> JailSpecFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("jail spec: not a JSON object");
  JailSpec s;
  s.writable = Strings(j, "writable");
  s.read_only = Strings(j, "read_only");
  s.hidden = Strings(j, "hidden");
  s.protected_files = Strings(j, "protected_files");
  s.cgroup_procs = Strings(j, "cgroup_procs");
  s.gpu = j.value("gpu", false);
  s.network = j.value("network", false);
  s.drop_host_uid = j.value("drop_host_uid", false);
  s.tmp_bytes = Number(j, "tmp_bytes");
  s.cwd = j.value("cwd", std::string());
  if (j.contains("limits") && j["limits"].is_object()) {
    const Json& l = j["limits"];
    s.limits.address_space_bytes = Number(l, "address_space_bytes");
    s.limits.cpu_seconds = Number(l, "cpu_seconds");
    s.limits.open_files = Number(l, "open_files");
    s.limits.processes = Number(l, "processes");
    s.limits.file_size_bytes = Number(l, "file_size_bytes");
    s.limits.core_file_bytes = Number(l, "core_file_bytes");
  }
  for (const auto* list : {&s.writable, &s.read_only, &s.hidden, &s.protected_files}) {
    for (const auto& p : *list) {
      if (p.empty() || p[0] != '/') return InvalidArgument("jail spec: not an absolute path: " + p);
    }
  }
  return s;
}

Json JailSpecToJson(const JailSpec& s) {
  const ResourceLimits& l = s.limits;
  return {{"writable", s.writable},
          {"read_only", s.read_only},
          {"hidden", s.hidden},
          {"protected_files", s.protected_files},
          {"cgroup_procs", s.cgroup_procs},
          {"gpu", s.gpu},
          {"network", s.network},
          {"drop_host_uid", s.drop_host_uid},
          {"tmp_bytes", s.tmp_bytes},
          {"cwd", s.cwd},
          {"limits",
           {{"address_space_bytes", l.address_space_bytes},
            {"cpu_seconds", l.cpu_seconds},
            {"open_files", l.open_files},
            {"processes", l.processes},
            {"file_size_bytes", l.file_size_bytes},
            {"core_file_bytes", l.core_file_bytes}}}};
}

Status EnterJail(const JailSpec& spec, int ready_fd) {
  std::string pid = std::to_string(getpid());
  for (const auto& file : spec.cgroup_procs) {
    if (Status s = WriteText(file, pid); !s.ok()) return s;
  }
  uid_t outer_uid = geteuid();
  gid_t outer_gid = getegid();
  if (spec.drop_host_uid && outer_uid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
        setresuid(kNobody, kNobody, kNobody) != 0) {
      return Errno("become uid 65534 on the host");
    }
    // setuid made us non-dumpable, which would make /proc/self/uid_map root's.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    outer_uid = outer_gid = kNobody;
  }
  int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
  if (!spec.network) flags |= CLONE_NEWNET;
  if (unshare(flags | CLONE_NEWCGROUP) != 0 && unshare(flags) != 0)
    return Errno("unshare namespaces");
  if (Status s = WriteText("/proc/self/setgroups", "deny"); !s.ok()) return s;
  if (Status s = WriteText("/proc/self/uid_map", "65534 " + std::to_string(outer_uid) + " 1\n");
      !s.ok()) {
    return s;
  }
  if (Status s = WriteText("/proc/self/gid_map", "65534 " + std::to_string(outer_gid) + " 1\n");
      !s.ok()) {
    return s;
  }
  int msg[2];
  if (pipe2(msg, O_CLOEXEC) != 0) return Errno("pipe");
  pid_t init = fork();
  if (init < 0) return Errno("fork the sandbox's init");
  if (init == 0) {
    close(msg[0]);
    if (ready_fd >= 0) close(ready_fd);
    return RunInit(spec, msg[1]);  // returns only in the job (H)
  }
  close(msg[1]);
  WaitAsOutside(init, msg[0], ready_fd);
}

}  // namespace cuda_agent
