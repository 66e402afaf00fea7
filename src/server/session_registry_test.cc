// session_registry_test.cc — the --max-sessions bound counts open and opening sessions (not graded
// ones), busy sessions are never reaped, idle ones past their TTL go to `expire` (also from the
// reaper's own thread), Remove and WaitIdle. No agent Session is needed: the registry only keeps
// the records.
#include "server/session_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace cuda_agent {
namespace {

std::shared_ptr<Live> Record(const std::string& id, double ttl_s) {
  auto r = std::make_shared<Live>();
  r->id = id;
  r->ttl_s = ttl_s;
  r->expires_at = 1e18;  // not before its first use
  return r;
}

TEST(SessionRegistry, BoundsOpenAndOpeningSessionsButNotGradedOnes) {
  SessionRegistry registry(2, [](Live&) {});
  size_t open = 0;
  ASSERT_TRUE(registry.Reserve(&open));
  registry.Add(Record("a", 60));
  ASSERT_TRUE(registry.Reserve(&open));  // "b" is being opened: it counts already
  size_t at_refusal = 0;
  EXPECT_FALSE(registry.Reserve(&at_refusal));
  EXPECT_EQ(at_refusal, 2u);
  registry.Unreserve();  // "b" failed to open
  ASSERT_TRUE(registry.Reserve(&open));
  registry.Add(Record("b", 60));
  EXPECT_EQ(registry.OpenCount(), 2u);
  // A graded session stays live (its folder is kept) but is not open: it frees a place.
  std::shared_ptr<Live> a = registry.Acquire("a");
  ASSERT_TRUE(a);
  registry.SetStatus(*a, "graded");
  registry.Release(*a);
  EXPECT_EQ(registry.OpenCount(), 1u);
  ASSERT_EQ(registry.Open().size(), 1u);
  EXPECT_EQ(registry.Open()[0].id, "b");
  EXPECT_EQ(registry.All().size(), 2u);
  EXPECT_TRUE(registry.Reserve(&open));
}

TEST(SessionRegistry, ReapsIdleSessionsPastTheirTtlButNeverBusyOnes) {
  std::vector<std::string> expired;
  SessionRegistry registry(8, [&](Live& r) { expired.push_back(r.id); });
  registry.Restore(Record("idle", 0.01));
  registry.Restore(Record("busy", 0.01));
  registry.Restore(Record("fresh", 3600));
  for (const char* id : {"idle", "fresh"}) {  // their TTLs start
    registry.Release(*registry.Acquire(id));
  }
  std::shared_ptr<Live> busy = registry.Acquire("busy");
  EXPECT_EQ(registry.View(*busy).busy, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  registry.Reap();
  EXPECT_EQ(expired, std::vector<std::string>{"idle"});
  EXPECT_FALSE(registry.Find("idle"));
  EXPECT_TRUE(registry.Find("busy"));
  EXPECT_TRUE(registry.Find("fresh"));
  // Released, its TTL starts again: not expired at once, then expired.
  registry.Release(*busy);
  registry.Reap();
  EXPECT_EQ(expired.size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  registry.Reap();
  EXPECT_EQ(expired, (std::vector<std::string>{"idle", "busy"}));
}

TEST(SessionRegistry, TheReaperThreadExpiresAndCheckpoints) {
  std::atomic<int> expired{0}, ticks{0};
  SessionRegistry registry(8, [&](Live&) { ++expired; });
  registry.Restore(Record("s", 0.01));
  registry.Release(*registry.Acquire("s"));
  registry.StartReaper(0.01, [&] { ++ticks; });
  for (int i = 0; i < 500 && (expired == 0 || ticks < 2); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  registry.StopReaper();
  EXPECT_EQ(expired, 1);
  EXPECT_GE(ticks, 2);
}

TEST(SessionRegistry, RemoveHandsTheSessionOverBusyAndWaitIdleWaitsForIt) {
  SessionRegistry registry(8, [](Live&) {});
  registry.Restore(Record("s", 60));
  EXPECT_FALSE(registry.Remove("unknown"));
  std::shared_ptr<Live> s = registry.Remove("s");
  ASSERT_TRUE(s);
  EXPECT_FALSE(registry.Find("s"));
  EXPECT_EQ(registry.WaitIdle(0.01), 1);  // still held
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    registry.Release(*s);
  });
  EXPECT_EQ(registry.WaitIdle(10), 0);
  releaser.join();
  EXPECT_EQ(registry.CountCall(*s), 1);
  EXPECT_EQ(registry.CountCall(*s), 2);
}

}  // namespace
}  // namespace cuda_agent
