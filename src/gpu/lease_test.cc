// lease_test.cc — shared leases coexist; an exclusive one waits for them and holds back new ones; a
// lease reports its end before the next holder can have it; gathering timings let shared leases
// start until K wait or T passes, then run as a batch before any new shared lease.
#include "gpu/lease.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>

namespace cuda_agent {
namespace {

using std::chrono::milliseconds;

fs::path LeaseDir() {
  Result<fs::path> dir = MakeTempDir(fs::temp_directory_path(), "lease-test");
  EXPECT_TRUE(dir.ok());
  return dir.value();
}

TEST(DeviceLease, SharedLeasesCoexist) {
  fs::path dir = LeaseDir();
  Result<DeviceLease> a = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
  Result<DeviceLease> b = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(b.ok());
  fs::remove_all(dir);
}

TEST(DeviceLease, ExclusiveWaitsForSharedAndHoldsBackNewShared) {
  fs::path dir = LeaseDir();
  std::optional<Result<DeviceLease>> reader(DeviceLease::Acquire("gpu", LeaseMode::kShared, dir));
  ASSERT_TRUE(reader->ok());
  std::atomic<bool> writer_waiting{false}, writer_has{false}, late_reader_has{false},
      writer_done{false};
  std::thread writer([&] {
    writer_waiting = true;
    Result<DeviceLease> w = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir);
    writer_has = w.ok();
    std::this_thread::sleep_for(milliseconds(100));
    writer_done = true;
  });
  while (!writer_waiting) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(writer_has) << "an exclusive lease was granted while a shared one was held";
  std::thread late_reader([&] {
    Result<DeviceLease> r = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
    // Granted only after the waiting exclusive lease had its turn.
    late_reader_has = r.ok() && writer_done;
  });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(writer_has);
  reader.reset();  // the first shared lease ends: the exclusive one goes first
  writer.join();
  late_reader.join();
  EXPECT_TRUE(writer_has);
  EXPECT_TRUE(late_reader_has) << "a new shared lease overtook the waiting exclusive one";
  fs::remove_all(dir);
}

TEST(DeviceLease, DeviceIdleSeesEveryLeaseHeldOrAskedFor) {
  fs::path dir = LeaseDir();
  EXPECT_TRUE(DeviceIdle("gpu", dir)) << "no lease was ever asked for";
  std::optional<Result<DeviceLease>> reader(DeviceLease::Acquire("gpu", LeaseMode::kShared, dir));
  ASSERT_TRUE(reader->ok());
  EXPECT_FALSE(DeviceIdle("gpu", dir)) << "a shared lease is held";
  EXPECT_TRUE(DeviceIdle("other", dir)) << "another device's leases";
  std::atomic<bool> asked{false}, granted{false}, release{false};
  std::thread timing([&] {
    asked = true;
    Result<DeviceLease> t = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir);
    granted = t.ok();
    while (!release) std::this_thread::sleep_for(milliseconds(1));
  });
  while (!asked) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_FALSE(granted);
  reader.reset();
  while (!granted) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_FALSE(DeviceIdle("gpu", dir)) << "a timing holds the device";
  release = true;
  timing.join();
  EXPECT_TRUE(DeviceIdle("gpu", dir));
  // The look leaves nothing held: an exclusive lease is granted at once after it.
  Result<DeviceLease> after = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir);
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->waited_seconds(), 0.5);
  fs::remove_all(dir);
}

TEST(DeviceLease, DeviceIdleSeesATimingThatWaitsHoldingTheGate) {
  fs::path dir = LeaseDir();
  // The gate held exclusively by hand, as a timing holds it while it waits for shared leases.
  ASSERT_TRUE(DeviceLease::Acquire("gpu", LeaseMode::kShared, dir).ok());  // makes the files
  EXPECT_TRUE(DeviceIdle("gpu", dir));
  int gate = open((dir / "gpu.gate").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(gate, 0);
  ASSERT_EQ(flock(gate, LOCK_EX), 0);
  EXPECT_FALSE(DeviceIdle("gpu", dir)) << "a timing waits for the device";
  close(gate);
  EXPECT_TRUE(DeviceIdle("gpu", dir));
  fs::remove_all(dir);
}

TEST(DeviceLeaseGather, DeviceIdleSeesATimingThatGathersWithoutTheGate) {
  fs::path dir = LeaseDir();
  LeaseGather gather{2, 30};
  std::optional<Result<DeviceLease>> reader(DeviceLease::Acquire("gpu", LeaseMode::kShared, dir));
  ASSERT_TRUE(reader->ok());
  std::atomic<bool> done{false};
  std::thread timing([&] {
    (void)DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir, &gather);
    done = true;
  });
  std::this_thread::sleep_for(milliseconds(150));
  ASSERT_FALSE(done);
  reader.reset();
  timing.join();
  EXPECT_TRUE(DeviceIdle("gpu", dir));
  fs::remove_all(dir);
}

TEST(DeviceLease, ReleaseIsReportedBeforeTheNextHolderIsGranted) {
  fs::path dir = LeaseDir();
  std::atomic<bool> reported{false}, next_saw_report{false};
  std::thread next;
  {
    Result<DeviceLease> l = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->mode(), LeaseMode::kExclusive);
    l->OnRelease([&] {
      std::this_thread::sleep_for(milliseconds(50));  // a report that takes a while
      reported = true;
    });
    next = std::thread([&] {
      Result<DeviceLease> n = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
      next_saw_report = n.ok() && reported;
    });
    std::this_thread::sleep_for(milliseconds(50));
    DeviceLease moved(std::move(l).value());  // the report moves with the lease
    EXPECT_FALSE(reported);
  }
  EXPECT_TRUE(reported);
  next.join();
  EXPECT_TRUE(next_saw_report) << "the next holder was granted before the end was reported";
  fs::remove_all(dir);
}

