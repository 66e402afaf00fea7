// worker.cc — the consumers of `cuda-agent worker`, their heartbeat, and WorkerStates.
#include "queue/worker.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/fs.h"
#include "common/subprocess.h"
#include "harness/client.h"
#include "queue/job.h"
#include "queue/redis_client.h"

namespace cuda_agent {
namespace {

using Clock = RedisClient::Clock;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", s);
  return buf;
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "host";
  return buf;
}

// Say prints one line of the worker's log to stderr (a service's log, at every log level).
void Say(const std::string& line) {
  static std::mutex mu;
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << stamp << " worker: " << line << "\n" << std::flush;
}

// One stream entry: its id, its fields, how often it was delivered.
struct Entry {
  std::string id;
  std::map<std::string, std::string> fields;
  long long deliveries = 1;
};

std::optional<Entry> EntryFromReply(const RedisReply& r) {
  if (!r.array() || r.elements.size() != 2) return std::nullopt;
  Entry e;
  e.id = r.elements[0].str;
  const RedisReply& kv = r.elements[1];
  if (kv.array()) {
    for (size_t i = 0; i + 1 < kv.elements.size(); i += 2)
      e.fields[kv.elements[i].str] = kv.elements[i + 1].str;
  }
  return e;
}

// What a consumer shows in the worker's state hash.
struct ConsumerState {
  std::string name;
  std::string gpu;
  std::string state = "starting";  // idle | judging | stopped | redis-unreachable
  std::string job_id;
  std::string entry_id;  // the stream entry in hand (renewed by the heartbeat)
  double since = 0;
  long long jobs_done = 0;
  long long jobs_failed = 0;
  long long dead_lettered = 0;

  Json ToJson() const {
    return {{"name", name},
            {"gpu", gpu},
            {"state", state},
            {"job_id", job_id},
            {"since", since},
            {"jobs_done", jobs_done},
            {"jobs_failed", jobs_failed},
            {"dead_lettered", dead_lettered}};
  }
};

class Worker {
 public:
  Worker(const WorkerOptions& options, const std::atomic<bool>& stop)
      : o_(options), stop_(stop), url_(ParseRedisUrl(options.url).value()) {}

  Status Run();

 private:
  void Consume(size_t index);
  void Heartbeat();
  Status EnsureGroup(RedisClient& redis);
  std::optional<Entry> Claim(RedisClient& redis, ConsumerState& me);
  std::optional<Entry> ReadNew(RedisClient& redis, ConsumerState& me);
  void Handle(RedisClient& redis, size_t index, Entry entry);
  // Judge runs the judgement in a child process; the stored-result JSON, or why it failed.
  Result<JudgeResult> Judge(const JudgeJob& job, const ConsumerState& me);
  bool Store(RedisClient& redis, const std::string& job_id, const JudgeResult& result, double ttl,
             const ConsumerState& me, long long deliveries);
  void Finish(RedisClient& redis, const Entry& entry);
  void DeadLetter(RedisClient& redis, size_t index, const Entry& entry, const std::string& reason);
  void SetState(size_t index, const std::string& state, const std::string& job_id = "",
                const std::string& entry_id = "");
  Clock::time_point StoreDeadline() const { return After(std::max(30.0, o_.visibility_s)); }
  // Bookkeeping: a command whose failure the queue survives (a lost XACK means one redelivery that
  // the result's SET NX absorbs; a lost notification, a submitter that reads the result after its
  // wait) — logged, never fatal.
  void Bookkeep(RedisClient& redis, const std::vector<std::string>& argv,
                Clock::time_point deadline);

