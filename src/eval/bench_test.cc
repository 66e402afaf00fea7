// bench_test.cc — records from judgements, the report model, and runs with a deterministic fake
// solver and judge: parallel jobs, resumption, retried internal errors, and a run killed with
// SIGKILL mid-way that resumes to exactly the report of an uninterrupted run.
#include "eval/bench.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>
#include <sstream>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

JudgeResult Verdict(bool correct, double cand, double eager, std::optional<double> compile) {
  JudgeResult r;
  r.outcome = Outcome::kVerdict;
  r.correct = correct;
  r.candidate = {{"dir", "/c"}, {"hash", "h1"}};
  r.env = {{"gpu", {{"name", "NVIDIA H200"}}}, {"torch_version", "2.11.0"}};
  r.stage_seconds = {{"total", 3.5}};
  if (!correct) {
    r.Fail(Stage::kVerify, "mismatch", "verification failed: check 2/5");
    return r;
  }
  r.stage = Stage::kDone;
  r.timing = {{"measure", "device"},
              {"candidate", {{"time_us", cand}}},
              {"eager", {{"time_us", eager}}},
              {"speedup_vs_eager", eager / cand}};
  if (compile) {
    r.timing["compile"] = {{"time_us", *compile}};
    r.timing["speedup_vs_compile"] = *compile / cand;
  } else {
    r.timing["compile_error"] = "torch.compile raised";
  }
  r.reward = 1;
  r.reason = "correct";
  return r;
}

Task MakeTask(const std::string& name, int level) {
  Task t;
  t.name = name;
  t.id = "id-" + name;
  t.level = level;
  return t;
}

TEST(BenchRecordTest, CorrectFailedMissingAndErrors) {
  Solution sol{"/c", "solutions folder", "", {}};
  JudgeResult ok = Verdict(true, 50, 100, 80);
  Json rec = BenchRecord(sol, &ok);
  EXPECT_EQ(rec["status"], "correct");
  EXPECT_TRUE(rec["ok"].get<bool>());
  EXPECT_EQ(rec["candidate_us"], 50.0);
  EXPECT_EQ(rec["compile_us"], 80.0);
  EXPECT_EQ(rec["env"]["gpu"], "NVIDIA H200");
  EXPECT_EQ(rec["candidate"]["hash"], "h1");
  EXPECT_EQ(rec["summary"], "correct, reward 1, 2.00x vs eager, 1.60x vs compile");

  JudgeResult bad = Verdict(false, 0, 0, 0);
  rec = BenchRecord(sol, &bad);
  EXPECT_EQ(rec["status"], "failed");
  EXPECT_EQ(rec["error_kind"], "mismatch");
  EXPECT_EQ(rec["summary"], "failed at verify: verification failed: check 2/5");

  rec = BenchRecord({{}, "no candidate: x/ does not exist", "", {}}, nullptr);
  EXPECT_EQ(rec["status"], "missing");
  EXPECT_FALSE(rec["ok"].get<bool>());
  EXPECT_TRUE(rec["candidate"].is_null());

  JudgeResult task_error;
  task_error.outcome = Outcome::kTaskError;
  task_error.reason = "task error: eager baseline failed";
  EXPECT_EQ(BenchRecord(sol, &task_error)["status"], "task_error");
  JudgeResult internal;
  internal.outcome = Outcome::kInternalError;
  internal.reason = "harness not found";
  EXPECT_EQ(BenchRecord(sol, &internal)["summary"], "internal error: harness not found");
}

TEST(BenchRecordTest, FailedCompileFallsBackToEagerInTheScore) {
  JudgeResult r = Verdict(true, 50, 100, std::nullopt);
  Json rec = BenchRecord({"/c", "", "", {}}, &r);
  rec["task"] = {{"name", "t"}, {"level", 2}};
  TaskScore s = ScoreFromRecord(rec);
  EXPECT_TRUE(s.correct);
  EXPECT_EQ(s.level, 2);
  EXPECT_EQ(*s.compile_us, 100.0);
}

