// early_jobs_test.cc — the go/stop protocol of early jobs, with a runner that plays the job's part
// (python/cuda_agent_harness/go.py waits for the go file the same way).
#include "harness/early_jobs.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cuda_agent {
namespace {

class EarlyJobsTest : public ::testing::Test {
 protected:
  void SetUp() override { signals_ = MakeTempDir(fs::temp_directory_path(), "early-jobs").value(); }
  void TearDown() override { fs::remove_all(signals_); }

  // Runner: a job with "wait_for" waits for its go file (its content, when JSON, is the go's
  // fields) or the stop file; it answers {"ok": true, "spec": <spec with the go's fields>}, or
  // error_kind "not_started" when stopped or when `give_up` says so.
  // With `setup_ms`, a job given a ready mark creates it that long after its start (its set-up);
  // with `fail_setup` too, it ends then instead (a set-up that failed: no mark, no wait for a go).
  JobRunner Runner(bool give_up = false, int setup_ms = 0, bool fail_setup = false) {
    return [this, give_up, setup_ms, fail_setup](const std::string& name, const std::string& job,
                                                 const Json& spec, double, const JobSandbox* box,
                                                 std::atomic<pid_t>*) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        runs_.push_back({{"name", name}, {"job", job}, {"spec", spec}});
        if (box) bound_signals_ = !box->policy.read_only.empty();
      }
      JobOutcome out;
      out.has_result = true;
      Json fields = Json::object();
      if (spec.contains("wait_for") && spec["wait_for"].contains("ready")) {
        std::this_thread::sleep_for(std::chrono::milliseconds(setup_ms));
        if (fail_setup) {
          out.result = {{"ok", false}, {"error_kind", "internal"}, {"reason", "no CUDA"}};
          return Result<JobOutcome>(out);
        }
        (void)WriteFileAtomic(spec["wait_for"]["ready"].get<std::string>(), "ready\n");
      }
      if (spec.contains("wait_for")) {
        const Json& wait = spec["wait_for"];
        const fs::path stop = wait["stop"].get<std::string>();
        // Waits for the go `key`; false when stopped (the job answers "not_started").
        auto wait_for = [&](const char* key) {
          const fs::path go = wait[key].get<std::string>();
          while (!fs::exists(go) && !fs::exists(stop)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          if (fs::exists(go)) return true;
          out.result = {{"ok", false}, {"error_kind", "not_started"}, {"reason", "stopped"}};
          return false;
        };
        if (!wait_for("go")) return Result<JobOutcome>(out);
        if (give_up) {
          out.result = {{"ok", false}, {"error_kind", "not_started"}, {"reason", "gave up"}};
          return Result<JobOutcome>(out);
        }
        Result<std::string> text = ReadFile(wait["go"].get<std::string>());
        if (text.ok() && text.value() != "go\n") fields = Json::parse(text.value());
        if (wait.contains("then")) {  // its preparation, then the second go
          std::this_thread::sleep_for(std::chrono::milliseconds(kPrepareMs));
          (void)WriteFileAtomic(wait["prepared"].get<std::string>(), "prepared\n");
          if (!wait_for("then")) return Result<JobOutcome>(out);
          fields["then"] = true;
        }
        if (wait.contains("time")) {  // its checks, then the third go
          std::this_thread::sleep_for(std::chrono::milliseconds(kCheckMs));
          if (fail_checks_) {
            out.result = {{"ok", false}, {"error_kind", "bad_output"}, {"reason", "NaN"}};
            return Result<JobOutcome>(out);
          }
          (void)WriteFileAtomic(wait["checked"].get<std::string>(), "checked\n");
          if (!wait_for("time")) return Result<JobOutcome>(out);
          fields["time"] = true;
        }
      }
      Json seen = spec;
      seen.erase("wait_for");
      seen.update(fields);
      out.result = {{"ok", true}, {"spec", seen}};
      return Result<JobOutcome>(out);
    };
  }