  const WorkerOptions& o_;
  const std::atomic<bool>& stop_;
  RedisUrl url_;
  std::string stream_, dead_;
  std::mutex mu_;  // guards states_
  std::vector<ConsumerState> states_;
  double started_at_ = UnixNow();
};

Status Worker::Run() {
  stream_ = QueueKeys::Stream(o_.device);
  dead_ = QueueKeys::DeadLetter(o_.device);
  {
    RedisClient probe(url_);
    if (Status s = probe.Connect(); !s.ok()) return s;
    if (Status s = EnsureGroup(probe); !s.ok()) return s;
  }
  // CPU: --consumers consumers. CUDA: --consumers per GPU, so that one judgement's build and
  // verification overlap another's timing (the device lease keeps the timings apart).
  const int per_slot = std::max(1, o_.consumers);
  std::vector<std::string> slots = o_.gpus;
  if (o_.device == Device::kCpu || slots.empty()) slots.assign(1, "");
  for (const std::string& gpu : slots) {
    for (int k = 0; k < per_slot; ++k) {
      ConsumerState s;
      s.gpu = gpu;
      std::string index = std::to_string(gpu.empty() ? k : k + 1);
      s.name = o_.name + (gpu.empty() ? "/c" + index : "/gpu" + gpu + (k == 0 ? "" : "." + index));
      s.since = UnixNow();
      states_.push_back(s);
    }
  }
  Say(o_.name + ": " + std::to_string(states_.size()) + " consumer(s) on " + stream_ + " at " +
      url_.text + " (visibility " + Seconds(o_.visibility_s) + " s, dead letter after " +
      std::to_string(o_.max_deliveries) + " deliveries)");
  std::vector<std::thread> threads;
  for (size_t i = 0; i < states_.size(); ++i) threads.emplace_back([this, i] { Consume(i); });
  std::thread beat([this] { Heartbeat(); });
  for (std::thread& t : threads) t.join();
  beat.join();
  Say(o_.name + ": stopped");
  return OkStatus();
}

void Worker::Bookkeep(RedisClient& redis, const std::vector<std::string>& argv,
                      Clock::time_point deadline) {
  Result<RedisReply> r = redis.Call(argv, deadline);
  if (!r.ok()) {
    Say("redis " + argv.front() + " failed: " + r.status().message());
  } else if (r->error()) {
    Say("redis " + argv.front() + " answered: " + r->str);
  }
}

Status Worker::EnsureGroup(RedisClient& redis) {
  Result<RedisReply> r = redis.Call(
      {"XGROUP", "CREATE", stream_, QueueKeys::kGroup, "0", "MKSTREAM"}, After(o_.visibility_s));
  if (!r.ok()) return r.status();
  if (r->error() && r->str.rfind("BUSYGROUP", 0) != 0)
    return FailedPrecondition("Redis at " + url_.text + ": XGROUP CREATE " + stream_ +
                              " failed: " + r->str);
  return OkStatus();
}

void Worker::SetState(size_t index, const std::string& state, const std::string& job_id,
                      const std::string& entry_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ConsumerState& s = states_[index];
  s.state = state;
  s.job_id = job_id;
  s.entry_id = entry_id;
  s.since = UnixNow();
}

std::optional<Entry> Worker::Claim(RedisClient& redis, ConsumerState& me) {
  long long idle_ms = static_cast<long long>(o_.visibility_s * 1000);
  Result<RedisReply> r = redis.Call({"XAUTOCLAIM", stream_, QueueKeys::kGroup, me.name,
                                     std::to_string(idle_ms), "0-0", "COUNT", "1"});
  if (!r.ok()) return std::nullopt;
  if (r->error()) {
    if (r->str.rfind("NOGROUP", 0) == 0) {
      if (Status s = EnsureGroup(redis); !s.ok()) Say("consumer group: " + s.message());
    }
    return std::nullopt;
  }
  if (!r->array() || r->elements.size() < 2 || !r->elements[1].array()) return std::nullopt;
  for (const RedisReply& item : r->elements[1].elements) {
    std::optional<Entry> e = EntryFromReply(item);
    if (!e) continue;
    // How often it was delivered (XAUTOCLAIM counted this delivery).
    Result<RedisReply> p = redis.Call({"XPENDING", stream_, QueueKeys::kGroup, e->id, e->id, "1"});
    if (p.ok() && p->array() && !p->elements.empty() && p->elements[0].array() &&
        p->elements[0].elements.size() >= 4) {
      e->deliveries = p->elements[0].elements[3].integer;
    }
    Say(me.name + ": took over entry " + e->id + " (delivery " + std::to_string(e->deliveries) +
        ")");
    return e;
  }
  return std::nullopt;
}

std::optional<Entry> Worker::ReadNew(RedisClient& redis, ConsumerState& me) {
  Result<RedisReply> r = redis.Call({"XREADGROUP", "GROUP", QueueKeys::kGroup, me.name, "COUNT",
                                     "1", "BLOCK", "1000", "STREAMS", stream_, ">"},
                                    Clock::time_point::max(), 6);
  if (!r.ok() || r->nil()) return std::nullopt;
  if (r->error()) {
    if (r->str.rfind("NOGROUP", 0) == 0) {
      if (Status s = EnsureGroup(redis); !s.ok()) Say("consumer group: " + s.message());
    }
    return std::nullopt;
  }
  // [[stream, [[id, [k, v, ...]]]]]
  if (!r->array() || r->elements.empty() || !r->elements[0].array() ||
      r->elements[0].elements.size() < 2 || !r->elements[0].elements[1].array() ||
      r->elements[0].elements[1].elements.empty())
    return std::nullopt;
  return EntryFromReply(r->elements[0].elements[1].elements[0]);
}

void Worker::Consume(size_t index) {
  RedisClient redis(url_, &stop_);
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    name = states_[index].name;
  }
  SetState(index, "idle");
  while (!stop_.load()) {
    ConsumerState me;
    {
      std::lock_guard<std::mutex> lock(mu_);
      me = states_[index];
    }
    std::optional<Entry> e = Claim(redis, me);
    if (!e && !stop_.load()) e = ReadNew(redis, me);
    if (e) Handle(redis, index, std::move(*e));
  }
  // A consumer that leaves nothing pending is removed from the group (names are per process).
  Result<RedisReply> mine =
      redis.Call({"XPENDING", stream_, QueueKeys::kGroup, "-", "+", "1", name}, After(2));
  if (mine.ok() && mine->array() && mine->elements.empty())
    Bookkeep(redis, {"XGROUP", "DELCONSUMER", stream_, QueueKeys::kGroup, name}, After(2));
  SetState(index, "stopped");
}

