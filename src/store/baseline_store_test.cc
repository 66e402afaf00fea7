// baseline_store_test.cc — the baselines table: keys, replacement, unreadable entries, bad files;
// the calibration history; a file of before schema versions adopted with its rows.
#include "store/baseline_store.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/fs.h"

namespace cuda_agent {
namespace {

class BaselineStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("baseline-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  BaselineKey key_{"abc123", "NVIDIA H200", "2.11.0+cu130", "strict", "compile", 5, 20};
};

TEST_F(BaselineStoreTest, AdoptsAFileOfBeforeVersions) {
  {
    Result<Database> db = Database::Open(dir_ / "store.sqlite");
    ASSERT_TRUE(db.ok());
    for (const char* sql :
         {"CREATE TABLE baselines (task_id TEXT NOT NULL, device TEXT NOT NULL, torch_version TEXT "
          "NOT NULL, policy TEXT NOT NULL, target TEXT NOT NULL, warmup INTEGER NOT NULL, iters "
          "INTEGER NOT NULL, summary TEXT NOT NULL, measured_at TEXT NOT NULL, PRIMARY KEY "
          "(task_id, device, torch_version, policy, target, warmup, iters))",
          "CREATE TABLE calibrations (id INTEGER PRIMARY KEY, device TEXT NOT NULL, copy_us REAL, "
          "gemm_us REAL, at TEXT NOT NULL)",
          "INSERT INTO baselines VALUES ('abc123', 'NVIDIA H200', '2.11.0+cu130', 'strict', "
          "'compile', 5, 20, '{\"time_us\": 7}', '2026-01-01T00:00:00Z')"}) {
      ASSERT_TRUE(db->Exec(sql).ok()) << sql;
    }
  }
  Result<BaselineStore> store = BaselineStore::Open(dir_ / "store.sqlite");
  ASSERT_TRUE(store.ok()) << store.status().message();
  ASSERT_TRUE(store->Get(key_).has_value());
  EXPECT_EQ(store->Get(key_)->summary["time_us"], 7);
  Result<Database> db = Database::Open(dir_ / "store.sqlite");
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(SchemaVersion(db.value(), BaselineStore::kSchema).value(), 1);
}

TEST_F(BaselineStoreTest, PutThenGetAcrossConnections) {
  {
    Result<BaselineStore> store = BaselineStore::Open(dir_ / "store.sqlite");
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_FALSE(store->Get(key_).has_value());
    ASSERT_TRUE(store->Put(key_, {{"time_us", 12.5}, {"iters", 20}}).ok());
  }
  Result<BaselineStore> again = BaselineStore::Open(dir_ / "store.sqlite");
  ASSERT_TRUE(again.ok());
  std::optional<StoredBaseline> hit = again->Get(key_);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->summary["time_us"], 12.5);
  EXPECT_EQ(hit->measured_at.size(), 20u) << hit->measured_at;
}

TEST_F(BaselineStoreTest, EveryKeyFieldSeparatesEntries) {
  Result<BaselineStore> store = BaselineStore::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->Put(key_, {{"time_us", 1.0}}).ok());
  for (auto change : std::vector<void (*)(BaselineKey&)>{
           [](BaselineKey& k) { k.task_id = "other"; },
           [](BaselineKey& k) { k.device = "NVIDIA H100"; },
           [](BaselineKey& k) { k.torch_version = "2.13.0"; },
           [](BaselineKey& k) { k.policy = "paper"; }, [](BaselineKey& k) { k.target = "eager"; },
           [](BaselineKey& k) { k.warmup = 3; }, [](BaselineKey& k) { k.iters = 10; }}) {
    BaselineKey other = key_;
    change(other);
    EXPECT_FALSE(store->Get(other).has_value());
  }
}

TEST_F(BaselineStoreTest, PutReplacesAndRemoveForgets) {
  Result<BaselineStore> store = BaselineStore::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->Put(key_, {{"time_us", 1.0}}).ok());
  ASSERT_TRUE(store->Put(key_, {{"time_us", 2.0}}).ok());
  EXPECT_EQ(store->Get(key_)->summary["time_us"], 2.0);
  ASSERT_TRUE(store->Remove(key_).ok());
  EXPECT_FALSE(store->Get(key_).has_value());
}