  static constexpr int kPrepareMs = 200;  // a job that prepares takes this long after its go
  static constexpr int kCheckMs = 200;    // a job that checks takes this long after `then`
  bool fail_checks_ = false;              // a job that checks ends in its checks
  fs::path signals_;
  std::mutex mu_;
  std::vector<Json> runs_;
  bool bound_signals_ = false;
};

TEST_F(EarlyJobsTest, TheGoCarriesTheFieldsKnownOnlyThen) {
  EarlyJobs early(signals_, 30, Runner());
  early.Start("candidate", "candidate", {{"seed", 7}}, JobSandbox{}, 30);
  EXPECT_TRUE(early.Started("candidate"));
  Result<JobOutcome> out = early.Run("candidate", {{"input_scales", {1.0, 8.0}}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(out->result["spec"]["seed"], 7);
  EXPECT_EQ(out->result["spec"]["input_scales"][1], 8.0);
  EXPECT_FALSE(early.Started("candidate")) << "a job gets one go";
  EXPECT_TRUE(bound_signals_) << "the job's sandbox must see the signals folder";
  EXPECT_EQ(runs_.size(), 1u);
}

TEST_F(EarlyJobsTest, AJobThatGaveUpIsRunAfresh) {
  EarlyJobs early(signals_, 30, Runner(/*give_up=*/true));
  early.Start("compare", "compare", {{"tolerance", 1}}, JobSandbox{}, 30);
  Result<JobOutcome> out = early.Run("compare", {{"actual_paths", {"a.pt"}}});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->Ok());
  ASSERT_EQ(runs_.size(), 2u);
  EXPECT_FALSE(runs_[1]["spec"].contains("wait_for")) << "the fresh run does not wait";
  EXPECT_EQ(runs_[1]["spec"]["actual_paths"][0], "a.pt");
  EXPECT_EQ(runs_[1]["spec"]["tolerance"], 1);
}

TEST_F(EarlyJobsTest, CallOffEndsTheWaitingJobs) {
  {
    EarlyJobs early(signals_, 30, Runner());
    early.Start("eager", "profile", Json::object(), JobSandbox{}, 30);
    early.Start("compile", "profile", Json::object(), JobSandbox{}, 30);
    early.Start("eager", "profile", Json::object(), JobSandbox{}, 30);  // already waiting
  }                                                                     // destroyed: called off
  EXPECT_TRUE(fs::exists(signals_ / "stop"));
  EXPECT_EQ(runs_.size(), 2u);
}

// Adopted: the two ends of a job started elsewhere (a claimed standby): the fields its go got, and
// its end.
struct Adopted {
  std::promise<Json> go_fields;
  std::promise<Result<JobOutcome>> end;
};

TEST_F(EarlyJobsTest, AnAdoptedJobGetsItsGoThroughItsOwnFunction) {
  EarlyJobs early(signals_, 30, Runner());
  auto adopted = std::make_shared<Adopted>();
  EarlyJobs::AdoptedJob job;
  job.go = [adopted](const Json& fields) {
    adopted->go_fields.set_value(fields);
    JobOutcome out;
    out.has_result = true;
    out.result = {{"ok", true}, {"fields", fields}};
    adopted->end.set_value(out);
    return OkStatus();
  };
  job.outcome = adopted->end.get_future();
  early.Adopt("profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30, std::move(job));
  EXPECT_TRUE(early.Started("profile_candidate"));
  Result<JobOutcome> out = early.Run("profile_candidate", {{"iters", 20}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(out->result["fields"]["iters"], 20);
  EXPECT_FALSE(fs::exists(signals_ / "go_profile_candidate")) << "no go file for an adopted job";
  EXPECT_TRUE(runs_.empty()) << "nothing was started afresh";
}

TEST_F(EarlyJobsTest, AnAdoptedJobThatCannotGoOrGaveUpIsRunAfresh) {
  for (bool go_fails : {true, false}) {
    runs_.clear();
    EarlyJobs early(signals_, 30, Runner());
    auto adopted = std::make_shared<Adopted>();
    EarlyJobs::AdoptedJob job;
    job.go = [adopted, go_fails](const Json&) {
      JobOutcome out;
      out.has_result = true;
      out.result = {{"ok", false}, {"error_kind", "not_started"}};
      adopted->end.set_value(out);
      return go_fails ? Internal("cannot stage the inputs") : OkStatus();
    };
    job.outcome = adopted->end.get_future();
    early.Adopt("profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30, std::move(job));
    Result<JobOutcome> out = early.Run("profile_candidate", {{"iters", 20}});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_TRUE(out->Ok()) << "go_fails=" << go_fails;
    ASSERT_EQ(runs_.size(), 1u) << "go_fails=" << go_fails;
    EXPECT_EQ(runs_[0]["spec"]["seed"], 3);
    EXPECT_EQ(runs_[0]["spec"]["iters"], 20);
    EXPECT_FALSE(runs_[0]["spec"].contains("wait_for"));
  }
}

TEST_F(EarlyJobsTest, RunWithoutStartIsAnError) {
  EarlyJobs early(signals_, 30, Runner());
  Result<JobOutcome> out = early.Run("nothing");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("nothing"), std::string::npos);
}

TEST_F(EarlyJobsTest, WaitReadyReturnsOnceTheJobHasDoneItsSetUp) {
  EarlyJobs early(signals_, 30, Runner(/*give_up=*/false, /*setup_ms=*/300));
  const fs::path mark = signals_ / "ready";
  early.Start("candidate", "candidate", Json::object(), JobSandbox{}, 30, {signals_});
  const double waited = early.WaitReady("candidate");
  EXPECT_TRUE(fs::exists(mark)) << "WaitReady returned before the job's set-up was done";
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 10.0) << "it must not wait out the time limit";
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(runs_.at(0)["spec"]["wait_for"]["ready"], mark.string());
  }
  EXPECT_LT(early.WaitReady("candidate"), 0.1) << "a job already ready is not waited for";
  Result<JobOutcome> out = early.Run("candidate");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->Ok());
}

TEST_F(EarlyJobsTest, WaitReadyReturnsWhenTheJobEndsWithoutBeingReady) {
  EarlyJobs early(signals_, 30, Runner(/*give_up=*/false, /*setup_ms=*/100, /*fail_setup=*/true));
  early.Start("candidate", "candidate", Json::object(), JobSandbox{}, 30, {signals_});
  EXPECT_LT(early.WaitReady("candidate"), 10.0) << "a job that ended is not waited for";
  EXPECT_FALSE(fs::exists(signals_ / "ready"));
  Result<JobOutcome> out = early.Run("candidate");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->ErrorKind(), "internal");
}

