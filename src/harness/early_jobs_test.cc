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
  JobRunner Runner(bool give_up = false) {
    return [this, give_up](const std::string& name, const std::string& job, const Json& spec,
                           double, const JobSandbox* box, std::atomic<pid_t>*) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        runs_.push_back({{"name", name}, {"job", job}, {"spec", spec}});
        if (box) bound_signals_ = !box->policy.read_only.empty();
      }
      JobOutcome out;
      out.has_result = true;
      Json fields = Json::object();
      if (spec.contains("wait_for")) {
        fs::path go = spec["wait_for"]["go"].get<std::string>();
        fs::path stop = spec["wait_for"]["stop"].get<std::string>();
        while (!fs::exists(go) && !fs::exists(stop)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        if (give_up || !fs::exists(go)) {
          out.result = {{"ok", false}, {"error_kind", "not_started"}, {"reason", "stopped"}};
          return Result<JobOutcome>(out);
        }
        Result<std::string> text = ReadFile(go);
        if (text.ok() && text.value() != "go\n") fields = Json::parse(text.value());
      }
      Json seen = spec;
      seen.erase("wait_for");
      seen.update(fields);
      out.result = {{"ok", true}, {"spec", seen}};
      return Result<JobOutcome>(out);
    };
  }

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
  early.Adopt(
      "profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30,
      [adopted](const Json& fields) {
        adopted->go_fields.set_value(fields);
        JobOutcome out;
        out.has_result = true;
        out.result = {{"ok", true}, {"fields", fields}};
        adopted->end.set_value(out);
        return OkStatus();
      },
      adopted->end.get_future(), 0);
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
    early.Adopt(
        "profile_candidate", "profile", {{"seed", 3}}, JobSandbox{}, 30,
        [adopted, go_fails](const Json&) {
          JobOutcome out;
          out.has_result = true;
          out.result = {{"ok", false}, {"error_kind", "not_started"}};
          adopted->end.set_value(out);
          return go_fails ? Internal("cannot stage the inputs") : OkStatus();
        },
        adopted->end.get_future(), 0);
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

}  // namespace
}  // namespace cuda_agent
