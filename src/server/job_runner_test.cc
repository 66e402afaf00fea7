// job_runner_test.cc — the pool runs at most `workers` jobs at once, holds at most `queue` more and
// refuses the next one at once (the server answers 429 busy: retryable); a refused job is never
// run; workers start with the jobs, up to the bound; Grow raises it; Stop waits for the grace
// period, then drops what still waits.
#include "server/job_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

namespace cuda_agent {
namespace {

// Gate blocks the jobs that wait on it until Open; counts them at once.
class Gate {
 public:
  void Wait() {
    int now = ++inside_;
    int seen = most_inside_.load();
    while (now > seen && !most_inside_.compare_exchange_weak(seen, now)) {
    }
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
    --inside_;
    ++passed_;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }
  std::atomic<int> inside_{0};
  std::atomic<int> most_inside_{0};
  std::atomic<int> passed_{0};

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// Eventually: polls `done` for up to 10 s.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Each test's gate is shared with its jobs: a failed expectation may leave a runner's detached
// worker waiting on it after the test.
TEST(JobRunner, RefusesBeyondItsQueueAndRunsAtMostItsWorkers) {
  auto gate = std::make_shared<Gate>();
  JobRunner runner({.workers = 2, .queue = 1});
  EXPECT_EQ(runner.Threads(), 0u);  // workers start with the jobs
  EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));
  EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));
  ASSERT_TRUE(Eventually([&] { return runner.Running() == 2; }));
  EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));  // waits for a worker
  EXPECT_EQ(runner.Waiting(), 1u);
  std::atomic<bool> refused_ran{false};
  EXPECT_FALSE(runner.Submit([&] { refused_ran = true; }));  // full: refused at once
  gate->Open();
  ASSERT_TRUE(Eventually([&] { return gate->passed_ == 3; }));
  EXPECT_EQ(gate->most_inside_, 2);
  EXPECT_FALSE(refused_ran);
  EXPECT_EQ(runner.Threads(), 2u);
  // Room again once the queue drained.
  ASSERT_TRUE(Eventually([&] { return runner.Waiting() == 0 && runner.Running() == 0; }));
  std::atomic<bool> ran{false};
  EXPECT_TRUE(runner.Submit([&] { ran = true; }));
  EXPECT_TRUE(Eventually([&] { return ran.load(); }));
  EXPECT_EQ(runner.Threads(), 2u);  // the workers stayed for the next jobs
}

TEST(JobRunner, GrowAddsWorkersAndRoom) {
  auto gate = std::make_shared<Gate>();
  JobRunner runner({.workers = 1, .queue = 0});
  EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));
  ASSERT_TRUE(Eventually([&] { return runner.Running() == 1; }));
  EXPECT_FALSE(runner.Submit([] {}));  // the one worker is taken and nothing may wait
  runner.Grow(3, 1);
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));
  EXPECT_TRUE(Eventually([&] { return gate->inside_ == 3; }));
  runner.Grow(1, 0);  // never shrinks: one job may still wait
  EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));
  EXPECT_FALSE(runner.Submit([] {}));
  gate->Open();
  EXPECT_TRUE(Eventually([&] { return gate->passed_ == 4; }));
}

TEST(JobRunner, StopWaitsForTheGraceThenDropsWhatWaits) {
  auto gate = std::make_shared<Gate>();  // shared with the job that outlives the runner
  auto dropped_ran = std::make_shared<std::atomic<bool>>(false);
  {
    JobRunner runner({.workers = 1, .queue = 4});
    EXPECT_TRUE(runner.Submit([gate] { gate->Wait(); }));
    ASSERT_TRUE(Eventually([&] { return runner.Running() == 1; }));
    EXPECT_TRUE(runner.Submit([dropped_ran] { *dropped_ran = true; }));
    EXPECT_EQ(runner.Stop(0.05), 2u);  // one running, one dropped
    EXPECT_FALSE(runner.Submit([] {}));
  }
  // The running job outlives the runner (its worker was detached) and finishes.
  gate->Open();
  EXPECT_TRUE(Eventually([&] { return gate->passed_ == 1; }));
  EXPECT_FALSE(*dropped_ran);

  JobRunner idle({.workers = 2, .queue = 2});
  std::atomic<int> done{0};
  EXPECT_TRUE(idle.Submit([&] { ++done; }));
  EXPECT_EQ(idle.Stop(10), 0u);  // it waits for the job, then joins
  EXPECT_EQ(done, 1);
}

}  // namespace
}  // namespace cuda_agent