TEST_F(EarlyJobsTest, AJobWithoutAReadyMarkIsNotWaitedFor) {
  EarlyJobs early(signals_, 30, Runner(/*give_up=*/false, /*setup_ms=*/5000));
  early.Start("candidate", "candidate", Json::object(), JobSandbox{}, 30);
  EXPECT_LT(early.WaitReady("candidate"), 0.1);
  EXPECT_LT(early.WaitReady("no such job"), 0.1);
  Result<JobOutcome> out = early.Run("candidate");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->Ok());
}

TEST_F(EarlyJobsTest, AJobThatPreparesGetsItsSecondGoOnlyFromRun) {
  EarlyJobs early(signals_, 30, Runner());
  early.Start("profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30,
              {signals_, /*prepares=*/true});
  EXPECT_EQ(early.WaitPrepared("profile_candidate"), 0) << "no go given yet: nothing to wait for";
  early.WaitReady("profile_candidate");
  ASSERT_TRUE(early.Prepare("profile_candidate", {{"iters", 20}}));
  EXPECT_FALSE(early.Prepare("profile_candidate")) << "one first go";
  const double waited = early.WaitPrepared("profile_candidate");
  EXPECT_TRUE(fs::exists(signals_ / "prepared"));
  EXPECT_GE(waited, 0.15);
  EXPECT_FALSE(fs::exists(signals_ / "then_profile_candidate")) << "the second go before Run";
  EXPECT_TRUE(early.Started("profile_candidate"));
  Result<JobOutcome> out = early.Run("profile_candidate");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(out->result["spec"]["iters"], 20) << "the first go's fields";
  EXPECT_EQ(out->result["spec"]["then"], true);
  EXPECT_EQ(runs_.size(), 1u);
}

