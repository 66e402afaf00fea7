// session_store_test.cc — a server.sqlite written before schema versions (version 0) is migrated
// with its sessions, calls, grades and jobs kept; a newer file is refused; what the server writes
// reads back (replayed calls, grades, jobs, the status page's recent judgements and times).
#include "store/session_store.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class SessionStoreTest : public ::testing::Test {
 protected:
  TestDir tmp_{"session-store"};
  fs::path path_ = tmp_.path() / "server.sqlite";

  std::unique_ptr<SessionStore> Open() {
    Result<std::unique_ptr<SessionStore>> store = SessionStore::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
  }
};

// The schema as `serve` created it before versions existed, written here as it was (not from the
// store's first step), with one row per table.
void WriteVersionZeroFile(const fs::path& path) {
  Result<Database> db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status().message();
  for (const char* sql : {
           "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, task TEXT, task_spec TEXT, "
           "device TEXT, policy TEXT, turn_limit INTEGER, ttl_s REAL, created_at REAL, expires_at "
           "REAL, status TEXT, dir TEXT, task_dir TEXT, reason TEXT)",
           "CREATE TABLE IF NOT EXISTS calls (session_id TEXT, call_id TEXT, seq INTEGER, tool "
           "TEXT, arguments TEXT, text TEXT, is_error INTEGER, at REAL, PRIMARY KEY (session_id, "
           "call_id))",
           "CREATE TABLE IF NOT EXISTS grades (session_id TEXT PRIMARY KEY, reward TEXT, result "
           "TEXT, at REAL)",
           "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, task TEXT, device TEXT, policy "
           "TEXT, status TEXT, reward TEXT, result TEXT, created_at REAL, finished_at REAL)",
           "INSERT INTO sessions VALUES ('s_old', '\"examples/relu_scale/model.py\"', "
           "'examples/relu_scale/model.py', 'cpu', 'strict', 150, 3600, 100, 3700, 'open', "
           "'/tmp/s_old', '', '')",
           "INSERT INTO calls VALUES ('s_old', 'c1', 1, 'Read', '{}', 'hello', 0, 101)",
           "INSERT INTO grades VALUES ('s_old', '2.5', '{\"reason\": \"fast\"}', 102)",
           "INSERT INTO jobs VALUES ('j_old', '\"t.py\"', 'cpu', 'strict', 'running', 'null', "
           "'null', 103, 0)",
       }) {
    ASSERT_TRUE(db->Exec(sql).ok()) << sql;
  }
}

TEST_F(SessionStoreTest, MigratesAVersionZeroFileKeepingItsRows) {
  WriteVersionZeroFile(path_);
  std::unique_ptr<SessionStore> store = Open();
  ASSERT_TRUE(store);
  Result<std::optional<SessionRow>> session = store->Session("s_old");
  ASSERT_TRUE(session.ok() && session.value());
  EXPECT_EQ(session.value()->status, "open");
  EXPECT_EQ(session.value()->turn_limit, 150);
  EXPECT_EQ(session.value()->dir, "/tmp/s_old");
  std::optional<CallRow> call = store->Call("s_old", "c1");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->text, "hello");
  EXPECT_EQ(store->CallsUsed("s_old"), 1);
  ASSERT_TRUE(store->Grade("s_old"));
  EXPECT_EQ(store->Grade("s_old")->reward, "2.5");
  EXPECT_EQ(store->Job("j_old").value()->status, "running");
  store.reset();

  // The file now records the last version, and step 2's indexes exist.
  Result<Database> db = Database::Open(path_);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(SchemaVersion(db.value(), SessionStore::kSchema).value(),
            static_cast<int>(SessionStore::Migrations().size()));
  Result<std::vector<Row>> indexes = db->Query(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('grades_by_time', "
      "'jobs_by_status_time')");
  ASSERT_TRUE(indexes.ok());
  EXPECT_EQ(indexes->size(), 2u);
}

TEST_F(SessionStoreTest, RefusesAFileOfANewerVersion) {
  ASSERT_TRUE(Open());
  {
    Result<Database> db = Database::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("UPDATE schema_versions SET version = 99 WHERE schema = ?",
                         {std::string(SessionStore::kSchema)})
                    .ok());
  }
  Result<std::unique_ptr<SessionStore>> store = SessionStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("server schema is at version 99, newer"),
            std::string::npos)
      << store.status().message();
}

TEST_F(SessionStoreTest, WritesReadBack) {
  std::unique_ptr<SessionStore> store = Open();
  ASSERT_TRUE(store);
  SessionRow row;
  row.id = "s_1";
  row.task = R"({"source": "...", "name": "mine"})";
  row.status = "open";
  row.dir = "/tmp/s_1";
  row.turn_limit = 4;
  ASSERT_TRUE(store->AddSession(row).ok());
  ASSERT_TRUE(store
                  ->AddCall({.session_id = "s_1",
                             .call_id = "c1",
                             .seq = 1,
                             .tool = "Bash",
                             .arguments = "{}",
                             .text = "first",
                             .is_error = true,
                             .at = 10})
                  .ok());
  // A repeated call id keeps its first answer.
  ASSERT_TRUE(store
                  ->AddCall({.session_id = "s_1",
                             .call_id = "c1",
                             .seq = 2,
                             .tool = "Bash",
                             .arguments = "{}",
                             .text = "second",
                             .is_error = false,
                             .at = 11})
                  .ok());
  EXPECT_EQ(store->Call("s_1", "c1")->text, "first");
  EXPECT_TRUE(store->Call("s_1", "c1")->is_error);
  EXPECT_EQ(store->CallIds("s_1").value().size(), 1u);
  EXPECT_EQ(store->Resumable().value().size(), 1u);

  ASSERT_TRUE(store->PutGrade("s_1", "1", R"({"reason": "correct"})", 500).ok());
  ASSERT_TRUE(store->SetSessionStatus("s_1", "graded").ok());
  ASSERT_TRUE(store->AddJob("j_1", R"("t.py")", "cpu", "strict", 400).ok());
  ASSERT_TRUE(store->AddJob("j_2", R"("u.py")", "cpu", "strict", 400).ok());
  ASSERT_TRUE(store->FinishJob("j_1", "null", R"({"reason": "slow"})", 600).ok());
  ASSERT_TRUE(store->InterruptUnfinishedJobs(700).ok());
  EXPECT_EQ(store->Job("j_2").value()->status, "interrupted");
  ASSERT_TRUE(store->RemoveJob("j_2").ok());
  EXPECT_FALSE(store->Job("j_2").value());

  // Newest first: the job (600) before the grade (500); the grade carries its session's task.
  std::vector<JudgementRow> recent = store->RecentJudgements(10).value();
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_TRUE(recent[0].is_job);
  EXPECT_EQ(recent[0].reason, "slow");
  EXPECT_FALSE(recent[1].is_job);
  EXPECT_EQ(recent[1].task, row.task);
  EXPECT_EQ(recent[1].reason, "correct");
  EXPECT_EQ(store->RecentJudgements(1).value().size(), 1u);
  EXPECT_EQ(store->JudgementTimes(550).value(), std::vector<double>{600});

  ASSERT_TRUE(store->EndSession("s_1", "closed", 800).ok());
  EXPECT_EQ(store->Session("s_1").value()->expires_at, 800);
  EXPECT_TRUE(store->Resumable().value().empty());
  store->CheckpointPassive();
  EXPECT_TRUE(store->CheckpointTruncate().ok());
}

}  // namespace
}  // namespace cuda_agent
