// judge_gateway.cc — the Unix-socket judge gateway between the Bash sandbox and the judge
// (judge_gateway.h): the server thread, the request check, and the forwarding client.
#include "agent/judge_gateway.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>

#include "agent/tools.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "judge/judge_args.h"

namespace cuda_agent {
namespace {

constexpr size_t kMaxRequestBytes = 1 << 20;

bool SameOrUnder(const fs::path& path, const fs::path& root, bool allow_same) {
  if (path == root) return allow_same;
  fs::path rel = path.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

fs::path Real(const fs::path& path) {
  std::error_code ec;
  fs::path real = fs::weakly_canonical(path, ec);
  return ec ? path.lexically_normal() : real;
}

Status ReadAll(int fd, std::string* out, size_t cap) {
  char buffer[65536];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(std::string("read: ") + std::strerror(errno));
    if (n == 0) return OkStatus();
    out->append(buffer, static_cast<size_t>(n));
    if (out->size() > cap) return InvalidArgument("message too large");
  }
}

Status WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(std::string("write: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

Json Refusal(const std::string& why) {
  return Json{{"version", 1},
              {"exit_code", 2},
              {"stdout", ""},
              {"stderr", "cuda-agent (judge gateway): refused: " + why + "\n"}};
}

}  // namespace

Result<std::unique_ptr<JudgeGateway>> JudgeGateway::Start(JudgeGatewayConfig config) {
  std::error_code ec;
  fs::create_directories(config.socket_dir, ec);
  if (ec)
    return Internal("judge gateway: cannot create " + config.socket_dir.string() + ": " +
                    ec.message());
  auto gateway = std::make_unique<JudgeGateway>(std::move(config));
  gateway->socket_path_ = fs::absolute(gateway->config_.socket_dir / "judge.sock");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = gateway->socket_path_.string();
  if (path.size() >= sizeof(address.sun_path))
    return Internal("judge gateway: socket path too long: " + path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  fs::remove(gateway->socket_path_, ec);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("judge gateway: socket: ") + std::strerror(errno));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 16) != 0) {
    std::string why = std::strerror(errno);
    close(fd);
    return Internal("judge gateway: cannot listen on " + path + ": " + why);
  }
  // The sandboxed side may run as another uid (65534): it must be able to connect.
  chmod(path.c_str(), 0666);
  chmod(gateway->config_.socket_dir.c_str(), 0755);
  gateway->listen_fd_ = fd;
  JudgeGateway* raw = gateway.get();
  gateway->thread_ = std::thread([raw]() { raw->Serve(); });
  return gateway;
}

JudgeGateway::~JudgeGateway() { Stop(); }

void JudgeGateway::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    std::error_code ec;
    fs::remove(socket_path_, ec);
  }
}

void JudgeGateway::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    int ready = poll(&p, 1, 200);
    if (ready <= 0) continue;
    int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::string text;
    Json answer;
    if (Status s = ReadAll(client, &text, kMaxRequestBytes); !s.ok()) {
      answer = Refusal(s.message());
    } else {
      Result<Json> request = ParseJson(text, "gateway request");
      answer = request.ok() ? Handle(request.value()) : Refusal("malformed request");
    }
    (void)WriteAll(client, answer.dump(-1, ' ', false, Json::error_handler_t::replace));
    close(client);
  }
}

Result<std::vector<std::string>> JudgeGateway::Translate(const std::vector<std::string>& argv,
                                                         const std::string& cwd) const {
  if (argv.empty()) return InvalidArgument("empty command");
  const std::string& command = argv[0];
  if (command != "build" && command != "judge" && command != "profile") {
    return InvalidArgument("only `build`, `judge` and `profile` are served, not `" + command + "`");
  }
  const fs::path workspace = Real(config_.workspace);
  fs::path dir = Real(cwd.empty() ? workspace : fs::path(cwd));
  if (!SameOrUnder(dir, workspace, true))
    return InvalidArgument("the command must run inside the workspace");
  std::vector<std::string> allowed =
      command == "build" ? std::vector<std::string>{"candidate", "device", "out", "json", "policy"}
      : command == "profile"
          ? std::vector<std::string>{"task", "candidate", "device", "ncu", "json", "policy"}
          : std::vector<std::string>{"task", "candidate", "device", "until", "json", "policy"};
  const std::vector<std::string> switches = {"json", "ncu"};
  std::map<std::string, std::string> flags;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("--", 0) != 0) return InvalidArgument("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return InvalidArgument("flag --" + name + " is not served for `" + command + "`");
    }
    bool is_switch = std::find(switches.begin(), switches.end(), name) != switches.end();
    if (is_switch && has_value) return InvalidArgument("--" + name + " takes no value");
    if (!is_switch && !has_value) {
      if (i + 1 >= argv.size()) return InvalidArgument("--" + name + " needs a value");
      value = argv[++i];
    }
    flags[name] = value;
  }
  auto resolve = [&](const std::string& value) {
    return Real(fs::path(value).is_absolute() ? fs::path(value) : dir / value);
  };
  if (!flags.count("candidate") || resolve(flags["candidate"]) != workspace) {
    return InvalidArgument("--candidate must be this workspace");
  }
  const std::string device = DeviceName(config_.judge.device);
  const std::string& policy = config_.judge.policy.name;
  if (flags.count("device") && flags["device"] != device) {
    return InvalidArgument("this workspace's device is " + device);
  }
  if (flags.count("policy") && flags["policy"] != policy) {
    return InvalidArgument("this episode's precision policy is " + policy);
  }
  std::vector<std::string> out = {config_.binary.string(),
                                  command,
                                  "--candidate",
                                  workspace.string(),
                                  "--device",
                                  device,
                                  "--policy",
                                  policy};
  if (command == "build") {
    if (!flags.count("out")) return InvalidArgument("--out is required");
    fs::path library = resolve(flags["out"]);
    if (!SameOrUnder(library, workspace, false) ||
        IsProtectedPath(library.lexically_relative(workspace))) {
      return InvalidArgument("--out must be a file of the workspace outside its protected files");
    }
    out.insert(out.end(), {"--out", library.string()});
  } else if (command == "profile") {
    if (!flags.count("task") || resolve(flags["task"]) != workspace / "model.py") {
      return InvalidArgument("--task must be this workspace's model.py");
    }
    if (!flags.count("ncu")) return InvalidArgument("`profile` is served with --ncu only");
    out.insert(out.end(), {"--task", config_.task_spec, "--ncu"});
  } else {
    if (!flags.count("task") || resolve(flags["task"]) != workspace / "model.py") {
      return InvalidArgument("--task must be this workspace's model.py");
    }
    out.insert(out.end(), {"--task", config_.task_spec});
    std::string until = flags.count("until") ? flags["until"] : "profile";
    if (until != "build" && until != "verify" && until != "profile") {
      return InvalidArgument("--until expects build, verify or profile");
    }
    out.insert(out.end(), {"--until", until});
  }
  if (flags.count("json")) out.push_back("--json");
  std::vector<std::string> options = JudgeOptionArgs(config_.judge);
  out.insert(out.end(), options.begin(), options.end());
  return out;
}

