// serve_command.cc — `cuda-agent serve`: the environment service (docs/server.md). Opens the
// Environment over its state folder (reopening what a previous server left), puts the HTTP face on
// host:port, prints the URL, and serves until SIGTERM/SIGINT: then new work gets 503, running
// calls finish (up to --shutdown-grace), the store is checkpointed and the process exits 0.
// With --redis the judgements go to `cuda-agent worker` hosts through the Redis queue (RedisJudge)
// and /v1/health lists the workers; without it they run in this process (InProcessJudge).
#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/judge_flags.h"
#include "cli/options.h"
#include "common/device.h"
#include "common/host_environment.h"
#include "harness/client.h"
#include "judge/judge_service.h"
#include "queue/redis_judge.h"
#include "queue/worker.h"
#include "server/environment.h"
#include "server/http_api.h"
#include "server/http_server.h"
#include "server/mcp.h"

namespace cuda_agent {
namespace {

const std::vector<OptionSpec>& ServeSpecs() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> s = {
        {"host", true, "address to listen on (another than loopback needs --token)", "127.0.0.1"},
        {"port", true, "port to listen on (0: a free one, printed)", "8377"},
        {"token", true, "bearer token every route but /v1/health requires (empty: none)", ""},
        {"status-token", true,
         "read-only token that opens only the status page at / (a browser's login dialog: any "
         "user, this as password); needs --token",
         ""},
        {"state-dir", true, "sessions' folders and server.sqlite (default <cache>/serve)", ""},
        {"max-sessions", true, "sessions open at once; beyond: 429", "256"},
        {"queue-per-device", true,
         "judgements waiting per device beyond the running ones; beyond: 429", "8"},
        {"judge-workers", true,
         "judgements running at once per device (with --redis: default the live workers' "
         "consumers of the device)",
         "1"},
        {"redis", true,
         "judge on `cuda-agent worker` hosts through this Redis queue: redis://HOST[:PORT][/DB] "
         "(default: in this process)",
         ""},
        {"session-ttl", true, "seconds an idle session lives (then expired, its folder removed)",
         "3600"},
        {"turn-limit", true, "tool calls per session unless the session asks for fewer or more",
         "150"},
        {"max-body-bytes", true, "largest request body; beyond: 413", "16777216"},
        {"http-threads", true, "connections served at once (0: --max-sessions + 16)", "0"},
        {"shutdown-grace", true, "seconds SIGTERM waits for running calls and judgements", "60"},
        {"mcp-task", true,
         "task of MCP sessions at /mcp that name none in the URL (/mcp?task=REF); empty: each must",
         ""},
    };
    // The judge's flags set the defaults of every grade and evaluation (a session may pick its own
    // device and policy); the ones naming one judgement do not apply.
    for (const OptionSpec& spec : JudgeSpecs()) {
      if (spec.name != "task" && spec.name != "candidate" && spec.name != "json" &&
          spec.name != "out") {
        s.push_back(spec);
      }
    }
    return s;
  }();
  return specs;
}

// HiddenFromSessions: `dir` lies under a folder the tool sandbox replaces by an empty tmpfs (/tmp,
// the homes, the cache folders), so a session sees its own workspace (bound back) and no other.
bool HiddenFromSessions(const fs::path& dir, const fs::path& cache_dir) {
  std::vector<fs::path> hidden = {"/tmp", "/root", "/home", DefaultCacheDir()};
  if (const std::string& home = HostValue(HostVar::kHome); !home.empty()) hidden.push_back(home);
  if (!cache_dir.empty()) hidden.push_back(fs::absolute(cache_dir));
  const fs::path target = fs::absolute(dir).lexically_normal();
  for (const fs::path& h : hidden) {
    fs::path rel = target.lexically_relative(fs::absolute(h).lexically_normal());
    if (!rel.empty() && *rel.begin() != ".." && rel != ".") return true;
  }
  return false;
}

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

// WorkerWatch reads the workers' state from Redis (WorkerStates) every `every_s` on a thread of
// its own: /v1/health answers from the last reading without a round trip to Redis, and unless the
// judgements at once are fixed (--judge-workers), each device's follow its live consumers.
class WorkerWatch {
 public:
  explicit WorkerWatch(std::string url) : url_(std::move(url)) {}
  ~WorkerWatch() { Stop(); }
  WorkerWatch(const WorkerWatch&) = delete;
  WorkerWatch& operator=(const WorkerWatch&) = delete;