void Worker::Handle(RedisClient& redis, size_t index, Entry entry) {
  ConsumerState me;
  {
    std::lock_guard<std::mutex> lock(mu_);
    me = states_[index];
  }
  auto field = entry.fields.find("job");
  if (field == entry.fields.end()) {
    std::string names;
    for (const auto& [k, v] : entry.fields) names += (names.empty() ? "" : ", ") + k;
    DeadLetter(redis, index, entry,
               "malformed job: the stream entry has no 'job' field (fields: " +
                   (names.empty() ? std::string("none") : names) + ")");
    return;
  }
  Result<Json> parsed = ParseJson(field->second, "job " + entry.id);
  if (!parsed.ok()) {
    DeadLetter(redis, index, entry, "malformed job: " + parsed.status().message());
    return;
  }
  Result<JudgeJob> job = JobFromJson(parsed.value());
  if (!job.ok()) {
    DeadLetter(redis, index, entry, "malformed job: " + job.status().message());
    return;
  }
  if (job->options.device != o_.device) {
    DeadLetter(
        redis, index, entry,
        std::string("malformed job: a ") + DeviceName(job->options.device) + " job on " + stream_);
    return;
  }
  if (entry.fields["id"] != job->id) {
    DeadLetter(redis, index, entry,
               "malformed job: the entry's id '" + entry.fields["id"] + "' is not the job's (" +
                   job->id + ")");
    return;
  }
  // A job taken over from a consumer that stored its result but died before XACK.
  Result<RedisReply> have = redis.Call({"EXISTS", QueueKeys::Result(job->id)}, StoreDeadline());
  if (have.ok() && have->integer == 1) {
    Finish(redis, entry);
    return;
  }
  const std::string attempts = QueueKeys::Attempts(job->id);
  if (entry.deliveries > o_.max_deliveries) {
    std::string last =
        "none recorded (the consumer holding it stopped: killed, or cut off "
        "from Redis)";
    Result<RedisReply> got = redis.Call({"HGET", attempts, "last_error"}, StoreDeadline());
    if (got.ok() && got->kind == RedisReply::Kind::kString) last = got->str;
    DeadLetter(redis, index, entry,
               "delivered " + std::to_string(entry.deliveries) + " times (limit " +
                   std::to_string(o_.max_deliveries) + ") without a result; last error: " + last);
    return;
  }
  Bookkeep(redis,
           {"HSET", attempts, "consumer", me.name, "delivery", std::to_string(entry.deliveries),
            "started_at", Seconds(UnixNow())},
           StoreDeadline());
  Bookkeep(redis, {"EXPIRE", attempts, std::to_string(static_cast<long long>(o_.result_ttl_s))},
           StoreDeadline());
  SetState(index, "judging", job->id, entry.id);
  auto t0 = Clock::now();
  Result<JudgeResult> result =
      job->noop ? Result<JudgeResult>(NoopResult(o_.device)) : Judge(job.value(), me);
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  SetState(index, "storing", job->id, entry.id);
  if (result.ok() && result->outcome == Outcome::kInternalError)
    result = Status(StatusCode::kInternal, "internal error: " + result->reason);
  if (result.ok()) {
    if (Store(redis, job->id, result.value(), job->noop ? o_.failed_ttl_s : o_.result_ttl_s, me,
              entry.deliveries)) {
      Finish(redis, entry);
      std::lock_guard<std::mutex> lock(mu_);
      ++states_[index].jobs_done;
    }
    if (!job->noop) {
      const std::string stages = result->StageSummary();
      Say(me.name + ": job " + job->id + " (" + job->task.name + ") judged in " + Seconds(took) +
          " s" + (stages.empty() ? "" : " [" + stages + "]") + ": " + result->reason);
    }
  } else {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++states_[index].jobs_failed;
    }
    std::string why = result.status().message();
    Say(me.name + ": job " + job->id + " failed on delivery " + std::to_string(entry.deliveries) +
        ": " + why);
    Bookkeep(redis, {"HSET", attempts, "last_error", why}, StoreDeadline());
    if (entry.deliveries >= o_.max_deliveries) {
      DeadLetter(redis, index, entry,
                 "failed on each of " + std::to_string(entry.deliveries) +
                     " deliveries; last error: " + why);
    }
    // Otherwise it stays pending, unacknowledged: after the visibility timeout a consumer (maybe
    // on another host) takes it over with XAUTOCLAIM.
  }
  SetState(index, "idle");
}

