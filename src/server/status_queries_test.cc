// status_queries_test.cc — the status page's JSON from a real store and registry: only open
// sessions are listed (Live::IsOpen, so the count and the table agree), recent judgements newest
// first with their task labels and reasons, judgements bucketed per 5 minutes, the call rate.
#include "server/status_queries.h"

#include <gtest/gtest.h>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

TEST(StatusQueries, GathersThePage) {
  TestDir tmp("status-queries");
  Result<std::unique_ptr<SessionStore>> opened = SessionStore::Open(tmp.path() / "server.sqlite");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  SessionStore& store = *opened.value();
  const double now = 1'000'000;

  SessionRegistry registry(8, [](Live&) {});
  for (const char* id : {"s_open", "s_graded"}) {
    auto r = std::make_shared<Live>();
    r->id = id;
    r->task = "examples/relu_scale/model.py";
    r->device = "cpu";
    r->turn_limit = 9;
    r->expires_at = now + 30;
    registry.Restore(r);
  }
  std::shared_ptr<Live> graded = registry.Acquire("s_graded");
  registry.SetStatus(*graded, "graded");
  registry.Release(*graded);

  SessionRow row;
  row.id = "s_graded";
  row.task = R"({"source": "...", "name": "mine.py"})";
  ASSERT_TRUE(store.AddSession(row).ok());
  ASSERT_TRUE(store.PutGrade("s_graded", "2", R"({"reason": "2.1x faster"})", now - 10).ok());
  ASSERT_TRUE(store.AddJob("j_1", R"("suite#relu")", "cpu", "strict", now - 900).ok());
  ASSERT_TRUE(store.FinishJob("j_1", "null", R"({"reason": "wrong output"})", now - 400).ok());
  ASSERT_TRUE(store.AddJob("j_2", R"("suite#gelu")", "cpu", "strict", now - 20).ok());  // running

  CallMeter calls;
  calls.Record(now - 120);  // older than a minute: not counted
  calls.Record(now - 5);
  calls.Record(now - 1);

  Json page = StatusPageJson({registry, store, calls, Json{{"version", "t"}}, now - 60}, now);
  EXPECT_EQ(page["health"]["version"], "t");
  EXPECT_EQ(page["uptime_s"], 60);
  EXPECT_EQ(page["calls_last_minute"], 2);
  ASSERT_EQ(page["sessions"].size(), 1u);
  EXPECT_EQ(page["sessions"][0]["session_id"], "s_open");
  EXPECT_EQ(page["sessions"][0]["expires_in_s"], 30);
  EXPECT_EQ(page["sessions"][0]["busy"], false);

  const Json& recent = page["recent_grades"];
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0]["session_id"], "s_graded");
  EXPECT_EQ(recent[0]["task"], "mine.py");
  EXPECT_EQ(recent[0]["reward"], 2);
  EXPECT_EQ(recent[0]["reason"], "2.1x faster");
  EXPECT_EQ(recent[1]["job_id"], "j_1");
  EXPECT_EQ(recent[1]["task"], "suite#relu");
  EXPECT_TRUE(recent[1]["reward"].is_null());

  // Buckets of 5 minutes, oldest first: the grade 10 s ago in the last, the job 400 s ago in the
  // one before it.
  const Json& counts = page["throughput"]["counts"];
  ASSERT_EQ(counts.size(), static_cast<size_t>(kThroughputBuckets));
  EXPECT_EQ(counts[kThroughputBuckets - 1], 1);
  EXPECT_EQ(counts[kThroughputBuckets - 2], 1);
  EXPECT_EQ(page["throughput"]["bucket_s"], kThroughputBucketS);

  EXPECT_EQ(TaskLabel(R"({"source": "x"})"), "(inline task)");
  EXPECT_EQ(TaskLabel("not json"), "not json");
}

}  // namespace
}  // namespace cuda_agent
