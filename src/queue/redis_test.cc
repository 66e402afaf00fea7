// redis_test.cc — the client, RedisJudge and the worker against a real redis-server that each test
// starts on a free loopback port and stops. Judgements here are no-op jobs or a judging command
// that fails; real judgements are tests/queue/test_dist.py's.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "common/test_dir.h"
#include "queue/job.h"
#include "queue/redis_judge.h"
#include "queue/worker.h"

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// RedisServer runs redis-server on 127.0.0.1:port (no persistence) until it is destroyed.
class RedisServer {
 public:
  RedisServer() : port_(FreePort()) { Start(); }
  ~RedisServer() { Kill(); }
  std::string Url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }

  void Start() {
    pid_ = fork();
    if (pid_ == 0) {
      std::string port = std::to_string(port_);
      execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--logfile", "/dev/null",
             static_cast<char*>(nullptr));
      _exit(127);
    }
    RedisUrl url = ParseRedisUrl(Url()).value();
    for (int i = 0; i < 300; ++i) {
      if (RedisConnection::Connect(url, 1).ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "redis-server did not start (is it installed? scripts/setup.sh)";
  }
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

JudgeRequest NoopRequest(int n) {
  Task task;
  task.code =
      "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\n"
      "def get_init_inputs():\n    return []\n# " +
      std::to_string(n) + "\n";
  task.id = TaskIdForCode(task.code);
  task.name = "noop";
  JudgeOptions options;
  options.device = Device::kCpu;
  return {.task = task,
          .candidate = Candidate::FromFiles({{"model_new.py", "x = 1\n"}}).value(),
          .options = options,
          .workspace = {}};
}

// A worker on its own thread, stopped and joined when the test ends.
class WorkerThread {
 public:
  explicit WorkerThread(WorkerOptions o) : options_(std::move(o)) {
    thread_ = std::thread([this] { status_ = RunWorker(options_, stop_); });
  }
  ~WorkerThread() { (void)Stop(); }
  Status Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  WorkerOptions options_;
  std::atomic<bool> stop_{false};
  Status status_;
  std::thread thread_;
};

WorkerOptions CpuWorker(const std::string& url, const fs::path& dir) {
  WorkerOptions o;
  o.url = url;
  o.device = Device::kCpu;
  o.consumers = 2;
  o.name = "unit";
  o.visibility_s = 0.3;
  o.heartbeat_s = 0.1;
  o.judge_command = {"/bin/sh", "-c", "echo the judge broke >&2; exit 3", "sh"};
  o.work_dir = dir;
  return o;
}

TEST(RedisClientTest, CommandsRepliesAndAnUnreachableServerNamedAtOnce) {
  RedisServer server;
  RedisClient redis(ParseRedisUrl(server.Url()).value());
  ASSERT_TRUE(redis.Connect().ok());
  Result<RedisReply> set = redis.Call({"SET", "k", std::string("a\0b", 3)});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->kind, RedisReply::Kind::kStatus);
  Result<RedisReply> get = redis.Call({"GET", "k"});
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->str, std::string("a\0b", 3));  // binary-safe
  Result<RedisReply> wrong = redis.Call({"LPUSH", "k", "x"});
  ASSERT_TRUE(wrong.ok());  // a Redis error is a reply, not a lost connection
  EXPECT_TRUE(wrong->error());
  EXPECT_NE(wrong->str.find("WRONGTYPE"), std::string::npos);

  std::string nowhere = "redis://127.0.0.1:" + std::to_string(FreePort()) + "/0";
  auto t0 = Clock::now();
  RedisClient none(ParseRedisUrl(nowhere).value());
  Status s = none.Connect();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(nowhere), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("unreachable"), std::string::npos) << s.message();
  Result<std::unique_ptr<RedisJudge>> judge = RedisJudge::Connect({.url = nowhere});
  EXPECT_FALSE(judge.ok());
  EXPECT_FALSE(WorkerStates(nowhere).ok());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5);
}

TEST(RedisClientTest, ReconnectsWithBackoffWhenRedisComesBack) {
  RedisServer server;
  RedisClient redis(ParseRedisUrl(server.Url()).value());
  ASSERT_TRUE(redis.Call({"SET", "k", "1"}).ok());
  server.Kill();
  // Gone, with a deadline: an error after about the deadline, not a hang.
  auto t0 = Clock::now();
  EXPECT_FALSE(redis.Call({"GET", "k"}, Clock::now() + std::chrono::milliseconds(300)).ok());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 3);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    server.Start();
  });
  Result<RedisReply> r = redis.Call({"PING"}, Clock::now() + std::chrono::seconds(20));
  later.join();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->str, "PONG");
  EXPECT_EQ(redis.reconnects(), 1);
}