Result<JudgeResult> Worker::Judge(const JudgeJob& job, const ConsumerState& me) {
  std::error_code ec;
  fs::create_directories(o_.work_dir, ec);
  std::string stem = job.id + "-" + std::to_string(getpid()) + "-" +
                     std::to_string(std::hash<std::string>{}(me.name) % 100000);
  fs::path job_file = o_.work_dir / (stem + ".job.json");
  fs::path out_file = o_.work_dir / (stem + ".result.json");
  if (Status s = WriteJsonFile(job_file, job.ToJson()); !s.ok()) return s;
  fs::remove(out_file, ec);
  RunOptions run;
  run.argv = o_.judge_command;
  for (const char* a : {"--job", job_file.c_str(), "--out", out_file.c_str()})
    run.argv.push_back(a);
  run.timeout_seconds = o_.job_timeout_s;
  run.limits.core_file_bytes = 0;
  if (!me.gpu.empty()) run.env_set.push_back("CUDA_VISIBLE_DEVICES=" + me.gpu);
  Result<RunResult> ran = RunProcess(run);
  fs::remove(job_file, ec);
  if (!ran.ok()) return ran.status();
  if (!ran->Succeeded()) {
    std::string tail = ran->err.size() > 400 ? ran->err.substr(ran->err.size() - 400) : ran->err;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    fs::remove(out_file, ec);
    return Internal("the judging process " + ran->Describe() +
                    (tail.empty() ? std::string() : ": " + tail));
  }
  Result<Json> out = ReadJsonFile(out_file);
  fs::remove(out_file, ec);
  if (!out.ok()) return out.status();
  return JudgeResultFromJson(out->value("result", Json()));
}

