// judgement_queue_test.cc — places, refusals with Retry-After, the worker limit, and the place a
// grade lends to the session's own Evaluate (no double queueing). The judge is a fake (it only
// blocks until released): the queue's logic is what is tested.
#include "server/judgement_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <thread>

namespace cuda_agent {
namespace {

// FakeBlockingJudge answers a verdict of 1 once Release() is called; counts judgements at once.
class FakeBlockingJudge : public JudgeService {
 public:
  JudgeResult Evaluate(const JudgeRequest&) override {
    int now = ++running_;
    int seen = max_running_.load();
    while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
    }
    std::unique_lock<std::mutex> lock(mutex_);
    released_.wait(lock, [&] { return open_; });
    --running_;
    JudgeResult r;
    r.reward = 1;
    return r;
  }
  std::string Describe() const override { return "fake"; }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    released_.notify_all();
  }
  std::atomic<int> running_{0};
  std::atomic<int> max_running_{0};

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  bool open_ = false;
};

JudgeRequest CpuRequest() {
  JudgeRequest r;
  r.options.device = Device::kCpu;
  return r;
}

void WaitFor(const std::function<bool()>& condition) {
  for (int i = 0; i < 2000 && !condition(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(condition());
}

TEST(JudgementQueue, RefusesBeyondWorkersPlusCapacityWithRetryAfter) {
  FakeBlockingJudge judge;
  JudgementQueue queue(judge, {.capacity = 1, .workers = 1, .first_guess_s = 10});
  double retry = 0;
  std::optional<JudgementQueue::Place> a = queue.Admit("cpu", &retry);
  std::optional<JudgementQueue::Place> b = queue.Admit("cpu", &retry);
  ASSERT_TRUE(a && b);
  std::optional<JudgementQueue::Place> c = queue.Admit("cpu", &retry);
  EXPECT_FALSE(c);
  EXPECT_GE(retry, 10);  // two ahead × 10 s ÷ 1 worker
  EXPECT_EQ(queue.Snapshot()[0]["state"], "full");
  // Another device has its own queue.
  EXPECT_TRUE(queue.Admit("cuda", &retry));

  std::thread t1([&] { queue.Run(std::move(*a), CpuRequest()); });
  std::thread t2([&] { queue.Run(std::move(*b), CpuRequest()); });
  WaitFor([&] { return judge.running_ == 1; });
  EXPECT_EQ(queue.Snapshot()[0]["running"], 1);
  EXPECT_EQ(queue.Snapshot()[0]["queue_depth"], 1);
  EXPECT_FALSE(queue.Admit("cpu", &retry));
  judge.Release();
  t1.join();
  t2.join();
  EXPECT_EQ(judge.max_running_, 1);  // one worker: never two at once
  EXPECT_EQ(queue.QueueDepth(), 0u);
  EXPECT_TRUE(queue.Admit("cpu", &retry));
}

TEST(JudgementQueue, SetWorkersWidensTheDeviceAndStartsWaitingPlaces) {
  // A remote judge (serve --redis): the device's workers follow the live consumers.
  FakeBlockingJudge judge;
  JudgementQueue queue(judge, {.capacity = 0, .workers = 1, .first_guess_s = 10});
  double retry = 0;
  std::optional<JudgementQueue::Place> a = queue.Admit("cpu", &retry);
  ASSERT_TRUE(a);
  EXPECT_FALSE(queue.Admit("cpu", &retry));
  queue.SetWorkers("cpu", 3);
  std::optional<JudgementQueue::Place> b = queue.Admit("cpu", &retry);
  std::optional<JudgementQueue::Place> c = queue.Admit("cpu", &retry);
  ASSERT_TRUE(b && c);
  EXPECT_FALSE(queue.Admit("cpu", &retry));
  EXPECT_EQ(queue.Snapshot()[0]["workers"], 3);
  EXPECT_EQ(queue.Snapshot()[0]["state"], "full");
  // Another device keeps the options' workers.
  std::optional<JudgementQueue::Place> gpu = queue.Admit("cuda", &retry);
  ASSERT_TRUE(gpu);
  EXPECT_FALSE(queue.Admit("cuda", &retry));

  std::thread t1([&] { queue.Run(std::move(*a), CpuRequest()); });
  std::thread t2([&] { queue.Run(std::move(*b), CpuRequest()); });
  std::thread t3([&] { queue.Run(std::move(*c), CpuRequest()); });
  WaitFor([&] { return judge.running_ == 3; });
  // Shrinking lets the running finish; zero means one.
  queue.SetWorkers("cpu", 0);
  EXPECT_EQ(queue.Snapshot()[0]["workers"], 1);
  judge.Release();
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(judge.max_running_, 3);
}

TEST(JudgementQueue, UnusedPlaceIsGivenBack) {
  FakeBlockingJudge judge;
  JudgementQueue queue(judge, {.capacity = 0, .workers = 1});
  double retry = 0;
  {
    std::optional<JudgementQueue::Place> a = queue.Admit("cpu", &retry);
    ASSERT_TRUE(a);
    EXPECT_FALSE(queue.Admit("cpu", &retry));
  }
  EXPECT_TRUE(queue.Admit("cpu", &retry));
}

TEST(JudgementQueue, LentPlaceServesTheSessionsOwnEvaluate) {
  FakeBlockingJudge judge;
  judge.Release();
  JudgementQueue queue(judge, {.capacity = 0, .workers = 1});
  double retry = 0;
  std::optional<JudgementQueue::Place> place = queue.Admit("cpu", &retry);
  ASSERT_TRUE(place);
  {
    JudgementQueue::ScopedPlace lent(*place);
    // What Session::Grade does: Evaluate through the JudgeService it was given.
    JudgeResult r = static_cast<JudgeService&>(queue).Evaluate(CpuRequest());
    EXPECT_EQ(r.reward, 1);
  }
  place.reset();  // consumed: dropping it gives nothing back twice
  EXPECT_EQ(queue.QueueDepth(), 0u);
  EXPECT_TRUE(queue.Admit("cpu", &retry));
  // Without a lent place, Evaluate waits for a worker like any judgement.
  JudgeResult r = queue.Evaluate(CpuRequest());
  EXPECT_EQ(r.reward, 1);
}

}  // namespace
}  // namespace cuda_agent
