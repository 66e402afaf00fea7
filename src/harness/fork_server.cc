// fork_server.cc — starting, finding and talking to the harness fork server.
#include "harness/fork_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/hash.h"
#include "common/host_environment.h"
#include "common/log.h"
#include "harness/client.h"

namespace cuda_agent {

using Clock = std::chrono::steady_clock;

// ServerConnection is one socket to the server, closed when it goes away.
class ServerConnection {
 public:
  explicit ServerConnection(int fd) : fd_(fd) {}
  ServerConnection(ServerConnection&& o) noexcept : fd_(o.fd_), buffer_(std::move(o.buffer_)) {
    o.fd_ = -1;
  }
  ServerConnection(const ServerConnection&) = delete;
  ~ServerConnection() {
    if (fd_ >= 0) close(fd_);
  }

  static Result<ServerConnection> Open(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path))
      return InvalidArgument("socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Internal(std::string("socket: ") + std::strerror(errno));
    ServerConnection c(fd);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return FailedPrecondition("connect " + path + ": " + std::strerror(errno));
    }
    return c;
  }

  Status Send(const Json& message) {
    std::string line = message.dump() + "\n";
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = send(fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Internal(std::string("fork server: send: ") + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    return OkStatus();
  }

  // Receive returns the next JSON line, DeadlineExceeded when none came before `deadline`.
  Result<Json> Receive(Clock::time_point deadline) {
    for (;;) {
      size_t eol = buffer_.find('\n');
      if (eol != std::string::npos) {
        std::string line = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 1);
        return ParseJson(line, "fork server message");
      }
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return DeadlineExceeded("no answer from the fork server");
      pollfd p{fd_, POLLIN, 0};
      int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (ready < 0 && errno != EINTR)
        return Internal(std::string("poll: ") + std::strerror(errno));
      if (ready <= 0) continue;
      char chunk[4096];
      ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Internal("the fork server closed the connection");
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

namespace {

Result<Json> Ping(const std::string& socket, double timeout_s) {
  Result<ServerConnection> c = ServerConnection::Open(socket);
  if (!c.ok()) return c.status();
  if (Status s = c->Send({{"op", "ping"}}); !s.ok()) return s;
  Result<Json> pong =
      c->Receive(Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_s * 1000)));
  if (!pong.ok()) return pong.status();
  if (pong->value("event", "") != "pong")
    return Internal("fork server: unexpected answer " + pong->dump());
  return pong;
}

// Fingerprint: what makes a running server the right one — the user, the interpreter, the harness
// sources and the jail library (a changed file starts a new server; the old one idles out).
std::string Fingerprint(const HarnessEnv& env) {
  Sha256 h;
  h.Update(std::to_string(geteuid()) + "|" + env.python + "|" + env.home.string() + "|" +
           JailLibraryPath());
  std::vector<fs::path> files = ListFilesRecursive(env.home / "python" / "cuda_agent_harness");
  std::string jail = JailLibraryPath();
  if (!jail.empty()) files.push_back(jail);
  for (const auto& rel : files) {
    fs::path p = rel.is_absolute() ? rel : env.home / "python" / "cuda_agent_harness" / rel;
    const std::string stamp = FileStamp(p);
    if (stamp.empty()) continue;
    h.Update(rel.string() + ":" + stamp + ";");
  }
  return h.HexDigest().substr(0, 16);
}

std::string ReadCapped(const std::string& path, size_t cap, bool* truncated) {
  Result<std::string> text = ReadFile(path);
  *truncated = false;
  if (!text.ok()) return "";
  std::string& t = text.value();
  if (t.size() <= cap) return t;
  *truncated = true;
  size_t half = cap / 2;
  return t.substr(0, half) + "\n[... output elided by cuda-agent ...]\n" +
         t.substr(t.size() - half);
}

// FileLock holds an exclusive flock on a file for its lifetime.
class FileLock {
 public:
  explicit FileLock(const std::string& path)
      : fd_(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string JailLibraryPath() {
  fs::path exe = ExecutablePath();
  if (exe.empty()) return "";
  for (const fs::path& p : {exe.parent_path() / "libcuda_agent_jail.so",
                            exe.parent_path().parent_path() / "lib" / "libcuda_agent_jail.so"}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

std::string ForkServer::SocketFor(const HarnessEnv& env) {
  return "/tmp/cuda-agent-" + std::to_string(geteuid()) + "/forkserver-" + Fingerprint(env) +
         ".sock";
}

Result<ForkServer> ForkServer::Ensure(const HarnessEnv& env, const ForkServerOptions& options) {
  ForkServer server;
  server.socket_ = SocketFor(env);
  auto adopt = [&](const Json& pong) {
    server.jail_ =
        pong.contains("jail") && pong["jail"].is_string() ? pong["jail"].get<std::string>() : "";
    server.cuda_fork_ = pong.value("cuda_fork", std::string());
    return server;
  };
  if (Result<Json> pong = Ping(server.socket_, 30); pong.ok()) return adopt(pong.value());
  fs::path dir = fs::path(server.socket_).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Private: the socket runs code as this user (jobs never see /tmp of the host).
  if (chmod(dir.c_str(), 0700) != 0 || ec) {
    return FailedPrecondition("cannot prepare " + dir.string() + " for the fork server");
  }
  FileLock lock(server.socket_ + ".lock");
  if (Result<Json> pong = Ping(server.socket_, 30); pong.ok()) return adopt(pong.value());
  fs::remove(server.socket_, ec);  // a stale socket of a server that died
  std::vector<std::string> argv = {env.python,
                                   "-m",
                                   "cuda_agent_harness.forkserver",
                                   "--socket",
                                   server.socket_,
                                   "--idle-timeout",
                                   std::to_string(options.idle_seconds)};
  std::string jail = JailLibraryPath();
  if (!jail.empty()) argv.insert(argv.end(), {"--jail-library", jail});
  RunOptions env_options;
  std::string pythonpath = (env.home / "python").string();
  if (const std::string& old = HostValue(HostVar::kPythonPath); !old.empty())
    pythonpath += ":" + old;
  env_options.env_set = {"PYTHONPATH=" + pythonpath, "PYTHONDONTWRITEBYTECODE=1",
                         "PYTHONUNBUFFERED=1", "PYTHONHASHSEED=0"};
  // A forked child's /proc/self/environ shows the server's own start-up environment, whatever the
  // child's os.environ says: the server must not start with anything judged code may not read.
  env_options.env_allow = JudgedEnvironment();
  std::string log = server.socket_.substr(0, server.socket_.size() - 5) + ".log";
  if (Status s = SpawnDetached(argv, BuildEnvironment(env_options), log); !s.ok()) {
    return FailedPrecondition("cannot start the fork server: " + s.message());
  }
  auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int>(options.start_timeout_s * 1000));
  while (Clock::now() < deadline) {
    if (Result<Json> pong = Ping(server.socket_, 30); pong.ok()) return adopt(pong.value());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Result<std::string> text = ReadFile(log);
    if (text.ok() && (text->find("Traceback") != std::string::npos ||
                      text->find("cannot listen") != std::string::npos)) {
      return FailedPrecondition("the fork server failed to start: " + text->substr(0, 2000));
    }
  }
  return FailedPrecondition("the fork server did not start within " +
                            std::to_string(static_cast<int>(options.start_timeout_s)) +
                            " s (log: " + log + ")");
}

namespace {

// RunRequest: the "run" request for `job`.
Json RunRequest(const ForkServerJob& job) {
  Json env = Json::object();
  for (const auto& kv : job.env) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return {{"op", "run"},
          {"job", job.job},
          {"spec_path", job.spec_path},
          {"cwd", job.cwd},
          {"env", env},
          {"stdout_path", job.stdout_path},
          {"stderr_path", job.stderr_path},
          {"jail", job.jail ? JailSpecToJson(*job.jail) : Json()}};
}

// AwaitEnd waits on `conn` for the "ended" of the job `pid` (killing it at `deadline`) and reads
// its output files. With `released`, a "released" answer (ClaimedJob::SendRelease) ends the wait
// too and sets it; a declined release kills the job.
Result<RunResult> AwaitEnd(ServerConnection& conn, pid_t pid, const ForkServerJob& job,
                           Clock::time_point start, Clock::time_point deadline,
                           bool* released = nullptr) {
  RunResult result;
  Result<Json> ended = conn.Receive(deadline);
  while (released && ended.ok() && ended->value("event", "") != "ended") {
    if (ended->value("event", "") == "released") {
      *released = true;
      return result;
    }
    if (pid > 0) kill(pid, SIGKILL);  // declined: nobody else may have it
    ended = conn.Receive(deadline);
  }
  if (!ended.ok() && ended.status().code() == StatusCode::kDeadlineExceeded) {
    result.timed_out = true;
    if (pid > 0) kill(pid, SIGKILL);  // its init dies with it, and the job's whole namespace
    ended = conn.Receive(Clock::now() + std::chrono::seconds(30));
  }
  if (!ended.ok()) return Internal("fork server: " + ended.status().message());
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::string jail =
      ended->value("jail", Json()).is_string() ? ended->value("jail", std::string()) : "";
  if (job.jail && jail != "ok" && !result.timed_out) {
    return FailedPrecondition("the fork server could not contain the job: " +
                              (jail.empty() ? std::string("no answer from the jail") : jail));
  }
  const Json& code = ended.value()["exit_code"];
  const Json& sig = ended.value()["signal"];
  if (sig.is_number_integer()) result.term_signal = sig.get<int>();
  if (code.is_number_integer()) result.exit_code = code.get<int>();
  result.out = ReadCapped(job.stdout_path, job.max_output_bytes, &result.out_truncated);
  result.err = ReadCapped(job.stderr_path, job.max_output_bytes, &result.err_truncated);
  return result;
}

Clock::time_point DeadlineAfter(Clock::time_point start, double timeout_seconds) {
  return timeout_seconds > 0
             ? start + std::chrono::milliseconds(static_cast<long>(timeout_seconds * 1000))
             : Clock::time_point::max();
}

}  // namespace

Result<RunResult> ForkServer::Run(const ForkServerJob& job, double timeout_seconds) const {
  auto start = Clock::now();
  Result<ServerConnection> conn = ServerConnection::Open(socket_);
  if (!conn.ok()) return conn.status();
  if (Status s = conn->Send(RunRequest(job)); !s.ok()) return s;
  Result<Json> started = conn->Receive(Clock::now() + std::chrono::seconds(60));
  if (!started.ok()) return started.status();
  if (started->value("event", "") != "started") {
    return Internal("fork server refused the job: " + started->value("message", started->dump()));
  }
  pid_t pid = started->value("pid", 0);
  if (job.started_pid) job.started_pid->store(pid);
  return AwaitEnd(conn.value(), pid, job, start, DeadlineAfter(start, timeout_seconds));
}

Result<bool> ForkServer::Offer(const ForkServerJob& job, const StandbyOffer& offer) const {
  Result<ServerConnection> conn = ServerConnection::Open(socket_);
  if (!conn.ok()) return conn.status();
  Json request = RunRequest(job);
  request["standby"] = {{"key", offer.key},
                        {"max_waiting", offer.max_waiting},
                        {"cleanup", offer.cleanup},
                        {"record", offer.record}};
  if (offer.idle_s > 0) request["standby"]["idle_s"] = offer.idle_s;
  if (!offer.group.empty()) {
    request["standby"]["group"] = offer.group;
    request["standby"]["group_max"] = offer.group_max;
  }
  if (Status s = conn->Send(request); !s.ok()) return s;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  Result<Json> first = conn->Receive(deadline);
  if (!first.ok()) return first.status();
  std::string event = first->value("event", "");
  if (event == "declined") return false;
  if (event != "started") {
    return Internal("fork server refused the standby: " + first->value("message", first->dump()));
  }
  Result<Json> waiting = conn->Receive(deadline);
  if (!waiting.ok()) return waiting.status();
  if (waiting->value("event", "") != "waiting")
    return Internal("fork server: unexpected answer to a standby: " + waiting->dump());
  return true;
}

Result<std::optional<ClaimedJob>> ForkServer::Claim(const std::string& key) const {
  Result<ServerConnection> conn = ServerConnection::Open(socket_);
  if (!conn.ok()) return conn.status();
  if (Status s = conn->Send({{"op", "claim"}, {"key", key}}); !s.ok()) return s;
  Result<Json> answer = conn->Receive(Clock::now() + std::chrono::seconds(60));
  if (!answer.ok()) return answer.status();
  std::string event = answer->value("event", "");
  if (event == "none") return std::optional<ClaimedJob>();
  if (event != "claimed")
    return Internal("fork server: unexpected answer to a claim: " + answer->dump());
  return std::optional<ClaimedJob>(ClaimedJob(
      std::make_unique<ServerConnection>(std::move(conn).value()), answer->value("pid", 0),
      answer->value("waited_seconds", 0.0), answer->value("record", Json::object())));
}

ClaimedJob::ClaimedJob(std::unique_ptr<ServerConnection> conn, pid_t pid, double waited_seconds,
                       Json record)
    : conn_(std::move(conn)),
      pid_(pid),
      waited_seconds_(waited_seconds),
      record_(std::move(record)) {}
ClaimedJob::ClaimedJob(ClaimedJob&&) noexcept = default;
ClaimedJob::~ClaimedJob() = default;

void ClaimedJob::Abandon() { conn_.reset(); }

Result<RunResult> ClaimedJob::Wait(const ForkServerJob& job, double timeout_seconds) {
  if (!conn_) return Internal("the claimed job was waited for already");
  auto start = Clock::now();
  if (job.started_pid) job.started_pid->store(pid_);
  Result<RunResult> out = AwaitEnd(*conn_, pid_, job, start, DeadlineAfter(start, timeout_seconds));
  conn_.reset();
  return out;
}

Result<RunResult> ClaimedJob::WaitOrReleased(const ForkServerJob& job, double timeout_seconds,
                                             bool* released) {
  if (!conn_) return Internal("the claimed job was waited for already");
  *released = false;
  auto start = Clock::now();
  if (job.started_pid) job.started_pid->store(pid_);
  return AwaitEnd(*conn_, pid_, job, start, DeadlineAfter(start, timeout_seconds), released);
}

Status ClaimedJob::SendRelease() {
  if (!conn_) return Internal("the claimed job was waited for already");
  return conn_->Send({{"op", "release"}});
}

}  // namespace cuda_agent