TEST(BenchRecordTest, BestOfSamplesTakesTheHighestRewardThenTheFastest) {
  JudgeResult failed = Verdict(false, 0, 0, 0);
  JudgeResult slow = Verdict(true, 100, 100, 100);  // reward 1, 1x
  JudgeResult fast = Verdict(true, 50, 100, 100);   // reward 1, 2x
  fast.reward = 1;
  auto rec = [](const std::string& label, const JudgeResult& r) {
    return BenchRecord({"/run/s" + label + ".py", "", label, {}}, &r);
  };
  Json best = BestOfSamples({rec("0", failed), rec("1", slow), rec("2", fast), rec("3", slow)});
  EXPECT_EQ(best["sample"], "2");
  EXPECT_EQ(best["status"], "correct");
  EXPECT_EQ(best["candidate"]["dir"], "/run/s2.py");
  ASSERT_EQ(best["samples"].size(), 4u);
  EXPECT_EQ(best["samples"][0]["status"], "failed");
  EXPECT_EQ(best["samples"][2]["speedup_vs_eager"], 2.0);
  EXPECT_EQ(best["summary"].get<std::string>().rfind("best of 4 (sample 2): correct, reward 1", 0),
            0u)
      << best["summary"];
  // A higher reward beats a higher speedup; ties keep the first listed.
  JudgeResult two = Verdict(true, 90, 100, 100);
  two.reward = 2;
  EXPECT_EQ(BestOfSamples({rec("0", fast), rec("1", two)})["sample"], "1");
  EXPECT_EQ(BestOfSamples({rec("0", slow), rec("1", slow)})["sample"], "0");
  EXPECT_EQ(BestOfSamples({rec("0", failed), rec("1", failed)})["status"], "failed");
  // An internal error makes the task's record not final (it runs again on resume).
  JudgeResult internal;
  internal.outcome = Outcome::kInternalError;
  internal.reason = "harness not found";
  EXPECT_EQ(BestOfSamples({rec("0", two), rec("1", internal)})["status"], "internal_error");
}

TEST(BenchReportTest, CountsPendingLevelsAndFallbacksFromRecordsOnly) {
  BenchRun run{"bench-x", "/suite", "solutions:/s", "strict", "cuda", {1, 2, 3}, true, true, {}};
  std::vector<Task> tasks = {MakeTask("level1/a", 1), MakeTask("level1/b", 1),
                             MakeTask("level2/c", 2)};
  JudgeResult ok = Verdict(true, 50, 100, std::nullopt);
  std::map<std::string, Json> records = {
      {"id-level1/a", BenchRecord({"/c", "", "", {}}, &ok)},
      {"id-level1/b", BenchRecord({{}, "none", "", {}}, nullptr)}};
  Json report = BuildBenchReport(run, tasks, records);
  EXPECT_EQ(report["kind"], "bench");
  EXPECT_FALSE(report["complete"].get<bool>());
  EXPECT_EQ(report["counts"]["correct"], 1);
  EXPECT_EQ(report["counts"]["missing"], 1);
  EXPECT_EQ(report["counts"]["pending"], 1);
  EXPECT_EQ(report["tasks"][2]["status"], "pending");
  EXPECT_EQ(report["tasks"][0]["task"]["name"], "level1/a");
  EXPECT_EQ(report["run"]["levels"], Json({1, 2, 3}));
  EXPECT_EQ(report["metrics"]["levels"].size(), 3u);
  EXPECT_TRUE(report["metrics"]["levels"][2]["pass_rate"].is_null());  // level 3: empty
  EXPECT_NEAR(report["metrics"]["overall"]["pass_rate"].get<double>(), 1.0 / 3, 1e-12);
  EXPECT_EQ(report["conventions"]["compile_fallback_tasks"], Json({"level1/a"}));
  EXPECT_EQ(report["env"]["measure"], "device");
  // The compile fallback makes a (2x vs eager) also 2x vs compile.
  EXPECT_DOUBLE_EQ(report["metrics"]["levels"][0]["compile"]["geomean_correct"].get<double>(), 2.0);
}

// A deterministic fake: task i is correct unless its name ends in "x"; times depend on the name
// only.
class FakeSolver : public Solver {
 public:
  std::string Spec() const override { return "solutions:/fake"; }
  Status Check() const override { return OkStatus(); }
  Solution Solve(const Task& t) override {
    if (t.name.find("missing") != std::string::npos) return {{}, "no candidate", "", {}};
    return {"/fake/" + t.name, "fake", "", {}};
  }
};