bool Worker::Store(RedisClient& redis, const std::string& job_id, const JudgeResult& result,
                   double ttl, const ConsumerState& me, long long deliveries) {
  Json stored = {{"version", kJobVersion},   {"job_id", job_id},         {"worker", o_.name},
                 {"consumer", me.name},      {"deliveries", deliveries}, {"stored_at", UnixNow()},
                 {"result", result.ToJson()}};
  std::string ttl_s = std::to_string(std::max(1LL, static_cast<long long>(ttl)));
  // First writer wins: a job finished twice (taken over from a slow consumer) keeps one result.
  Result<RedisReply> set = redis.Call(
      {"SET", QueueKeys::Result(job_id), stored.dump(), "NX", "EX", ttl_s}, StoreDeadline());
  if (!set.ok()) {
    Say(me.name + ": could not store the result of job " + job_id + ": " + set.status().message() +
        " (it stays pending and will be judged again)");
    return false;
  }
  if (set->kind == RedisReply::Kind::kStatus) {
    Bookkeep(redis, {"RPUSH", QueueKeys::Done(job_id), "1"}, StoreDeadline());
    Bookkeep(redis, {"EXPIRE", QueueKeys::Done(job_id), ttl_s}, StoreDeadline());
  }
  return true;
}

void Worker::Finish(RedisClient& redis, const Entry& entry) {
  // Acknowledged only now that the result is stored; the entry (which holds the candidate's
  // files) is then deleted so the stream holds only waiting and pending jobs.
  Bookkeep(redis, {"XACK", stream_, QueueKeys::kGroup, entry.id}, StoreDeadline());
  Bookkeep(redis, {"XDEL", stream_, entry.id}, StoreDeadline());
}

void Worker::DeadLetter(RedisClient& redis, size_t index, const Entry& entry,
                        const std::string& reason) {
  ConsumerState me;
  {
    std::lock_guard<std::mutex> lock(mu_);
    me = states_[index];
    ++states_[index].dead_lettered;
  }
  std::string job_id = entry.fields.count("id") ? entry.fields.at("id") : "";
  auto job = entry.fields.find("job");
  Result<RedisReply> added =
      redis.Call({"XADD",       dead_,
                  "MAXLEN",     "~",
                  "10000",      "*",
                  "job_id",     job_id,
                  "entry",      entry.id,
                  "reason",     reason,
                  "deliveries", std::to_string(entry.deliveries),
                  "consumer",   me.name,
                  "failed_at",  Seconds(UnixNow()),
                  "job",        job == entry.fields.end() ? "" : job->second},
                 StoreDeadline());
  if (!added.ok()) return;  // stays pending; taken over again later
  Say(me.name + ": dead-lettered entry " + entry.id + " (job " + (job_id.empty() ? "?" : job_id) +
      "): " + reason);
  // Whoever waits for it gets the reason (a short-lived result, so the job can be sent again).
  bool id_ok =
      job_id.size() == 24 && job_id.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (id_ok) {
    Store(redis, job_id, FailedResult("dead_letter", "job dead-lettered: " + reason, o_.device),
          o_.failed_ttl_s, me, entry.deliveries);
  }
  Finish(redis, entry);
}

