// job_runner.h — the workers of `serve`'s asynchronous evaluations (POST /v1/evaluate with
// "wait": false): a fixed pool of threads and a bounded queue in front of them, instead of a thread
// per job. Workers start as jobs need them, up to the bound, and stay for the next ones. Submit
// refuses at once when the queue is full (the caller answers 429 `busy` with a Retry-After:
// retryable), so neither threads nor waiting jobs grow without bound. A job is a closure that does
// its own bookkeeping (the store's job row); the runner only runs it.
//
//   JobRunner runner({.workers = 4, .queue = 16});
//   if (!runner.Submit([=] { RunJob(id); })) return Busy();
//   runner.Stop(grace_s);  // at shutdown: waits, then leaves what still runs to the process's exit
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cuda_agent {

struct JobRunnerOptions {
  size_t workers = 4;  // jobs running at once (at least 1): the most threads it starts
  size_t queue = 16;   // jobs waiting for a worker; beyond: Submit refuses
};

class JobRunner {
 public:
  explicit JobRunner(JobRunnerOptions options);
  ~JobRunner();  // Stop(0)
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Submit queues `job` for the next free worker; false when every worker is taken and `queue`
  // jobs wait already, or Stop has begun (the job is dropped: nothing ran).
  bool Submit(std::function<void()> job);
  // Grow raises the pool's bound to at least `workers` threads and the queue's to at least `queue`
  // (never lowers either: a running job is never cut short).
  void Grow(size_t workers, size_t queue);

  size_t Waiting() const;  // queued, not started
  size_t Running() const;
  size_t Threads() const;  // workers started so far

  // Stop takes no more jobs and waits up to `grace_s` for the queued and running ones; jobs still
  // queued then are dropped, workers still running are detached and end when their job does (the
  // process's exit may come first). Returns the jobs it left: dropped plus still running.
  size_t Stop(double grace_s);

 private:
  // Shared is what the workers use: it outlives a runner whose workers were detached.
  struct Shared {
    std::mutex mutex;
    std::condition_variable work;  // a job was queued, or stop
    std::condition_variable idle;  // a job finished
    std::deque<std::function<void()>> queue;
    size_t max_workers = 0;
    size_t queue_bound = 0;
    size_t running = 0;
    bool closed = false;    // Stop began: Submit refuses
    bool stopping = false;  // the workers leave
  };
  static void Work(const std::shared_ptr<Shared>& shared);

  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> workers_;  // started so far; guarded by shared_->mutex
};

}  // namespace cuda_agent