TEST(DeviceLeaseGather, ParsesKAndT) {
  Result<LeaseGather> g = ParseLeaseGather("4,2.5");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->timings, 4);
  EXPECT_DOUBLE_EQ(g->max_wait_s, 2.5);
  EXPECT_FALSE(ParseLeaseGather("")->on());
  EXPECT_FALSE(ParseLeaseGather("0")->on());
  for (const char* bad : {"4", "x,2", "0,1", "4,0", "4,-1", "4,2s", ",2", "4,"}) {
    Result<LeaseGather> b = ParseLeaseGather(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("--lease-gather"), std::string::npos);
    EXPECT_NE(b.status().message().find("e.g. 4,2"), std::string::npos);
  }
}

TEST(DeviceLeaseGather, AnIdleDeviceIsGrantedAtOnce) {
  fs::path dir = LeaseDir();
  LeaseGather gather{8, 30};
  Result<DeviceLease> l = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir, &gather);
  ASSERT_TRUE(l.ok());
  EXPECT_LT(l->waited_seconds(), 1.0);
  fs::remove_all(dir);
}

TEST(DeviceLeaseGather, SharedLeasesStartWhileTimingsGatherThenTheBatchGoesFirst) {
  fs::path dir = LeaseDir();
  LeaseGather gather{2, 30};
  std::optional<Result<DeviceLease>> reader(DeviceLease::Acquire("gpu", LeaseMode::kShared, dir));
  ASSERT_TRUE(reader->ok());
  std::atomic<int> timings_done{0};
  std::atomic<bool> first_has{false}, late_reader_has{false};
  auto timing = [&](std::atomic<bool>* has) {
    Result<DeviceLease> t = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir, &gather);
    if (has != nullptr) *has = t.ok();
    std::this_thread::sleep_for(milliseconds(50));
    ++timings_done;
  };
  std::thread first(timing, &first_has);
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(first_has) << "a timing was granted while a shared lease was held";
  // One timing gathers (K = 2): a new shared lease still starts, beside the running one.
  std::optional<Result<DeviceLease>> second_reader(
      DeviceLease::Acquire("gpu", LeaseMode::kShared, dir));
  ASSERT_TRUE(second_reader->ok());
  EXPECT_LT((*second_reader)->waited_seconds(), 1.0);
  // A second timing makes K: both queue, and the next shared lease waits for the batch.
  std::thread second(timing, nullptr);
  std::this_thread::sleep_for(milliseconds(150));
  std::thread late_reader([&] {
    Result<DeviceLease> r = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
    late_reader_has = r.ok() && timings_done == 2;
  });
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(timings_done, 0);
  reader.reset();
  second_reader.reset();  // the shared leases end: the two timings run, one after the other
  first.join();
  second.join();
  late_reader.join();
  EXPECT_TRUE(first_has);
  EXPECT_TRUE(late_reader_has) << "a shared lease started before the batch of timings had run";
  fs::remove_all(dir);
}

TEST(DeviceLeaseGather, TheOldestTimingStopsGatheringAfterT) {
  fs::path dir = LeaseDir();
  LeaseGather gather{8, 0.2};
  std::optional<Result<DeviceLease>> reader(DeviceLease::Acquire("gpu", LeaseMode::kShared, dir));
  ASSERT_TRUE(reader->ok());
  std::atomic<bool> timing_done{false}, late_reader_after{false};
  std::thread timing([&] {
    Result<DeviceLease> t = DeviceLease::Acquire("gpu", LeaseMode::kExclusive, dir, &gather);
    EXPECT_TRUE(t.ok());
    std::this_thread::sleep_for(milliseconds(50));
    timing_done = true;
  });
  std::this_thread::sleep_for(milliseconds(500));  // past T: the timing is queued now
  std::thread late_reader([&] {
    Result<DeviceLease> r = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
    late_reader_after = r.ok() && timing_done;
  });
  std::this_thread::sleep_for(milliseconds(100));
  reader.reset();
  timing.join();
  late_reader.join();
  EXPECT_TRUE(late_reader_after) << "a shared lease overtook a timing that had waited T";
  fs::remove_all(dir);
}

TEST(DeviceLeaseGather, AMarkWhoseOwnerDiedHoldsNothingBack) {
  fs::path dir = LeaseDir();
  fs::create_directories(dir / "gpu.queued");
  std::ofstream(dir / "gpu.queued" / "12345-0") << "";  // nobody holds it: its owner died
  Result<DeviceLease> r = DeviceLease::Acquire("gpu", LeaseMode::kShared, dir);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->waited_seconds(), 1.0);
  EXPECT_FALSE(fs::exists(dir / "gpu.queued" / "12345-0"));
  fs::remove_all(dir);
}

TEST(DeviceLease, KeysNameTheDevice) {
  EXPECT_EQ(LeaseKey(Device::kCpu), "cpu");
  EXPECT_EQ(LeaseKey(Device::kCuda).rfind("cuda-", 0), 0u);
}

}  // namespace
}  // namespace cuda_agent