  // Read is the last reading: {"workers", "queues"} or {"error"}.
  Json Read() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }

  // Start reads once now (so the first health answer has the workers), then every `every_s`.
  void Start(Environment* environment, double every_s) {
    Refresh(environment);
    thread_ = std::thread([this, environment, every_s] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!stop_) {
        wake_.wait_for(lock, std::chrono::duration<double>(every_s));
        if (stop_) break;
        lock.unlock();
        Refresh(environment);
        lock.lock();
      }
    });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  // Refresh reads the state; `environment`, when given, gets each device's live consumers (at
  // least 1, so that a judgement submitted before any worker came waits in the stream for one).
  void Refresh(Environment* environment) {
    Result<Json> states = WorkerStates(url_);
    Json reading;
    if (states.ok()) {
      reading = {{"workers", states->value("workers", Json::array())},
                 {"queues", states->value("queues", Json::object())}};
    } else {
      reading = {{"workers", Json::array()}, {"error", states.status().message()}};
    }
    if (environment != nullptr && states.ok()) {
      for (Device device : {Device::kCuda, Device::kCpu}) {
        size_t consumers = 0;
        for (const Json& w : reading["workers"]) {
          if (w.value("device", "") != DeviceName(device) || w.value("state", "") != "running")
            continue;
          for (const Json& c : w.value("consumers", Json::array()))
            consumers += c.value("state", "") != "stopped" ? 1 : 0;
        }
        environment->SetJudgeWorkers(DeviceName(device), consumers);
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    last_ = std::move(reading);
  }

  const std::string url_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  Json last_ = {{"workers", Json::array()}};
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

int ServeCommand(const Args& args) {
  const auto& specs = ServeSpecs();
  Result<ParsedArgs> a = ParseArgs(specs, args);
  if (!a.ok()) return UsageError("serve", a.status().message(), specs);
  if (!a->positional().empty()) {
    return UsageError("serve", "unexpected argument '" + a->positional()[0] + "'", specs);
  }
  Result<JudgeOptions> judge_options = OptionsFromArgs(a.value());
  if (!judge_options.ok()) return UsageError("serve", judge_options.status().message(), specs);
  std::vector<int> counts;
  for (const char* name : {"port", "max-sessions", "queue-per-device", "judge-workers",
                           "turn-limit", "http-threads"}) {
    Result<int> v = ParseIntFlag(a.value(), name);
    if (!v.ok()) return UsageError("serve", v.status().message(), specs);
    if (v.value() < 0)
      return UsageError("serve", std::string("--") + name + " must be >= 0", specs);
    counts.push_back(v.value());
  }
  const int port = counts[0];
  if (port > 65535) return UsageError("serve", "--port must be at most 65535", specs);
  if (counts[1] < 1 || counts[3] < 1 || counts[4] < 1) {
    return UsageError("serve", "--max-sessions, --judge-workers and --turn-limit must be >= 1",
                      specs);
  }
  Result<double> ttl = ParseDoubleFlag(a.value(), "session-ttl");
  Result<double> grace = ParseDoubleFlag(a.value(), "shutdown-grace", true);
  Result<double> max_body = ParseDoubleFlag(a.value(), "max-body-bytes");
  for (const Status& s : {ttl.status(), grace.status(), max_body.status()}) {
    if (!s.ok()) return UsageError("serve", s.message(), specs);
  }
  if (max_body.value() < 1024)
    return UsageError("serve", "--max-body-bytes must be >= 1024", specs);
  const std::string host = a->Get("host");
  const std::string token = a->Get("token");
  if (token.empty() && !IsLoopback(host)) {
    return UsageError("serve",
                      "listening on " + host + " (not loopback) needs --token or CUDA_AGENT_TOKEN",
                      specs);
  }
  const std::string status_token = a->Get("status-token");
  if (!status_token.empty() && token.empty()) {
    return UsageError("serve",
                      "--status-token needs --token (without a token every route, the status "
                      "page included, is open)",
                      specs);
  }
  if (!status_token.empty() && status_token == token) {
    return UsageError(
        "serve", "--status-token must differ from --token (it opens only the status page)", specs);
  }

  Result<HarnessEnv> env = HarnessEnv::Discover();
  if (!env.ok()) {
    std::cerr << "cuda-agent serve: " << env.status().message() << "\n";
    return kExitInternal;
  }
  // The judge lives as long as the process: jobs still judging after the grace period use it.
  const std::string redis_url = a->Get("redis");
  JudgeService* judge_service = nullptr;
  // The workers' state, read in the background (--redis only); it lives as long as the process
  // too, since the environment's health calls it.
  WorkerWatch* watch = nullptr;
  if (!redis_url.empty()) {
    if (Result<RedisUrl> parsed = ParseRedisUrl(redis_url); !parsed.ok())
      return UsageError("serve", "--redis: " + parsed.status().message(), specs);
    Result<std::unique_ptr<RedisJudge>> remote = RedisJudge::Connect({.url = redis_url});
    if (!remote.ok()) {
      std::cerr << "cuda-agent serve: --redis: cannot use the judge queue: "
                << remote.status().message() << "\n";
      return kExitInternal;
    }
    judge_service = remote.value().release();
    watch = new WorkerWatch(redis_url);
  } else {
    judge_service = new InProcessJudge(env.value());
  }
  JudgeService& judge = *judge_service;
  EnvironmentOptions options;
  options.state_dir =
      a->Get("state-dir").empty() ? DefaultCacheDir() / "serve" : fs::path(a->Get("state-dir"));
  if (!HiddenFromSessions(options.state_dir, judge_options->cache_dir)) {
    return UsageError("serve",
                      "--state-dir " + options.state_dir.string() +
                          " would be visible inside every session's sandbox (sessions could read "
                          "each other's workspaces): put it under /tmp, a home folder or the cache "
                          "folder",
                      specs);
  }
  options.judge = judge_options.value();
  options.binary = ExecutablePath();
  options.env = env.value();
  options.max_sessions = static_cast<size_t>(counts[1]);
  options.queue_per_device = static_cast<size_t>(counts[2]);
  options.judge_workers = static_cast<size_t>(counts[3]);
  options.default_ttl_s = ttl.value();
  options.default_turn_limit = counts[4];
  options.version = CUDA_AGENT_VERSION;
  if (watch != nullptr) options.workers = [watch] { return watch->Read(); };

  // SIGTERM and SIGINT are taken by sigwait below: blocked here, before any thread starts, so that
  // every thread inherits the mask and none of them is interrupted by a signal handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Result<std::unique_ptr<Environment>> environment = Environment::Open(options, judge);
  if (!environment.ok()) {
    std::cerr << "cuda-agent serve: " << environment.status().message() << "\n";
    return kExitInternal;
  }
  if (watch != nullptr) {
    // Judgements at once per device: fixed by --judge-workers, else the live consumers.
    watch->Start(a->Has("judge-workers") ? nullptr : environment.value().get(), 2.0);
  }
  // MCP at /mcp (server/mcp_http.h). Like the judge it lives as long as the process: its sessions'
  // Environment sessions are left to the Environment's shutdown.
  McpServer* mcp = new McpServer(*environment.value(), {.task = a->Get("mcp-task"),
                                                        .device = a->Get("device"),
                                                        .policy = a->Get("policy"),
                                                        .server_version = options.version});
  HttpApi api(*environment.value(), {.token = token,
                                     .status_token = status_token,
                                     .max_body_bytes = static_cast<size_t>(max_body.value()),
                                     .version = options.version,
                                     .mcp = mcp});
  HttpServerOptions http;
  http.host = host;
  http.port = port;
  http.threads = counts[5] > 0 ? static_cast<size_t>(counts[5]) : options.max_sessions + 16;
  http.max_body_bytes = static_cast<size_t>(max_body.value());
  Result<std::unique_ptr<HttpServer>> started =
      StartHttpServer(http, [&api](const HttpRequest& request) { return api.Handle(request); });
  if (!started.ok()) {
    std::cerr << "cuda-agent serve: " << started.status().message() << "\n";
    environment.value()->Shutdown(0);
    if (watch != nullptr) watch->Stop();
    return kExitInternal;
  }
  std::unique_ptr<HttpServer> server = std::move(started).value();
  const std::string url_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const std::string url = "http://" + url_host + ":" + std::to_string(server->port());
  std::thread serving([&server] { server->Run(); });
  std::cout << "cuda-agent serve: listening on " << url << " (state " << options.state_dir.string()
            << ", judge " << judge.Describe() << (token.empty() ? ", no token" : ", bearer token")
            << (status_token.empty() ? "" : ", status token") << ")" << std::endl;

  int received = 0;
  sigwait(&stop_signals, &received);
  std::cerr << "cuda-agent serve: " << (received == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": refusing new work, finishing running calls (up to " << grace.value() << " s)"
            << std::endl;
  environment.value()->Shutdown(grace.value());
  server->Stop();
  if (watch != nullptr) watch->Stop();
  serving.join();
  // Jobs still judging past the grace period hold the environment: it is left to the process's
  // exit rather than destroyed under them (their records say `running`, then `interrupted`).
  (void)environment.value().release();
  std::cerr << "cuda-agent serve: stopped" << std::endl;
  return 0;
}

}  // namespace cuda_agent