TEST_F(EarlyJobsTest, AJobNotReadyIsNotPreparedAndRunGivesBothGos) {
  EarlyJobs early(signals_, 30, Runner(/*give_up=*/false, /*setup_ms=*/300));
  early.Start("profile_candidate", "profile", Json::object(), JobSandbox{}, 30,
              {signals_, /*prepares=*/true});
  EXPECT_FALSE(early.Prepare("profile_candidate")) << "still setting up: no go outside a lease";
  EXPECT_FALSE(early.Prepare("candidate")) << "no such job";
  Result<JobOutcome> out = early.Run("profile_candidate", {{"iters", 5}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(out->result["spec"]["iters"], 5);
  EXPECT_EQ(out->result["spec"]["then"], true);
}

TEST_F(EarlyJobsTest, AJobThatDoesNotPrepareGetsNoFirstGoAlone) {
  EarlyJobs early(signals_, 30, Runner());
  early.Start("candidate", "candidate", Json::object(), JobSandbox{}, 30, {signals_});
  early.WaitReady("candidate");
  EXPECT_FALSE(early.Prepare("candidate"));
  EXPECT_FALSE(fs::exists(signals_ / "go_candidate"));
  Result<JobOutcome> out = early.Run("candidate");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->Ok());
  EXPECT_FALSE(out->result["spec"].contains("then"));
}

TEST_F(EarlyJobsTest, AnAdoptedJobThatPreparesGetsItsSecondGoThroughItsOwnFunction) {
  EarlyJobs early(signals_, 30, Runner());
  fs::create_directories(signals_ / "standby");
  ASSERT_TRUE(WriteFileAtomic(signals_ / "standby" / "ready", "ready\n").ok());
  auto end = std::make_shared<std::promise<Result<JobOutcome>>>();
  auto calls = std::make_shared<std::vector<std::string>>();
  EarlyJobs::AdoptedJob job;
  job.go = [calls](const Json&) {
    calls->push_back("go");
    return OkStatus();
  };
  job.then = [calls, end]() {
    calls->push_back("then");
    JobOutcome out;
    out.has_result = true;
    out.result = {{"ok", true}};
    end->set_value(out);
    return OkStatus();
  };
  job.outcome = end->get_future();
  job.marks = {signals_ / "standby"};
  early.Adopt("profile_candidate", "profile", Json::object(), JobSandbox{}, 30, std::move(job));
  ASSERT_TRUE(early.Prepare("profile_candidate"));
  EXPECT_EQ(*calls, std::vector<std::string>{"go"});
  Result<JobOutcome> out = early.Run("profile_candidate");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(*calls, (std::vector<std::string>{"go", "then"}));
}

EarlyMarks CheckingMarks(const fs::path& dir) {
  return {dir, /*prepares=*/true, /*checks=*/true, dir / "out"};
}

TEST_F(EarlyJobsTest, AJobThatChecksIsTimedOnlyFromRunAfterItsChecks) {
  EarlyJobs early(signals_, 30, Runner());
  early.Start("profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30,
              CheckingMarks(signals_));
  early.WaitReady("profile_candidate");
  Result<bool> checked = early.Check("profile_candidate", {{"check_seeds", {5, 6}}});
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  EXPECT_TRUE(checked.value());
  EXPECT_TRUE(fs::exists(signals_ / "checked"));
  EXPECT_FALSE(fs::exists(signals_ / "time_profile_candidate")) << "timed before Run";
  EXPECT_TRUE(early.Started("profile_candidate")) << "Run still gives its last go";
  EXPECT_EQ(early.Outputs("profile_candidate"), signals_ / "out");
  EXPECT_FALSE(early.Check("profile_candidate", Json::object()).ok()) << "checked once";
  Result<JobOutcome> out = early.Run("profile_candidate");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(out->result["spec"]["check_seeds"][1], 6) << "the first go's fields";
  EXPECT_EQ(out->result["spec"]["then"], true);
  EXPECT_EQ(out->result["spec"]["time"], true);
  EXPECT_EQ(runs_.size(), 1u);
}

TEST_F(EarlyJobsTest, AJobThatEndsInItsChecksAnswersItsEndThroughRun) {
  fail_checks_ = true;
  EarlyJobs early(signals_, 30, Runner());
  early.Start("profile_candidate", "profile", Json::object(), JobSandbox{}, 30,
              CheckingMarks(signals_));
  Result<bool> checked = early.Check("profile_candidate", Json::object());
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  EXPECT_FALSE(checked.value());
  Result<JobOutcome> out = early.Run("profile_candidate");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->ErrorKind(), "bad_output") << "its end, read once by Check, still reaches Run";
  EXPECT_EQ(runs_.size(), 1u) << "a failure is no reason for a fresh run";
}

