// subprocess.cc — fork/exec with pipes, poll-based capture, a process-group watchdog.
#include "common/subprocess.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/host_environment.h"

extern char** environ;

namespace cuda_agent {
namespace {

// CappedBuffer keeps the first and the last `cap/2` bytes of a stream.
class CappedBuffer {
 public:
  explicit CappedBuffer(size_t cap) : half_(cap / 2) {}
  void Append(const char* data, size_t n) {
    total_ += n;
    size_t to_head = std::min(n, half_ - std::min(half_, head_.size()));
    head_.append(data, to_head);
    if (to_head == n) return;
    tail_.append(data + to_head, n - to_head);
    if (tail_.size() > 2 * half_ + 4096) tail_.erase(0, tail_.size() - half_);
  }
  bool Truncated() const { return total_ > head_.size() + tail_.size() || tail_.size() > half_; }
  std::string Take() {
    if (tail_.size() > half_) tail_.erase(0, tail_.size() - half_);
    if (!Truncated()) return head_ + tail_;
    return head_ + "\n[... output elided by cuda-agent ...]\n" + tail_;
  }

 private:
  size_t half_;
  size_t total_ = 0;
  std::string head_;
  std::string tail_;
};

void SetLimit(int resource, uint64_t value) {
  struct rlimit lim;
  lim.rlim_cur = value;
  lim.rlim_max = value;
  setrlimit(resource, &lim);
}

// FormatPid writes the decimal pid into `out` (no allocation: it runs after fork).
void FormatPid(pid_t pid, char* out, size_t* len) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  *len = n;
}

[[noreturn]] void ChildFail(int status_fd) {
  int e = errno;
  (void)!write(status_fd, &e, sizeof(e));
  _exit(127);
}

// ChildExec runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void ChildExec(const std::string& path, char* const* argv, char* const* envp,
                            const RunOptions& options, int out_fd, int err_fd, int status_fd) {
  setsid();
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  // Join the cgroups first (needs our privileges), then drop them.
  char pid_text[24];
  size_t pid_len = 0;
  FormatPid(getpid(), pid_text, &pid_len);
  for (const auto& file : options.join_cgroup_files) {
    int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid_text, pid_len) != static_cast<ssize_t>(pid_len))
      ChildFail(status_fd);
    close(fd);
  }
  if (options.run_as_uid >= 0 && geteuid() == 0) {
    gid_t gid =
        static_cast<gid_t>(options.run_as_gid >= 0 ? options.run_as_gid : options.run_as_uid);
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 ||
        setuid(static_cast<uid_t>(options.run_as_uid)) != 0) {
      ChildFail(status_fd);
    }
  }
  if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) ChildFail(status_fd);
  ApplyResourceLimits(options.limits);
  // Default signal dispositions for the child (the parent may ignore SIGPIPE).
  signal(SIGPIPE, SIG_DFL);
  execve(path.c_str(), argv, envp);
  ChildFail(status_fd);
}

}  // namespace

void ApplyResourceLimits(const ResourceLimits& l) {
  if (l.address_space_bytes) SetLimit(RLIMIT_AS, l.address_space_bytes);
  if (l.cpu_seconds) SetLimit(RLIMIT_CPU, l.cpu_seconds);
  if (l.open_files) SetLimit(RLIMIT_NOFILE, l.open_files);
  if (l.processes) SetLimit(RLIMIT_NPROC, l.processes);
  if (l.file_size_bytes) SetLimit(RLIMIT_FSIZE, l.file_size_bytes);
  SetLimit(RLIMIT_CORE, l.core_file_bytes);
}

namespace {

bool Allowed(const std::vector<std::string>& allow, const std::string& name) {
  if (allow.empty()) return true;
  for (const auto& entry : allow) {
    if (!entry.empty() && entry.back() == '*') {
      if (name.compare(0, entry.size() - 1, entry, 0, entry.size() - 1) == 0) return true;
    } else if (name == entry) {
      return true;
    }
  }
  return false;
}

}  // namespace

const std::vector<std::string>& JudgedEnvironment() {
  static const std::vector<std::string> names = {"PATH",
                                                 "HOME",
                                                 "USER",
                                                 "LOGNAME",
                                                 "TMPDIR",
                                                 "TZ",
                                                 "TERM",
                                                 "LANG",
                                                 "LANGUAGE",
                                                 "LC_*",
                                                 "LD_LIBRARY_PATH",
                                                 "LIBRARY_PATH",
                                                 "CPATH",
                                                 "C_INCLUDE_PATH",
                                                 "CPLUS_INCLUDE_PATH",
                                                 "CC",
                                                 "CXX",
                                                 "CUDAHOSTCXX",
                                                 "CUDA_*",
                                                 "NVCC_*",
                                                 "NVIDIA_*",
                                                 "PYTHONPATH",
                                                 "PYTHONHOME",
                                                 "PYTHONNOUSERSITE",
                                                 "VIRTUAL_ENV",
                                                 "CONDA_PREFIX",
                                                 "TORCH_*",
                                                 "PYTORCH_*",
                                                 "TORCHINDUCTOR_*",
                                                 "TRITON_*",
                                                 "OMP_*",
                                                 "MKL_*",
                                                 "KMP_*",
                                                 "OPENBLAS_*",
                                                 "CUDA_AGENT_*"};
  return names;
}