JudgeResult FakeJudge(const Task& t) {
  double n = static_cast<double>(std::hash<std::string>{}(t.name) % 97 + 3);
  return Verdict(t.name.back() != 'x', n, 2 * n + (t.level == 2 ? 1 : -1), 1.5 * n);
}

std::vector<Task> FakeSuite() {
  std::vector<Task> tasks;
  for (int i = 0; i < 12; ++i) {
    std::string name = "level" + std::to_string(1 + i % 3) + "/t" + std::to_string(i);
    if (i % 5 == 0) name += "x";
    if (i == 7) name += "_missing";
    tasks.push_back(MakeTask(name, 1 + i % 3));
  }
  return tasks;
}

class BenchRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = {"", "/suite", "solutions:/fake", "strict", "cpu", {1, 2, 3}, true, true, {}};
    run_.run_id = BenchRunId(run_);
  }

  // Run runs the fake suite into `store_file` and returns the report without its timestamp.
  Json Run(const std::string& store_file, int jobs, const JudgeFn& judge) {
    Result<ResultsStore> store = ResultsStore::Open(dir_ / store_file);
    EXPECT_TRUE(store.ok());
    FakeSolver solver;
    std::ostringstream log;
    Status s = RunBench(run_, FakeSuite(), solver, judge, store.value(), {run_.run_id, jobs},
                        MakeLogLines(log));
    EXPECT_TRUE(s.ok()) << s.message();
    return Report(store.value());
  }
  Json Report(ResultsStore& store) {
    Json report = BuildBenchReport(run_, FakeSuite(), store.Records(run_.run_id).value());
    report.erase("generated_at");
    return report;
  }
  TestDir tmp_{"bench-run"};
  const fs::path& dir_ = tmp_.path();
  BenchRun run_;
};

TEST_F(BenchRunTest, ParallelRunJudgesEachTaskOnceAndResumesWithNothingToDo) {
  std::mutex m;
  std::multiset<std::string> judged;
  JudgeFn judge = [&](const Task& t, const fs::path&) {
    std::lock_guard<std::mutex> lock(m);
    judged.insert(t.name);
    return FakeJudge(t);
  };
  Json first = Run("s.sqlite", 4, judge);
  EXPECT_EQ(judged.size(), 11u);  // 12 tasks, one without a candidate
  for (const auto& name : judged) EXPECT_EQ(judged.count(name), 1u) << name;
  EXPECT_TRUE(first["complete"].get<bool>());
  EXPECT_EQ(first["counts"]["missing"], 1);
  Json again = Run("s.sqlite", 4, judge);
  EXPECT_EQ(judged.size(), 11u);  // nothing judged the second time
  EXPECT_EQ(first, again);
}

// A solver with several samples per task: each sample is judged, the task's record is the best.
class SamplesSolver : public Solver {
 public:
  std::string Spec() const override { return "kernelbench:/fake sample=best"; }
  Status Check() const override { return OkStatus(); }
  Solution Solve(const Task& t) override {
    Solution s{{}, "best of 3 samples", "", {}};
    for (const char* label : {"0", "1", "2"})
      s.samples.push_back({label, "/fake/" + t.name + "/" + label + ".py"});
    return s;
  }
};

TEST_F(BenchRunTest, EverySampleIsJudgedAndTheBestIsTheTasksRecord) {
  std::mutex m;
  std::multiset<std::string> judged;
  JudgeFn judge = [&](const Task&, const fs::path& candidate) {
    std::lock_guard<std::mutex> lock(m);
    judged.insert(candidate.string());
    // sample 1 is the fastest correct one, sample 2 fails
    const std::string label = candidate.stem().string();
    if (label == "2") return Verdict(false, 0, 0, 0);
    return Verdict(true, label == "1" ? 25 : 50, 100, 100);
  };
  Result<ResultsStore> store = ResultsStore::Open(dir_ / "samples.sqlite");
  ASSERT_TRUE(store.ok());
  SamplesSolver solver;
  std::ostringstream log;
  const std::vector<Task> tasks = {MakeTask("level1/1_A", 1), MakeTask("level1/2_B", 1)};
  ASSERT_TRUE(
      RunBench(run_, tasks, solver, judge, store.value(), {run_.run_id, 2}, MakeLogLines(log))
          .ok());
  EXPECT_EQ(judged.size(), 6u);
  Json report = BuildBenchReport(run_, tasks, store->Records(run_.run_id).value());
  for (const Json& rec : report["tasks"]) {
    EXPECT_EQ(rec["sample"], "1");
    EXPECT_EQ(rec["speedup_vs_eager"], 4.0);
    EXPECT_EQ(rec["samples"].size(), 3u);
  }
  EXPECT_EQ(report["metrics"]["overall"]["eager"]["fast_p"]["2"], 1.0);
}