TEST_F(EarlyJobsTest, AJobThatChecksIsCalledOffWhileItWaitsToBeTimed) {
  {
    EarlyJobs early(signals_, 30, Runner());
    early.Start("profile_candidate", "profile", Json::object(), JobSandbox{}, 30,
                CheckingMarks(signals_));
    Result<bool> checked = early.Check("profile_candidate", Json::object());
    ASSERT_TRUE(checked.ok() && checked.value());
  }  // a mismatch: the judgement stops here
  EXPECT_TRUE(fs::exists(signals_ / "stop"));
  EXPECT_FALSE(fs::exists(signals_ / "time_profile_candidate"));
}

TEST_F(EarlyJobsTest, AnAdoptedJobThatGaveUpBeforeItsChecksIsReplacedByAFreshEarlyJob) {
  EarlyJobs early(signals_, 30, Runner());
  auto end = std::make_shared<std::promise<Result<JobOutcome>>>();
  EarlyJobs::AdoptedJob job;
  job.go = [end](const Json&) {  // a standby that idled out just before its claim
    JobOutcome out;
    out.has_result = true;
    out.result = {{"ok", false}, {"error_kind", "not_started"}};
    end->set_value(out);
    return OkStatus();
  };
  job.then = []() { return OkStatus(); };
  job.time = []() { return Internal("never given: the job was replaced"); };
  job.outcome = end->get_future();
  job.marks = CheckingMarks(signals_ / "standby");
  early.Adopt("profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30, std::move(job),
              CheckingMarks(signals_));
  Result<bool> checked = early.Check("profile_candidate", {{"check_seeds", {5}}});
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  EXPECT_TRUE(checked.value());
  ASSERT_EQ(runs_.size(), 1u);
  EXPECT_TRUE(runs_[0]["spec"].contains("wait_for")) << "the fresh job is an early job too";
  EXPECT_EQ(early.Outputs("profile_candidate"), signals_ / "out");
  Result<JobOutcome> out = early.Run("profile_candidate");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_TRUE(out->Ok());
  EXPECT_EQ(out->result["spec"]["seed"], 3);
  EXPECT_EQ(out->result["spec"]["check_seeds"][0], 5);
  EXPECT_EQ(out->result["spec"]["time"], true);
}

}  // namespace
}  // namespace cuda_agent
