// group_commit_test.cc — many writers' statements all committed, in fewer transactions than
// statements when they overlap; a failing statement fails alone; the rows survive a reopen.
#include "store/group_commit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

namespace cuda_agent {
namespace {

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("group-commit-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

int64_t CountRows(const fs::path& path) {
  Result<Database> db = Database::Open(path);
  EXPECT_TRUE(db.ok());
  Result<std::vector<Row>> rows = db->Query("SELECT COUNT(*) FROM t");
  EXPECT_TRUE(rows.ok());
  return std::get<int64_t>(rows.value()[0][0]);
}

TEST_F(GroupCommitTest, EveryWriteOfManyThreadsIsCommittedInFewerBatches) {
  Result<Database> db = Database::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(db.ok()) << db.status().message();
  ASSERT_TRUE(db->Exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)").ok());
  std::mutex db_mutex;
  GroupCommit writer(db.value(), db_mutex);
  constexpr int kThreads = 16, kEach = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Status s = writer.Write("INSERT INTO t (k, v) VALUES (?, ?)",
                                {std::to_string(t) + "/" + std::to_string(i), int64_t{i}});
        if (!s.ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(writer.statements(), uint64_t{kThreads * kEach});
  EXPECT_LT(writer.batches(), writer.statements()) << "concurrent writers share transactions";
  EXPECT_EQ(CountRows(dir_ / "s.sqlite"), kThreads * kEach) << "committed: visible to a new reader";
}

TEST_F(GroupCommitTest, AFailingStatementFailsAloneAndTheOthersCommit) {
  Result<Database> db = Database::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)").ok());
  ASSERT_TRUE(db->Exec("INSERT INTO t (k, v) VALUES ('taken', 0)").ok());
  std::mutex db_mutex;
  GroupCommit writer(db.value(), db_mutex);
  std::vector<std::thread> threads;
  std::atomic<int> duplicate_failures{0}, other_failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const bool duplicate = t == 0 && i % 10 == 0;
        Status s = writer.Write(
            "INSERT INTO t (k, v) VALUES (?, ?)",
            {duplicate ? std::string("taken") : std::to_string(t) + "/" + std::to_string(i),
             int64_t{i}});
        if (!s.ok()) ++(duplicate ? duplicate_failures : other_failures);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(duplicate_failures.load(), 5);
  EXPECT_EQ(other_failures.load(), 0);
  EXPECT_EQ(CountRows(dir_ / "s.sqlite"), 1 + 8 * 50 - 5);
}

}  // namespace
}  // namespace cuda_agent
