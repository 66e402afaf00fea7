// job_runner.cc — the pool's workers, the bounded queue and the shutdown.
#include "server/job_runner.h"

#include <algorithm>
#include <chrono>

namespace cuda_agent {

JobRunner::JobRunner(JobRunnerOptions options) : shared_(std::make_shared<Shared>()) {
  Grow(std::max<size_t>(options.workers, 1), options.queue);
}

JobRunner::~JobRunner() { Stop(0); }

void JobRunner::Work(const std::shared_ptr<Shared>& shared) {
  std::unique_lock<std::mutex> lock(shared->mutex);
  for (;;) {
    shared->work.wait(lock, [&] { return shared->stopping || !shared->queue.empty(); });
    if (shared->stopping) return;
    std::function<void()> job = std::move(shared->queue.front());
    shared->queue.pop_front();
    ++shared->running;
    lock.unlock();
    job();
    lock.lock();
    --shared->running;
    shared->idle.notify_all();
  }
}

bool JobRunner::Submit(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  // Up to `workers` run at once; beyond them, `queue_bound` may wait.
  const size_t taken = shared_->running + shared_->queue.size();
  if (shared_->closed || taken >= shared_->max_workers + shared_->queue_bound) return false;
  // A worker starts when the job would find none idle (an idle server holds no threads).
  if (taken >= workers_.size() && workers_.size() < shared_->max_workers) {
    workers_.emplace_back([shared = shared_] { Work(shared); });
  }
  shared_->queue.push_back(std::move(job));
  shared_->work.notify_one();
  return true;
}

void JobRunner::Grow(size_t workers, size_t queue) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->max_workers = std::max(shared_->max_workers, workers);
  shared_->queue_bound = std::max(shared_->queue_bound, queue);
}

size_t JobRunner::Waiting() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->queue.size();
}

size_t JobRunner::Running() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->running;
}

size_t JobRunner::Threads() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return workers_.size();
}

size_t JobRunner::Stop(double grace_s) {
  std::vector<std::thread> workers;
  size_t left = 0;
  bool idle = false;
  {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    if (shared_->closed) return 0;
    shared_->closed = true;
    shared_->idle.wait_for(lock, std::chrono::duration<double>(std::max(grace_s, 0.0)),
                           [&] { return shared_->queue.empty() && shared_->running == 0; });
    left = shared_->queue.size() + shared_->running;
    shared_->queue.clear();
    idle = shared_->running == 0;
    shared_->stopping = true;
    shared_->work.notify_all();
    workers.swap(workers_);
  }
  for (std::thread& worker : workers) {
    if (idle) {
      worker.join();
    } else {
      worker.detach();  // its job ends with the process, or later touches only `Shared`
    }
  }
  return left;
}

}  // namespace cuda_agent
