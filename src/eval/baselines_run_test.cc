// baselines_run_test.cc — baseline records, the summary of what cannot run, and the run id.
#include "eval/baselines_run.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

Task T(const std::string& name) {
  Task t;
  t.name = name;
  t.id = "id-" + name;
  return t;
}

JudgeResult Measured(bool compile_ok) {
  JudgeResult r;
  r.stage = Stage::kDone;
  r.reason = "baselines measured";
  r.device = "cuda";
  r.timing = {{"measure", "device"}, {"eager", {{"time_us", 12.5}}}};
  if (compile_ok) {
    r.timing["compile"] = {{"time_us", 10.0}, {"compile_seconds", 7.0}};
  } else {
    r.timing["compile_error"] = "BackendCompilerFailed";
  }
  return r;
}

TEST(BaselinesRecordTest, MeasuredCannotRunAndInternal) {
  Json rec = BaselinesRecord(Measured(true));
  EXPECT_EQ(rec["status"], "measured");
  EXPECT_TRUE(rec["ok"].get<bool>());
  EXPECT_EQ(rec["eager_us"], 12.5);
  EXPECT_EQ(rec["compile_seconds"], 7.0);
  EXPECT_EQ(rec["summary"], "eager 12.50 us, compile 10.00 us");
  rec = BaselinesRecord(Measured(false));
  EXPECT_EQ(rec["summary"],
            "eager 12.50 us, compile – (torch.compile failed: BackendCompilerFailed)");

  JudgeResult task_error;
  task_error.outcome = Outcome::kTaskError;
  task_error.reason = "task error: CUDA out of memory";
  rec = BaselinesRecord(task_error);
  EXPECT_EQ(rec["status"], "task_error");
  EXPECT_FALSE(rec["ok"].get<bool>());
  EXPECT_EQ(rec["summary"], "cannot run: task error: CUDA out of memory");
  JudgeResult internal;
  internal.outcome = Outcome::kInternalError;
  EXPECT_EQ(BaselinesRecord(internal)["status"], "internal_error");
}

TEST(BaselinesRecordTest, StoredBaselinesNeedNoMeasurement) {
  StoredBaseline eager{{{"time_us", 3.0}}, "2026-01-01T00:00:00Z"};
  Json rec = StoredBaselinesRecord(eager, std::nullopt);
  EXPECT_EQ(rec["status"], "measured");
  EXPECT_EQ(rec["eager_us"], 3.0);
  EXPECT_TRUE(rec["compile_us"].is_null());
  EXPECT_TRUE(rec["stored"].get<bool>());
  rec["task"] = {{"name", "level1/1_x"}};
  EXPECT_EQ(FormatBaselinesLine(rec), "level1/1_x: eager 3.00 us (stored earlier)");
}

TEST(BaselinesSummaryTest, ListsWhatCannotRunInSuiteOrder) {
  JudgeResult oom;
  oom.outcome = Outcome::kTaskError;
  oom.reason = "out of memory";
  JudgeResult internal;
  internal.outcome = Outcome::kInternalError;
  internal.reason = "harness missing";
  std::vector<Task> tasks = {T("a"), T("b"), T("c"), T("d"), T("e")};
  std::map<std::string, Json> records = {{"id-a", BaselinesRecord(Measured(true))},
                                         {"id-b", BaselinesRecord(oom)},
                                         {"id-c", BaselinesRecord(Measured(false))},
                                         {"id-d", BaselinesRecord(internal)}};
  Json s = BaselinesSummary(tasks, records);
  EXPECT_EQ(s["tasks"], 5);
  EXPECT_EQ(s["measured"], 2);
  EXPECT_EQ(s["pending"], 2);  // d (internal error, retried) and e (not run)
  EXPECT_EQ(s["cannot_run"], Json::parse(R"([{"task": "b", "reason": "out of memory"}])"));
  EXPECT_EQ(s["compile_failed"][0]["task"], "c");
  EXPECT_EQ(s["internal_errors"][0]["reason"], "harness missing");
}

TEST(BaselinesRunIdTest, OneRunPerDeviceTorchPolicyAndSettings) {
  BaselineKey k{"task-1", "NVIDIA H200", "2.11", "strict", "eager", 5, 20};
  BaselineKey other_task = k;
  other_task.task_id = "task-2";
  other_task.target = "compile";
  EXPECT_EQ(BaselinesRunId(k, true, true), BaselinesRunId(other_task, true, true));
  for (auto change : std::vector<void (*)(BaselineKey&)>{
           [](BaselineKey& x) { x.device = "NVIDIA H100"; },
           [](BaselineKey& x) { x.torch_version = "2.13"; },
           [](BaselineKey& x) { x.policy = "paper"; }, [](BaselineKey& x) { x.warmup = 3; },
           [](BaselineKey& x) { x.iters = 10; }}) {
    BaselineKey changed = k;
    change(changed);
    EXPECT_NE(BaselinesRunId(k, true, true), BaselinesRunId(changed, true, true));
  }
  EXPECT_NE(BaselinesRunId(k, true, true), BaselinesRunId(k, true, false));
}

}  // namespace
}  // namespace cuda_agent
