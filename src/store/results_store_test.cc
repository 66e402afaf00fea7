// results_store_test.cc — run records survive reopening, runs stay apart, writes from many threads,
// a file of before schema versions is migrated with its records and a newer one refused.
#include "store/results_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class ResultsStoreTest : public ::testing::Test {
 protected:
  TestDir tmp_{"results-store"};
  const fs::path& dir_ = tmp_.path();
};

TEST_F(ResultsStoreTest, RecordsSurviveReopeningAndRunsStayApart) {
  {
    Result<ResultsStore> store = ResultsStore::Open(dir_ / "s.sqlite");
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE(store->BeginRun("bench-a", {{"suite", "x"}}).ok());
    ASSERT_TRUE(store->BeginRun("bench-a", {{"suite", "changed"}}).ok());  // the first one stays
    ASSERT_TRUE(store->Put("bench-a", "t1", {{"status", "failed"}}).ok());
    ASSERT_TRUE(store->Put("bench-a", "t1", {{"status", "correct"}}).ok());  // replaces
    ASSERT_TRUE(store->Put("bench-b", "t1", {{"status", "missing"}}).ok());
  }
  Result<ResultsStore> store = ResultsStore::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store->RunDescription("bench-a"))["suite"], "x");
  EXPECT_FALSE(store->RunDescription("bench-c").has_value());
  auto a = store->Records("bench-a");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ(a->at("t1")["status"], "correct");
  ASSERT_TRUE(store->ClearRun("bench-a").ok());
  EXPECT_TRUE(store->Records("bench-a")->empty());
  EXPECT_EQ(store->Records("bench-b")->size(), 1u);
}

TEST_F(ResultsStoreTest, MigratesAFileOfBeforeVersionsAndRefusesANewerOne) {
  // The file as `bench` wrote it before schema versions: its tables and a record.
  {
    Result<Database> db = Database::Open(dir_ / "old.sqlite");
    ASSERT_TRUE(db.ok());
    for (const char* sql :
         {"CREATE TABLE bench_runs (run_id TEXT PRIMARY KEY, description TEXT NOT NULL,"
          " created_at TEXT NOT NULL)",
          "CREATE TABLE bench_results (run_id TEXT NOT NULL, task_id TEXT NOT NULL,"
          " record TEXT NOT NULL, finished_at TEXT NOT NULL, PRIMARY KEY (run_id, task_id))",
          "INSERT INTO bench_results VALUES ('bench-a', 't1', '{\"status\": \"correct\"}', 'x')"}) {
      ASSERT_TRUE(db->Exec(sql).ok()) << sql;
    }
  }
  {
    Result<ResultsStore> store = ResultsStore::Open(dir_ / "old.sqlite");
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_EQ(store->Records("bench-a")->at("t1")["status"], "correct");
  }
  Result<Database> db = Database::Open(dir_ / "old.sqlite");
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(SchemaVersion(db.value(), ResultsStore::kSchema).value(),
            static_cast<int>(ResultsStore::Migrations().size()));
  ASSERT_TRUE(
      db->Exec("UPDATE schema_versions SET version = version + 1 WHERE schema = 'bench'").ok());
  Result<ResultsStore> newer = ResultsStore::Open(dir_ / "old.sqlite");
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("newer than this cuda-agent knows"), std::string::npos)
      << newer.status().message();
}

TEST_F(ResultsStoreTest, ConcurrentWritersLoseNothing) {
  Result<ResultsStore> store = ResultsStore::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(store.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string id = std::to_string(t) + "-" + std::to_string(i);
        EXPECT_TRUE(store->Put("run", id, {{"i", i}}).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store->Records("run")->size(), 100u);
}

TEST(RunIdTest, SameCommandSameIdAnyChangeAnother) {
  std::string id = MakeRunId("bench", {"/suite", "solutions:/s", "strict", "cpu"});
  EXPECT_EQ(id, MakeRunId("bench", {"/suite", "solutions:/s", "strict", "cpu"}));
  EXPECT_EQ(id.rfind("bench-", 0), 0u);
  EXPECT_EQ(id.size(), 6u + 16u);
  EXPECT_NE(id, MakeRunId("bench", {"/suite", "solutions:/s", "paper", "cpu"}));
  EXPECT_NE(MakeRunId("bench", {"ab", "c"}), MakeRunId("bench", {"a", "bc"}));
}

}  // namespace
}  // namespace cuda_agent