void Worker::Heartbeat() {
  RedisClient redis(url_, &stop_);
  const std::string key = QueueKeys::Worker(o_.name);
  const double every = std::max(0.05, std::min(o_.heartbeat_s, o_.visibility_s / 3));
  auto next_beat = Clock::now();
  while (true) {
    bool stopping = stop_.load();
    std::vector<ConsumerState> states;
    {
      std::lock_guard<std::mutex> lock(mu_);
      states = states_;
    }
    bool all_stopped = true;
    for (const ConsumerState& s : states) all_stopped = all_stopped && s.state == "stopped";
    // A live consumer renews the jobs in its hands, so only a dead one's are taken over. The
    // heartbeat's commands are repeated every beat: one that fails is retried at the next (a Redis
    // that is gone is reported by the consumers, which reconnect with backoff).
    for (const ConsumerState& s : states) {
      if (!s.entry_id.empty())
        (void)redis.Call({"XCLAIM", stream_, QueueKeys::kGroup, s.name, "0", s.entry_id, "JUSTID"},
                         After(every));
    }
    if (Clock::now() >= next_beat || all_stopped) {
      std::vector<std::string> argv = {
          "HSET",         key,
          "name",         o_.name,
          "host",         HostName(),
          "pid",          std::to_string(getpid()),
          "device",       DeviceName(o_.device),
          "started_at",   Seconds(started_at_),
          "heartbeat_at", Seconds(UnixNow()),
          "state",        all_stopped ? "stopped" : (stopping ? "stopping" : "running")};
      for (const ConsumerState& s : states) {
        argv.push_back("consumer:" + s.name);
        argv.push_back(s.ToJson().dump());
      }
      (void)redis.Call(argv, After(every));
      (void)redis.Call(
          {"EXPIRE", key,
           std::to_string(std::max(1LL, static_cast<long long>(3 * o_.heartbeat_s + 1)))},
          After(every));
      (void)redis.Call({"SADD", QueueKeys::kWorkers, key}, After(every));
      next_beat = After(o_.heartbeat_s);
    }
    if (all_stopped) {
      (void)redis.Call({"DEL", key}, After(2));  // else it expires after 3 missed beats
      (void)redis.Call({"SREM", QueueKeys::kWorkers, key}, After(2));
      return;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(every, 0.25)));
  }
}

}  // namespace

Status RunWorker(const WorkerOptions& options, const std::atomic<bool>& stop) {
  Result<RedisUrl> url = ParseRedisUrl(options.url);
  if (!url.ok()) return url.status();
  if (options.max_deliveries < 1) return InvalidArgument("--max-deliveries must be at least 1");
  if (options.visibility_s <= 0) return InvalidArgument("--visibility must be positive seconds");
  if (options.judge_command.empty()) return InvalidArgument("no judge command");
  WorkerOptions o = options;
  if (o.name.empty()) o.name = HostName() + "-" + std::to_string(getpid());
  if (o.work_dir.empty()) o.work_dir = DefaultCacheDir() / "dist";
  Worker worker(o, stop);
  return worker.Run();
}

