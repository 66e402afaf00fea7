// lease_test.cc — shared leases coexist; an exclusive one waits for them and holds back new ones; a
// lease reports its end before the next holder can have it.
#include "gpu/lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

TEST(DeviceLease, KeysNameTheDevice) {
  EXPECT_EQ(LeaseKey(Device::kCpu), "cpu");
  EXPECT_EQ(LeaseKey(Device::kCuda).rfind("cuda-", 0), 0u);
}

}  // namespace
}  // namespace cuda_agent
