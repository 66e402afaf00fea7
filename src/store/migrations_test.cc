// migrations_test.cc — steps run once and in order, the version is recorded per schema, a failed
// step leaves the file as it was, misnumbered steps and a file from a newer binary are refused.
#include "store/migrations.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

int64_t Count(Database& db, const std::string& table) {
  Result<std::vector<Row>> rows = db.Query("SELECT COUNT(*) FROM " + table);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? std::get<int64_t>(rows->front()[0]) : -1;
}

const std::vector<Migration> kTwoSteps = {
    {1, "a table", {"CREATE TABLE t (k TEXT PRIMARY KEY)", "INSERT INTO t VALUES ('one')"}},
    {2, "a second row", {"INSERT INTO t VALUES ('two')"}},
};

class MigrationsTest : public ::testing::Test {
 protected:
  TestDir tmp_{"migrations"};
  Database Open() {
    Result<Database> db = Database::Open(tmp_.path() / "m.sqlite");
    EXPECT_TRUE(db.ok()) << db.status().message();
    return std::move(db).value();
  }
};

TEST_F(MigrationsTest, RunsEachStepOnceAndRecordsTheVersion) {
  Database db = Open();
  EXPECT_EQ(SchemaVersion(db, "example").value(), 0);
  // Only the first step: version 1, one row.
  ASSERT_TRUE(Migrate(db, "example", {kTwoSteps[0]}).ok());
  EXPECT_EQ(SchemaVersion(db, "example").value(), 1);
  EXPECT_EQ(Count(db, "t"), 1);
  // The binary learns step 2: only it runs; opening again runs nothing.
  ASSERT_TRUE(Migrate(db, "example", kTwoSteps).ok());
  ASSERT_TRUE(Migrate(db, "example", kTwoSteps).ok());
  EXPECT_EQ(SchemaVersion(db, "example").value(), 2);
  EXPECT_EQ(Count(db, "t"), 2);
  // Another schema in the same file has a version of its own.
  EXPECT_EQ(SchemaVersion(db, "other").value(), 0);
  ASSERT_TRUE(Migrate(db, "other", {{1, "u", {"CREATE TABLE u (x)"}}}).ok());
  EXPECT_EQ(SchemaVersion(db, "other").value(), 1);
  EXPECT_EQ(SchemaVersion(db, "example").value(), 2);
}

TEST_F(MigrationsTest, AFailedStepLeavesTheFileAsItWas) {
  Database db = Open();
  ASSERT_TRUE(Migrate(db, "example", {kTwoSteps[0]}).ok());
  std::vector<Migration> broken = kTwoSteps;
  broken[1].statements = {"INSERT INTO t VALUES ('two')", "INSERT INTO nowhere VALUES (1)"};
  Status s = Migrate(db, "example", broken);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("step 2 (a second row)"), std::string::npos) << s.message();
  EXPECT_EQ(SchemaVersion(db, "example").value(), 1);
  EXPECT_EQ(Count(db, "t"), 1);  // step 2's first statement was rolled back with it
}

TEST_F(MigrationsTest, RefusesAFileFromANewerBinary) {
  {
    Database db = Open();
    ASSERT_TRUE(Migrate(db, "example", kTwoSteps).ok());
  }
  Database db = Open();
  Status s = Migrate(db, "example", {kTwoSteps[0]});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("version 2, newer than this cuda-agent knows (1)"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("m.sqlite"), std::string::npos) << s.message();
  EXPECT_EQ(SchemaVersion(db, "example").value(), 2);  // never downgraded
}

TEST_F(MigrationsTest, RefusesMisnumberedSteps) {
  Database db = Open();
  Status s = Migrate(db, "example", {kTwoSteps[1]});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("numbered 1, 2"), std::string::npos) << s.message();
  EXPECT_EQ(SchemaVersion(db, "example").value(), 0);
}

}  // namespace
}  // namespace cuda_agent
