// redis_client.h — the project's one door to Redis (hiredis; no other file includes it): a
// redis://host:port/db URL, a blocking connection that sends argv-form commands and returns each
// reply as a value, and a client that reconnects with backoff when Redis goes away.
//
//   Result<RedisUrl> url = ParseRedisUrl("redis://127.0.0.1:6379/0");
//   RedisClient redis(url.value());
//   Status up = redis.Connect();                       // one attempt; names the URL when it fails
//   Result<RedisReply> r = redis.Call({"XLEN", "cuda-agent:jobs:cpu"});
//
// Convention: a Status that is not OK means the connection failed (refused, reset, timed out); an
// error *reply* of Redis (WRONGTYPE, NOGROUP, ...) is an OK result whose reply has kind kError.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

struct redisContext;  // hiredis, seen only by redis_client.cc

namespace cuda_agent {

struct RedisUrl {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::string text;  // as given, for messages and Describe()
};

// ParseRedisUrl accepts redis://HOST[:PORT][/DB] (port 6379 and db 0 by default); anything else is
// an InvalidArgument that shows the expected form.
Result<RedisUrl> ParseRedisUrl(const std::string& url);

struct RedisReply {
  enum class Kind { kNil, kString, kInteger, kArray, kStatus, kError };
  Kind kind = Kind::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<RedisReply> elements;  // kArray

  bool nil() const { return kind == Kind::kNil; }
  bool error() const { return kind == Kind::kError; }
  bool array() const { return kind == Kind::kArray; }
};

// RedisConnection is one blocking connection; not safe for concurrent use.
class RedisConnection {
 public:
  // Connect opens the connection (at most `timeout_s` to connect) and SELECTs the URL's db.
  static Result<std::unique_ptr<RedisConnection>> Connect(const RedisUrl& url, double timeout_s);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Command sends one command; `read_timeout_s` bounds the wait for its reply (a blocking command's
  // own timeout plus a margin). After a non-OK Status the connection is unusable.
  Result<RedisReply> Command(const std::vector<std::string>& argv, double read_timeout_s = 10);

 private:
  RedisConnection(const RedisUrl& url, redisContext* context) : url_(url), context_(context) {}
  RedisUrl url_;
  redisContext* context_;
};

// RedisClient holds one connection and makes a new one, with exponential backoff, whenever the
// current one fails. Not safe for concurrent use (one per thread).
class RedisClient {
 public:
  using Clock = std::chrono::steady_clock;
  // `stop`, when set, ends waiting for Redis early (a worker that was asked to stop).
  explicit RedisClient(RedisUrl url, const std::atomic<bool>* stop = nullptr)
      : url_(std::move(url)), stop_(stop) {}

  // Connect makes one attempt (no retry): for "Redis unreachable at start" errors.
  Status Connect();

  // Call runs a command; when the connection fails it reconnects with backoff (0.05 s doubling to
  // 2 s, each wait logged) and sends the command again, until `deadline` passes or `stop` is set.
  // Commands sent again must be safe to repeat (every caller's are: SET NX, XACK, ...).
  Result<RedisReply> Call(const std::vector<std::string>& argv,
                          Clock::time_point deadline = Clock::time_point::max(),
                          double read_timeout_s = 10);

  // Reconnects counts how often a lost connection was made again (for tests and health).
  int reconnects() const { return reconnects_; }
  const RedisUrl& url() const { return url_; }

 private:
  RedisUrl url_;
  const std::atomic<bool>* stop_;
  std::unique_ptr<RedisConnection> connection_;
  int reconnects_ = 0;
  bool had_connection_ = false;
};

// ReplyText renders a reply for an error message ("ERR ...", "(nil)", "[3 elements]").
std::string ReplyText(const RedisReply& reply);

}  // namespace cuda_agent