TEST_F(BenchRunTest, InternalErrorsAreStoredButRunAgain) {
  std::atomic<int> calls{0};
  JudgeFn flaky = [&](const Task& t, const fs::path&) {
    ++calls;
    if (t.name == "level2/t1") {
      JudgeResult r;
      r.outcome = Outcome::kInternalError;
      r.reason = "no GPU";
      return r;
    }
    return FakeJudge(t);
  };
  Json first = Run("s.sqlite", 2, flaky);
  EXPECT_FALSE(first["complete"].get<bool>());
  EXPECT_EQ(first["counts"]["internal_error"], 1);
  calls = 0;
  Json second = Run("s.sqlite", 2, [&](const Task& t, const fs::path&) {
    ++calls;
    return FakeJudge(t);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(second["complete"].get<bool>());
}

TEST_F(BenchRunTest, KilledMidRunResumesToTheSameReport) {
  Json uninterrupted =
      Run("whole.sqlite", 3, [](const Task& t, const fs::path&) { return FakeJudge(t); });

  // A child process runs the suite and SIGKILLs itself while judging its sixth task, with other
  // tasks in flight.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int> calls{0};
    Result<ResultsStore> store = ResultsStore::Open(dir_ / "killed.sqlite");
    if (!store.ok()) _exit(3);
    FakeSolver solver;
    std::ostringstream log;
    JudgeFn dies = [&](const Task& t, const fs::path&) {
      if (++calls == 6) raise(SIGKILL);
      return FakeJudge(t);
    };
    // The sixth judgement kills this process: RunBench never returns, whatever its Status.
    (void)RunBench(run_, FakeSuite(), solver, dies, store.value(), {run_.run_id, 3},
                   MakeLogLines(log));
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  {
    Result<ResultsStore> partial = ResultsStore::Open(dir_ / "killed.sqlite");
    ASSERT_TRUE(partial.ok());
    size_t stored = partial->Records(run_.run_id)->size();
    EXPECT_GE(stored, 3u);   // the finished tasks survived the kill
    EXPECT_LT(stored, 12u);  // and the run was cut short
    EXPECT_FALSE(Report(partial.value())["complete"].get<bool>());
  }
  std::atomic<int> resumed_calls{0};
  Json resumed = Run("killed.sqlite", 3, [&](const Task& t, const fs::path&) {
    ++resumed_calls;
    return FakeJudge(t);
  });
  EXPECT_LT(resumed_calls, 11);
  EXPECT_EQ(resumed, uninterrupted);
}

TEST_F(BenchRunTest, ForceJudgesEverythingAgain) {
  std::atomic<int> calls{0};
  JudgeFn judge = [&](const Task& t, const fs::path&) {
    ++calls;
    return FakeJudge(t);
  };
  Run("s.sqlite", 1, judge);
  Result<ResultsStore> store = ResultsStore::Open(dir_ / "s.sqlite");
  FakeSolver solver;
  std::ostringstream log;
  calls = 0;
  ASSERT_TRUE(RunBench(run_, FakeSuite(), solver, judge, store.value(), {run_.run_id, 2, true},
                       MakeLogLines(log))
                  .ok());
  EXPECT_EQ(calls, 11);
  EXPECT_NE(log.str().find("[12/12]"), std::string::npos) << log.str();
}

TEST(BenchRunIdTest, SuiteSolverPolicyAndDeviceMakeTheId) {
  BenchRun a{"", "/suite", "solutions:/s", "strict", "cuda", {}, true, true, {}};
  BenchRun b = a;
  b.levels = {1};  // levels and baselines do not change the run
  b.compile = false;
  EXPECT_EQ(BenchRunId(a), BenchRunId(b));
  b.device = "cpu";
  EXPECT_NE(BenchRunId(a), BenchRunId(b));
}

}  // namespace
}  // namespace cuda_agent