TEST(RedisQueueTest, NoopJobsGoThroughTheWorkerAndItsStateIsVisible) {
  RedisServer server;
  TestDir dir("dist_noop");
  WorkerThread worker(CpuWorker(server.Url(), dir.path()));
  Result<std::unique_ptr<RedisJudge>> judge =
      RedisJudge::Connect({.url = server.Url(), .noop_benchmark = true});
  ASSERT_TRUE(judge.ok()) << judge.status().message();
  for (int i = 0; i < 5; ++i) {
    JudgeResult r = judge.value()->Evaluate(NoopRequest(i));
    EXPECT_EQ(r.outcome, Outcome::kVerdict) << r.reason;
    EXPECT_EQ(r.error_kind, "noop") << r.reason;
    EXPECT_EQ(r.env["queue"]["worker"], "unit");
    EXPECT_EQ(r.env["queue"]["deliveries"], 1);
  }
  // The state hash is rewritten every heartbeat (0.1 s here): the fifth job shows within a few.
  long long done = 0;
  Result<Json> states = Json();
  for (int i = 0; i < 50 && done < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    states = WorkerStates(server.Url());
    ASSERT_TRUE(states.ok()) << states.status().message();
    ASSERT_EQ(states->at("workers").size(), 1u) << states->dump();
    done = 0;
    for (const Json& c : states->at("workers")[0]["consumers"])
      done += c["jobs_done"].get<long long>();
  }
  EXPECT_EQ(done, 5);
  const Json& w = states->at("workers")[0];
  EXPECT_EQ(w["name"], "unit");
  EXPECT_EQ(w["device"], "cpu");
  EXPECT_EQ(w["consumers"].size(), 2u);
  EXPECT_EQ(states->at("queues")["cpu"],
            Json({{"waiting", 0}, {"pending", 0}, {"dead_letter", 0}}));
  EXPECT_TRUE(worker.Stop().ok());
  Result<Json> after = WorkerStates(server.Url());
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->at("workers").empty()) << after->dump();  // a stopped worker leaves
}

TEST(RedisQueueTest, AFailingJudgementIsRetriedThenDeadLetteredAndItsWaiterToldWhy) {
  RedisServer server;
  TestDir dir("dist_fail");
  WorkerOptions o = CpuWorker(server.Url(), dir.path());
  o.max_deliveries = 2;
  WorkerThread worker(o);
  Result<std::unique_ptr<RedisJudge>> judge = RedisJudge::Connect({.url = server.Url()});
  ASSERT_TRUE(judge.ok());
  JudgeResult r = judge.value()->Evaluate(NoopRequest(1));
  EXPECT_EQ(r.outcome, Outcome::kInternalError);
  EXPECT_EQ(r.error_kind, "dead_letter");
  EXPECT_NE(r.reason.find("failed on each of 2 deliveries"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("exit status 3: the judge broke"), std::string::npos) << r.reason;
  Result<Json> letters = DeadLetters(server.Url(), Device::kCpu, 10);
  ASSERT_TRUE(letters.ok());
  ASSERT_EQ(letters->size(), 1u);
  EXPECT_EQ(letters.value()[0]["deliveries"], 2);
  EXPECT_EQ(letters.value()[0]["job_id"], r.env["queue"]["job_id"]);
}

TEST(RedisQueueTest, AJobWhoseResultIsStoredIsAcknowledgedNotJudgedAgain) {
  // A consumer that stored its result and died before XACK: whoever takes the entry over finds the
  // result (first writer wins) and only acknowledges it. The judging command here always fails, so
  // judging it again would show as a failure.
  RedisServer server;
  TestDir dir("dist_stored");
  RedisClient redis(ParseRedisUrl(server.Url()).value());
  JudgeJob job = MakeJob(NoopRequest(7)).value();
  JudgeResult first;
  first.reason = "the first writer";
  first.device = "cpu";
  Json stored = {{"result", first.ToJson()}, {"worker", "earlier"}};
  ASSERT_TRUE(redis.Call({"SET", QueueKeys::Result(job.id), stored.dump()}).ok());
  ASSERT_TRUE(redis
                  .Call({"XADD", QueueKeys::Stream(Device::kCpu), "*", "id", job.id, "job",
                         job.ToJson().dump()})
                  .ok());
  WorkerThread worker(CpuWorker(server.Url(), dir.path()));
  for (int i = 0; i < 100; ++i) {
    Result<RedisReply> len = redis.Call({"XLEN", QueueKeys::Stream(Device::kCpu)});
    if (len.ok() && len->integer == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Result<Json> states = WorkerStates(server.Url());
  ASSERT_TRUE(states.ok());
  EXPECT_EQ(states->at("queues")["cpu"],
            Json({{"waiting", 0}, {"pending", 0}, {"dead_letter", 0}}));
  Result<RedisReply> kept = redis.Call({"GET", QueueKeys::Result(job.id)});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(ParseJson(kept->str, "result").value()["worker"], "earlier");
  Result<std::unique_ptr<RedisJudge>> judge = RedisJudge::Connect({.url = server.Url()});
  JudgeResult r = judge.value()->Evaluate(NoopRequest(7));
  EXPECT_EQ(r.reason, "the first writer");
}

}  // namespace
}  // namespace cuda_agent