std::vector<std::string> BuildEnvironment(const RunOptions& options) {
  std::map<std::string, std::string> env;
  if (options.inherit_env) {
    for (char** e = environ; e && *e; ++e) {
      std::string kv(*e);
      size_t eq = kv.find('=');
      if (eq != std::string::npos && Allowed(options.env_allow, kv.substr(0, eq))) {
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    }
  }
  for (const auto& name : options.env_unset) env.erase(name);
  for (const auto& kv : options.env_set) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string SignalName(int signal_number) {
  switch (signal_number) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

std::string RunResult::Describe() const {
  if (timed_out) {
    std::ostringstream s;
    s << "timed out after " << static_cast<long>(wall_seconds + 0.5) << " s";
    return s.str();
  }
  // A SIGKILL that is not our watchdog's is almost always the kernel's out-of-memory killer.
  if (term_signal == SIGKILL) return "killed by SIGKILL (likely out of memory)";
  if (term_signal != 0) return "killed by " + SignalName(term_signal);
  return "exit status " + std::to_string(exit_code);
}

Result<std::string> FindExecutable(const std::string& name) {
  if (name.empty()) return InvalidArgument("empty command");
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return NotFound("not executable: " + name);
  }
  const std::string& path = HostValue(HostVar::kPath);
  std::string dirs = !path.empty() ? path : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
  }
  return NotFound("command not found on PATH: " + name);
}

Result<RunResult> RunProcess(const RunOptions& options) {
  if (options.argv.empty()) return InvalidArgument("RunProcess: empty argv");
  Result<std::string> exe = FindExecutable(options.argv[0]);
  if (!exe.ok()) return exe.status();

  std::vector<std::string> env = BuildEnvironment(options);
  std::vector<char*> argv_ptrs;
  for (const auto& a : options.argv) argv_ptrs.push_back(const_cast<char*>(a.c_str()));
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (const auto& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
  env_ptrs.push_back(nullptr);

  int out_pipe[2], err_pipe[2], status_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Internal("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Internal("pipe failed");
  }
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return Internal("pipe failed");
  }

  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd :
         {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], status_pipe[0], status_pipe[1]})
      close(fd);
    return Internal(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ChildExec(exe.value(), argv_ptrs.data(), env_ptrs.data(), options, out_pipe[1], err_pipe[1],
              status_pipe[1]);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(status_pipe[1]);

  int exec_errno = 0;
  ssize_t got = read(status_pipe[0], &exec_errno, sizeof(exec_errno));
  close(status_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    waitpid(pid, nullptr, 0);
    return FailedPrecondition("cannot start " + options.argv[0] + ": " + std::strerror(exec_errno));
  }

  CappedBuffer out_buf(options.max_output_bytes), err_buf(options.max_output_bytes);
  RunResult result;
  int fds[2] = {out_pipe[0], err_pipe[0]};
  bool open_fd[2] = {true, true};
  bool exited = false;
  int wait_status = 0;
  auto deadline = start + std::chrono::duration<double>(options.timeout_seconds);
  std::chrono::steady_clock::time_point exit_time;

  while (true) {
    if (!exited) {
      pid_t w = waitpid(pid, &wait_status, WNOHANG);
      if (w == pid) {
        exited = true;
        exit_time = std::chrono::steady_clock::now();
        kill(-pid, SIGKILL);  // stray members of the group die with the leader
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (!exited && options.timeout_seconds > 0 && now >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &wait_status, 0);
      exited = true;
      exit_time = now;
    }
    if (!open_fd[0] && !open_fd[1]) {
      if (exited) break;
      waitpid(pid, &wait_status, 0);
      exited = true;
      exit_time = std::chrono::steady_clock::now();
      kill(-pid, SIGKILL);
      break;
    }
    // After the child is gone, drain what is buffered but do not wait on descendants for long.
    if (exited && now - exit_time > std::chrono::milliseconds(500)) break;

    struct pollfd pfds[2];
    int n = 0;
    int map[2];
    for (int i = 0; i < 2; ++i) {
      if (!open_fd[i]) continue;
      pfds[n].fd = fds[i];
      pfds[n].events = POLLIN;
      pfds[n].revents = 0;
      map[n++] = i;
    }
    int timeout_ms = exited ? 50 : 20;
    if (poll(pfds, n, timeout_ms) < 0 && errno != EINTR) break;
    for (int k = 0; k < n; ++k) {
      if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char chunk[65536];
      ssize_t r = read(pfds[k].fd, chunk, sizeof(chunk));
      if (r > 0) {
        (map[k] == 0 ? out_buf : err_buf).Append(chunk, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        open_fd[map[k]] = false;
      }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);

  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.timed_out) {
    result.wall_seconds = options.timeout_seconds;
  } else if (WIFSIGNALED(wait_status)) {
    result.term_signal = WTERMSIG(wait_status);
  } else if (WIFEXITED(wait_status)) {
    result.exit_code = WEXITSTATUS(wait_status);
  }
  result.out_truncated = out_buf.Truncated();
  result.err_truncated = err_buf.Truncated();
  result.out = out_buf.Take();
  result.err = err_buf.Take();
  return result;
}

// SpawnDetached: only async-signal-safe calls between fork and exec (the judge may have threads).
Status SpawnDetached(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& log) {
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  Result<std::string> exe = FindExecutable(argv[0]);
  if (!exe.ok()) return exe.status();
  std::string path = exe.value();
  pid_t child = fork();
  if (child < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    int in = open("/dev/null", O_RDONLY);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in >= 0) dup2(in, 0);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    if (chdir("/") != 0) _exit(127);
    signal(SIGPIPE, SIG_DFL);
    execve(path.c_str(), args.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return OkStatus();
}

}  // namespace cuda_agent