Result<Json> WorkerStates(const std::string& url_text) {
  Result<RedisUrl> url = ParseRedisUrl(url_text);
  if (!url.ok()) return url.status();
  RedisClient redis(url.value());
  if (Status s = redis.Connect(); !s.ok()) return s;
  auto deadline = After(5);
  Json out = {{"redis", url->text}, {"workers", Json::array()}, {"queues", Json::object()}};
  Result<RedisReply> members = redis.Call({"SMEMBERS", QueueKeys::kWorkers}, deadline);
  if (!members.ok()) return members.status();
  double now = UnixNow();
  for (const RedisReply& m : members->elements) {
    Result<RedisReply> h = redis.Call({"HGETALL", m.str}, deadline);
    if (!h.ok()) return h.status();
    if (!h->array() || h->elements.empty()) {
      (void)redis.Call({"SREM", QueueKeys::kWorkers, m.str}, deadline);  // its hash expired
      continue;
    }
    Json w = {{"consumers", Json::array()}};
    for (size_t i = 0; i + 1 < h->elements.size(); i += 2) {
      const std::string& k = h->elements[i].str;
      const std::string& v = h->elements[i + 1].str;
      if (k.rfind("consumer:", 0) == 0) {
        Result<Json> c = ParseJson(v, k);
        if (c.ok()) w["consumers"].push_back(c.value());
      } else if (k == "pid") {
        w[k] = std::atoll(v.c_str());
      } else if (k == "started_at" || k == "heartbeat_at") {
        w[k] = std::atof(v.c_str());
      } else {
        w[k] = v;
      }
    }
    if (w.contains("heartbeat_at")) w["heartbeat_age_s"] = now - w["heartbeat_at"].get<double>();
    out["workers"].push_back(w);
  }
  for (Device d : {Device::kCuda, Device::kCpu}) {
    Json q;
    Result<RedisReply> len = redis.Call({"XLEN", QueueKeys::Stream(d)}, deadline);
    if (!len.ok()) return len.status();
    Result<RedisReply> pending =
        redis.Call({"XPENDING", QueueKeys::Stream(d), QueueKeys::kGroup}, deadline);
    if (!pending.ok()) return pending.status();
    Result<RedisReply> dead = redis.Call({"XLEN", QueueKeys::DeadLetter(d)}, deadline);
    if (!dead.ok()) return dead.status();
    long long in_hand =
        pending->array() && !pending->elements.empty() ? pending->elements[0].integer : 0;
    // Entries are deleted once acknowledged, so the stream holds the waiting and the pending.
    q["waiting"] = std::max(0LL, len->integer - in_hand);
    q["pending"] = in_hand;
    q["dead_letter"] = dead->integer;
    out["queues"][DeviceName(d)] = q;
  }
  return out;
}

Result<Json> DeadLetters(const std::string& url_text, Device device, int count) {
  Result<RedisUrl> url = ParseRedisUrl(url_text);
  if (!url.ok()) return url.status();
  RedisClient redis(url.value());
  if (Status s = redis.Connect(); !s.ok()) return s;
  Result<RedisReply> r = redis.Call(
      {"XRANGE", QueueKeys::DeadLetter(device), "-", "+", "COUNT", std::to_string(count)},
      After(5));
  if (!r.ok()) return r.status();
  if (r->error()) return Internal("XRANGE " + QueueKeys::DeadLetter(device) + ": " + r->str);
  Json out = Json::array();
  for (const RedisReply& item : r->elements) {
    std::optional<Entry> e = EntryFromReply(item);
    if (!e) continue;
    Json letter = {{"entry", e->id}};
    for (const auto& [k, v] : e->fields) {
      if (k == "deliveries") {
        letter[k] = std::atoll(v.c_str());
      } else if (k == "failed_at") {
        letter[k] = std::atof(v.c_str());
      } else if (k == "job") {
        Result<Json> job = ParseJson(v, "job");
        letter[k] = job.ok() ? job.value() : Json(v);
      } else {
        letter[k] = v;
      }
    }
    out.push_back(letter);
  }
  return out;
}

Status JudgeJobFile(const fs::path& job_file, const fs::path& out_file, const JudgeOptions& local) {
  // A judgement whose worker died has no one to report to.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return FailedPrecondition("the worker that started this judgement is gone");
  Result<Json> raw = ReadJsonFile(job_file);
  if (!raw.ok()) return raw.status();
  Result<JudgeJob> job = JobFromJson(raw.value());
  if (!job.ok()) return job.status();
  JudgeResult result;
  if (job->noop) {
    result = NoopResult(job->options.device);
  } else {
    Result<HarnessEnv> env = HarnessEnv::Discover();
    if (!env.ok()) return env.status();
    InProcessJudge judge(env.value());
    result = judge.Evaluate(job->Request(local));
  }
  return WriteJsonFile(out_file, Json{{"result", result.ToJson()}});
}

}  // namespace cuda_agent