Json JudgeGateway::Handle(const Json& request) {
  ++requests_;
  if (!request.is_object() || !request.contains("argv") || !request["argv"].is_array()) {
    return Refusal("malformed request");
  }
  std::vector<std::string> argv;
  for (const auto& a : request["argv"]) {
    if (!a.is_string()) return Refusal("malformed request");
    argv.push_back(a.get<std::string>());
  }
  std::string cwd = request.value("cwd", "");
  Result<std::vector<std::string>> translated = Translate(argv, cwd);
  if (!translated.ok()) return Refusal(translated.status().message());
  RunOptions run;
  run.argv = translated.value();
  run.env_unset = {kJudgeGatewayEnv};
  run.timeout_seconds = JudgementTimeLimit(config_.judge);
  run.max_output_bytes = 8 << 20;
  LogDebug("judge gateway: " + run.argv[1]);
  Result<RunResult> result = RunProcess(run);
  if (!result.ok()) {
    return Json{{"version", 1},
                {"exit_code", 4},
                {"stdout", ""},
                {"stderr", "cuda-agent (judge gateway): " + result.status().message() + "\n"}};
  }
  int code = result->Succeeded() ? 0 : result->exit_code > 0 ? result->exit_code : 4;
  std::string err = result->err;
  if (result->timed_out || result->term_signal != 0)
    err += "cuda-agent (judge gateway): the judge " + result->Describe() + "\n";
  // Remember the best in-loop verdict (judge --json answers carry the reward).
  if (argv[0] == "judge") {
    Result<Json> parsed = ParseJson(result->out, "judge output");
    if (parsed.ok() && parsed->is_object()) {
      GatewayVerdict verdict;
      auto until = std::find(argv.begin(), argv.end(), "--until");
      verdict.until = until != argv.end() && until + 1 != argv.end() ? *(until + 1) : "profile";
      if (parsed.value().contains("reward") && parsed.value()["reward"].is_number())
        verdict.reward = parsed.value()["reward"].get<double>();
      verdict.correct = parsed.value().value("correct", false);
      verdict.reason = parsed.value().value("reason", "");
      std::lock_guard<std::mutex> lock(mutex_);
      // A reward ranks first; a correct verification without one (--until verify) counts as 1.
      auto score = [](const GatewayVerdict& v) {
        return std::make_pair(v.reward.value_or(v.correct ? 1.0 : -1.0), v.reward ? 1 : 0);
      };
      if (!best_ || score(verdict) > score(*best_)) best_ = verdict;
    }
  }
  return Json{{"version", 1},
              {"exit_code", code},
              {"stdout", ValidUtf8(result->out)},
              {"stderr", ValidUtf8(err)}};
}

std::optional<GatewayVerdict> JudgeGateway::Best() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return best_;
}

int RunViaJudgeGateway(const std::string& socket_path, const std::string& command,
                       const std::vector<std::string>& args) {
  auto fail = [&](const std::string& why) {
    std::cerr << "cuda-agent: judge gateway at " << socket_path << " unreachable: " << why << "\n";
    return 4;
  };
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(address.sun_path)) return fail("socket path too long");
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(std::strerror(errno));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::string why = std::strerror(errno);
    close(fd);
    return fail(why);
  }
  Json argv = Json::array({command});
  for (const auto& a : args) argv.push_back(a);
  std::error_code ec;
  Json request = {{"version", 1}, {"argv", argv}, {"cwd", fs::current_path(ec).string()}};
  std::string answer_text;
  Status sent = WriteAll(fd, request.dump(-1, ' ', false, Json::error_handler_t::replace));
  shutdown(fd, SHUT_WR);
  Status got = sent.ok() ? ReadAll(fd, &answer_text, 64u << 20) : sent;
  close(fd);
  if (!got.ok()) return fail(got.message());
  Result<Json> answer = ParseJson(answer_text, "gateway answer");
  if (!answer.ok() || !answer->is_object()) return fail("malformed answer");
  std::cout << answer->value("stdout", "") << std::flush;
  std::cerr << answer->value("stderr", "") << std::flush;
  return answer->value("exit_code", 4);
}

}  // namespace cuda_agent
