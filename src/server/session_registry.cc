// session_registry.cc — the live sessions' map, counters and reaper thread.
#include "server/session_registry.h"

#include <algorithm>
#include <chrono>

namespace cuda_agent {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

SessionRegistry::SessionRegistry(size_t max_open, std::function<void(Live&)> expire)
    : max_open_(max_open), expire_(std::move(expire)) {}

SessionRegistry::~SessionRegistry() { StopReaper(); }

bool SessionRegistry::Reserve(size_t* open_now) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t open = opening_;
  for (const auto& [id, r] : live_) open += r->IsOpen() ? 1 : 0;
  if (open >= max_open_) {
    *open_now = open;
    return false;
  }
  ++opening_;
  return true;
}

void SessionRegistry::Unreserve() {
  std::lock_guard<std::mutex> lock(mutex_);
  --opening_;
}

void SessionRegistry::Add(std::shared_ptr<Live> record) {
  std::lock_guard<std::mutex> lock(mutex_);
  --opening_;
  live_[record->id] = std::move(record);
}

void SessionRegistry::Restore(std::shared_ptr<Live> record) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_[record->id] = std::move(record);
}

std::shared_ptr<Live> SessionRegistry::Acquire(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(id);
  if (it == live_.end()) return nullptr;
  ++it->second->busy;
  ++busy_total_;
  it->second->expires_at = UnixNow() + it->second->ttl_s;
  return it->second;
}

void SessionRegistry::Release(Live& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  --record.busy;
  --busy_total_;
  record.expires_at = UnixNow() + record.ttl_s;
  idle_.notify_all();
}

std::shared_ptr<Live> SessionRegistry::Remove(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(id);
  if (it == live_.end()) return nullptr;
  std::shared_ptr<Live> record = it->second;
  live_.erase(it);
  ++record->busy;
  ++busy_total_;
  return record;
}

LiveView SessionRegistry::View(const Live& r) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {r.id,         r.task,       r.device,     r.status,  r.IsOpen(),
          r.calls_used, r.turn_limit, r.expires_at, r.busy > 0};
}

std::optional<LiveView> SessionRegistry::Find(const std::string& id) const {
  std::shared_ptr<Live> record;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(id);
    if (it == live_.end()) return std::nullopt;
    record = it->second;
  }
  return View(*record);
}

void SessionRegistry::SetStatus(Live& record, const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  record.status = status;
}

int SessionRegistry::CountCall(Live& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++record.calls_used;
}

size_t SessionRegistry::OpenCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t open = 0;
  for (const auto& [id, r] : live_) open += r->IsOpen() ? 1 : 0;
  return open;
}

std::vector<LiveView> SessionRegistry::Open() const {
  std::vector<std::shared_ptr<Live>> open;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, r] : live_) {
      if (r->IsOpen()) open.push_back(r);  // a graded session stays live until closed or expired
    }
  }
  std::vector<LiveView> views;
  for (const std::shared_ptr<Live>& r : open) views.push_back(View(*r));
  return views;
}

std::vector<std::shared_ptr<Live>> SessionRegistry::All() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Live>> all;
  for (const auto& [id, r] : live_) all.push_back(r);
  return all;
}

void SessionRegistry::Reap() {
  std::vector<std::shared_ptr<Live>> expired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const double now = UnixNow();
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second->busy == 0 && it->second->expires_at < now) {
        expired.push_back(it->second);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const std::shared_ptr<Live>& record : expired) {
    std::lock_guard<std::mutex> op(record->op);
    expire_(*record);
  }
}

void SessionRegistry::StartReaper(double interval_s, std::function<void()> after_each) {
  reaper_ = std::thread([this, interval_s, after_each = std::move(after_each)] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!reaper_stop_) {
      reaper_wake_.wait_for(lock, std::chrono::duration<double>(interval_s));
      if (reaper_stop_) break;
      lock.unlock();
      Reap();
      if (after_each) after_each();
      lock.lock();
    }
  });
}

void SessionRegistry::StopReaper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reaper_stop_ = true;
    reaper_wake_.notify_all();
  }
  if (reaper_.joinable()) reaper_.join();
}

int SessionRegistry::WaitIdle(double grace_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait_for(lock, std::chrono::duration<double>(std::max(grace_s, 0.0)),
                 [&] { return busy_total_ == 0; });
  return busy_total_;
}

}  // namespace cuda_agent
