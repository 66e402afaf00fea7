// judgement_queue.cc — places, workers and the Retry-After estimate of each device's queue.
#include "server/judgement_queue.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/device.h"

namespace cuda_agent {
namespace {

// The place the current thread's judgements run on (ScopedPlace), if any.
thread_local JudgementQueue::Place* t_lent_place = nullptr;

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

JudgementQueue::Place::Place(Place&& other) noexcept
    : queue_(other.queue_), device_(std::move(other.device_)) {
  other.queue_ = nullptr;
}

JudgementQueue::Place::~Place() {
  if (queue_ != nullptr) queue_->Release(device_);
}

JudgementQueue::ScopedPlace::ScopedPlace(Place& place) { t_lent_place = &place; }
JudgementQueue::ScopedPlace::~ScopedPlace() { t_lent_place = nullptr; }

JudgementQueue::JudgementQueue(JudgeService& inner, JudgementQueueOptions options)
    : inner_(inner), options_(options) {
  options_.workers = std::max<size_t>(options_.workers, 1);
}

std::optional<JudgementQueue::Place> JudgementQueue::Admit(const std::string& device,
                                                           double* retry_after_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  // A free worker takes the place at once; beyond the workers, `capacity` may wait.
  const size_t workers = WorkersOf(d);
  size_t free_workers = d.running < workers ? workers - d.running : 0;
  if (d.waiting >= free_workers + options_.capacity) {
    double mean = d.judged > 0 ? d.mean_s : options_.first_guess_s;
    double ahead = static_cast<double>(d.waiting + d.running);
    *retry_after_s = std::clamp(std::ceil(ahead * mean / static_cast<double>(workers)), 1.0, 600.0);
    return std::nullopt;
  }
  ++d.waiting;
  return Place(this, device);
}

void JudgementQueue::Release(const std::string& device) {
  std::lock_guard<std::mutex> lock(mutex_);
  --devices_[device].waiting;
  freed_.notify_all();
}

JudgeResult JudgementQueue::Run(Place place, const JudgeRequest& request) {
  place.queue_ = nullptr;  // RunOnDevice moves it from waiting to running
  return RunOnDevice(place.device_, true, request);
}

JudgeResult JudgementQueue::Evaluate(const JudgeRequest& request) {
  const std::string device = DeviceName(request.options.device);
  if (t_lent_place != nullptr && t_lent_place->queue_ == this && t_lent_place->device_ == device) {
    t_lent_place->queue_ = nullptr;
    return RunOnDevice(device, true, request);
  }
  return RunOnDevice(device, false, request);
}

JudgeResult JudgementQueue::RunOnDevice(const std::string& device, bool has_place,
                                        const JudgeRequest& request) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Device& d = devices_[device];
    if (!has_place) ++d.waiting;
    freed_.wait(lock, [&] {
      const Device& now = devices_[device];
      return now.running < WorkersOf(now);
    });
    Device& now = devices_[device];
    --now.waiting;
    ++now.running;
  }
  const double started = Seconds();
  JudgeResult result = inner_.Evaluate(request);
  const double took = Seconds() - started;
  std::lock_guard<std::mutex> lock(mutex_);
  Device& d = devices_[device];
  --d.running;
  d.mean_s = d.judged == 0 ? took : 0.8 * d.mean_s + 0.2 * took;
  ++d.judged;
  freed_.notify_all();
  return result;
}

void JudgementQueue::SetWorkers(const std::string& device, size_t workers) {
  std::lock_guard<std::mutex> lock(mutex_);
  devices_[device].workers = std::max<size_t>(workers, 1);
  freed_.notify_all();
}

Json JudgementQueue::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Json out = Json::array();
  for (const auto& [name, d] : devices_) {
    const size_t workers = WorkersOf(d);
    size_t free_workers = d.running < workers ? workers - d.running : 0;
    std::string state = d.waiting >= free_workers + options_.capacity ? "full"
                        : d.running > 0                               ? "busy"
                                                                      : "idle";
    out.push_back({{"device", name},
                   {"state", state},
                   {"queue_depth", d.waiting},
                   {"running", d.running},
                   {"workers", workers},
                   {"capacity", options_.capacity},
                   {"mean_s", d.mean_s}});
  }
  return out;
}

size_t JudgementQueue::QueueDepth() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t depth = 0;
  for (const auto& [name, d] : devices_) depth += d.waiting;
  return depth;
}

}  // namespace cuda_agent
