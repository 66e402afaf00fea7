// redis_client.cc — URL parsing, the hiredis connection and the reconnecting client.
#include "queue/redis_client.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "common/log.h"

namespace cuda_agent {
namespace {

constexpr const char* kUrlForm = "expected redis://HOST[:PORT][/DB], e.g. redis://127.0.0.1:6379/0";

timeval ToTimeval(double seconds) {
  seconds = std::max(seconds, 0.001);
  timeval tv;
  tv.tv_sec = static_cast<long>(seconds);
  tv.tv_usec = static_cast<long>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  return tv;
}

bool ParseNumber(const std::string& text, int low, int high, int* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  int v = std::atoi(text.c_str());
  if (v < low || v > high) return false;
  *out = v;
  return true;
}

RedisReply Convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.kind = RedisReply::Kind::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = RedisReply::Kind::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default:
      out.kind = RedisReply::Kind::kNil;
  }
  return out;
}

}  // namespace

Result<RedisUrl> ParseRedisUrl(const std::string& url) {
  const std::string scheme = "redis://";
  if (url.rfind(scheme, 0) != 0) return InvalidArgument("bad Redis URL '" + url + "': " + kUrlForm);
  std::string rest = url.substr(scheme.size());
  RedisUrl out;
  out.text = url;
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    std::string db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty() && !ParseNumber(db, 0, 1 << 20, &out.db))
      return InvalidArgument("bad Redis URL '" + url + "': database '" + db +
                             "' is not a number; " + kUrlForm);
  }
  if (rest.find('@') != std::string::npos)
    return InvalidArgument("bad Redis URL '" + url +
                           "': user names and passwords are not supported (bind Redis to a "
                           "private network instead); " +
                           kUrlForm);
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    std::string port = rest.substr(colon + 1);
    if (!ParseNumber(port, 1, 65535, &out.port))
      return InvalidArgument("bad Redis URL '" + url + "': port '" + port + "' is not 1..65535; " +
                             kUrlForm);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return InvalidArgument("bad Redis URL '" + url + "': no host; " + kUrlForm);
  out.host = rest;
  return out;
}

std::string ReplyText(const RedisReply& reply) {
  switch (reply.kind) {
    case RedisReply::Kind::kNil:
      return "(nil)";
    case RedisReply::Kind::kInteger:
      return std::to_string(reply.integer);
    case RedisReply::Kind::kArray:
      return "[" + std::to_string(reply.elements.size()) + " elements]";
    default:
      return reply.str;
  }
}

Result<std::unique_ptr<RedisConnection>> RedisConnection::Connect(const RedisUrl& url,
                                                                  double timeout_s) {
  redisContext* c = redisConnectWithTimeout(url.host.c_str(), url.port, ToTimeval(timeout_s));
  if (c == nullptr) return FailedPrecondition(url.text + ": cannot allocate a Redis connection");
  if (c->err != 0) {
    std::string why = c->errstr;
    redisFree(c);
    return FailedPrecondition("Redis at " + url.text + " is unreachable: " + why);
  }
  std::unique_ptr<RedisConnection> conn(new RedisConnection(url, c));
  if (url.db != 0) {
    Result<RedisReply> r = conn->Command({"SELECT", std::to_string(url.db)}, timeout_s);
    if (!r.ok()) return r.status();
    if (r->error())
      return FailedPrecondition("Redis at " + url.text + ": SELECT " + std::to_string(url.db) +
                                " failed: " + r->str);
  }
  return conn;
}

RedisConnection::~RedisConnection() {
  if (context_ != nullptr) redisFree(context_);
}

Result<RedisReply> RedisConnection::Command(const std::vector<std::string>& argv,
                                            double read_timeout_s) {
  if (context_->err != 0)
    return FailedPrecondition("Redis at " + url_.text + ": connection lost: " + context_->errstr);
  redisSetTimeout(context_, ToTimeval(read_timeout_s));
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = redisCommandArgv(context_, static_cast<int>(args.size()), args.data(), lens.data());
  if (raw == nullptr) {
    return FailedPrecondition("Redis at " + url_.text + ": connection lost: " +
                              (context_->err != 0 ? context_->errstr : "no reply"));
  }
  RedisReply reply = Convert(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return reply;
}

Status RedisClient::Connect() {
  Result<std::unique_ptr<RedisConnection>> c = RedisConnection::Connect(url_, 2.0);
  if (!c.ok()) return c.status();
  connection_ = std::move(c).value();
  had_connection_ = true;
  return OkStatus();
}

Result<RedisReply> RedisClient::Call(const std::vector<std::string>& argv,
                                     Clock::time_point deadline, double read_timeout_s) {
  double backoff = 0.05;
  Status last;
  while (true) {
    if (connection_ == nullptr) {
      Result<std::unique_ptr<RedisConnection>> c = RedisConnection::Connect(url_, 2.0);
      if (c.ok()) {
        connection_ = std::move(c).value();
        if (had_connection_) {
          ++reconnects_;
          LogWarn("reconnected to Redis at " + url_.text);
        }
        had_connection_ = true;
      } else {
        last = c.status();
      }
    }
    if (connection_ != nullptr) {
      Result<RedisReply> r = connection_->Command(argv, read_timeout_s);
      if (r.ok()) return r;
      last = r.status();
      connection_.reset();
    }
    if ((stop_ != nullptr && stop_->load()) || Clock::now() >= deadline) return last;
    LogWarn(last.message() + "; retrying in " + std::to_string(backoff).substr(0, 4) + " s");
    auto wake = Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(backoff));
    while (Clock::now() < std::min(wake, deadline) && !(stop_ != nullptr && stop_->load()))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    backoff = std::min(backoff * 2, 2.0);
  }
}

}  // namespace cuda_agent