TEST_F(BaselineStoreTest, AnEntryWithoutATimeIsAMiss) {
  Result<BaselineStore> store = BaselineStore::Open(dir_ / "s.sqlite");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->Put(key_, {{"median_wall_us", 3.0}}).ok());
  EXPECT_FALSE(store->Get(key_).has_value());
}

TEST_F(BaselineStoreTest, AFileThatIsNotADatabaseIsRefusedWithItsPath) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "junk.sqlite")
      << "this is not an SQLite file, just text that is long enough";
  Result<BaselineStore> store = BaselineStore::Open(dir_ / "junk.sqlite");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("junk.sqlite"), std::string::npos)
      << store.status().message();
}

TEST_F(BaselineStoreTest, ExportedEntriesImportElsewhereWithTheirTimes) {
  Result<BaselineStore> here = BaselineStore::Open(dir_ / "here.sqlite");
  ASSERT_TRUE(here.ok());
  BaselineKey eager = key_;
  eager.target = "eager";
  ASSERT_TRUE(here->Put(key_, {{"time_us", 7.0}}).ok());
  ASSERT_TRUE(here->Put(eager, {{"time_us", 9.0}}).ok());
  Result<std::vector<BaselineEntry>> listed = here->List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ(listed->at(0).key.target, "compile");  // key order
  Result<BaselineStore> there = BaselineStore::Open(dir_ / "there.sqlite");
  ASSERT_TRUE(there.ok());
  for (const BaselineEntry& e : listed.value()) {
    Json line = Json::parse(BaselineEntryToJson(e).dump());
    Result<BaselineEntry> back = BaselineEntryFromJson(line);
    ASSERT_TRUE(back.ok()) << back.status().message();
    back->stored.measured_at = "2026-01-02T03:04:05Z";
    ASSERT_TRUE(there->Import(back.value()).ok());
  }
  std::optional<StoredBaseline> hit = there->Get(eager);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->summary["time_us"], 9.0);
  EXPECT_EQ(hit->measured_at, "2026-01-02T03:04:05Z");
}

TEST(BaselineEntryTest, MalformedLinesNameTheField) {
  Json line = {{"task_id", "t"},     {"device", "d"},      {"torch_version", "v"},
               {"policy", "strict"}, {"target", "eager"},  {"warmup", 5},
               {"iters", 20},        {"measured_at", "x"}, {"summary", {{"time_us", 1.0}}}};
  EXPECT_TRUE(BaselineEntryFromJson(line).ok());
  Json no_iters = line;
  no_iters.erase("iters");
  EXPECT_NE(BaselineEntryFromJson(no_iters).status().message().find("iters"), std::string::npos);
  Json no_time = line;
  no_time["summary"] = Json::object();
  EXPECT_FALSE(BaselineEntryFromJson(no_time).ok());
  EXPECT_FALSE(BaselineEntryFromJson(Json::array()).ok());
}

TEST_F(BaselineStoreTest, CalibrationsAreKeptPerDeviceNewestLastAndBounded) {
  Result<BaselineStore> store = BaselineStore::Open(dir_ / "store.sqlite");
  ASSERT_TRUE(store.ok()) << store.status().message();
  const size_t total = BaselineStore::kKeptCalibrations + 10;
  for (size_t i = 0; i < total; ++i) {
    ASSERT_TRUE(store->AddCalibration("cpu:a", {double(i), 2.0 * i}).ok());
  }
  ASSERT_TRUE(store->AddCalibration("cpu:b", {7, 8}).ok());
  Result<std::vector<CalibrationSample>> last = store->RecentCalibrations("cpu:a", 3);
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->size(), 3u);
  EXPECT_EQ(last.value()[0].copy_us, double(total - 3));
  EXPECT_EQ(last.value()[2].copy_us, double(total - 1));
  EXPECT_EQ(last.value()[2].gemm_us, 2.0 * (total - 1));
  EXPECT_EQ(store->RecentCalibrations("cpu:a", 1000)->size(), BaselineStore::kKeptCalibrations);
  ASSERT_EQ(store->RecentCalibrations("cpu:b", 5)->size(), 1u);
  EXPECT_EQ(store->RecentCalibrations("gpu", 5)->size(), 0u);
  // Another process's store object sees them (the judge opens the file per judgement).
  Result<BaselineStore> again = BaselineStore::Open(dir_ / "store.sqlite");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->RecentCalibrations("cpu:b", 5)->front().gemm_us, 8);
}

}  // namespace
}  // namespace cuda_agent
