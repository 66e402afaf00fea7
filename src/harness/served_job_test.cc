// served_job_test.cc — the answer/go/stop protocol of served jobs. The job's part is played by a
// runner thread that answers as python/cuda_agent_harness/serving.py does (the Python side is
// tested in python/tests/test_reference.py), or by a real process that never answers.
#include "harness/served_job.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <thread>

namespace cuda_agent {
namespace {

class ServedJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = MakeTempDir(fs::temp_directory_path(), "served-job").value();
    fs::create_directories(root_ / "answers");
    fs::create_directories(root_ / "signals");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<ServedJob> Make(std::vector<std::string> requests) {
    return std::make_unique<ServedJob>(root_ / "answers", root_ / "signals", std::move(requests));
  }

  // Plays a served job: answers its first request at once with {"ok": true, "n": 0}, then each
  // later one after its go with {"ok": true, "n": k, "fields": <the go's fields>}; ends at `stop`.
  // With `answers` < the number of requests it ends after that many, answering no more.
  static Result<JobOutcome> Play(const Json& serve, size_t answers) {
    auto answer = [&](const std::string& name, Json body) {
      fs::path dir = serve["answers_dir"].get<std::string>();
      return WriteFileAtomic(dir / (name + ".json"), body.dump());
    };
    const std::vector<std::string> requests = serve["requests"];
    fs::path go_dir = serve["go_dir"].get<std::string>();
    fs::path stop = serve["stop"].get<std::string>();
    JobOutcome end;
    end.has_result = true;
    end.result = {{"ok", true}, {"final", true}};
    for (size_t k = 0; k < requests.size() && k < answers; ++k) {
      fs::path go = go_dir / ("go_" + requests[k]);
      while (k > 0 && !fs::exists(go) && !fs::exists(stop)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (k > 0 && !fs::exists(go)) break;
      Json body = {{"ok", true}, {"n", k}};
      if (k > 0) body["fields"] = Json::parse(ReadFile(go).value());
      EXPECT_TRUE(answer(requests[k], body).ok());
    }
    return end;
  }

  fs::path root_;
};

TEST_F(ServedJobTest, EachRequestIsAnsweredAfterItsGoWithItsFields) {
  auto served = Make({"reference", "compare", "compare_spots"});
  Json serve = served->ServeSpec(30);
  EXPECT_EQ(serve["requests"].size(), 3u);
  served->Start([serve](std::atomic<pid_t>*) { return Play(serve, 3); });
  Result<JobOutcome> first = served->Await("reference", 30);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->Ok());
  EXPECT_EQ(first->result["n"], 0);
  EXPECT_FALSE(served->Await("compare", 30).ok())
      << "a request not asked has no answer to wait for";
  ASSERT_TRUE(served->Go("compare", {{"expected_keys", {"check 0"}}}).ok());
  Result<JobOutcome> second = served->Await("compare", 30);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->result["n"], 1);
  EXPECT_EQ(second->result["fields"]["expected_keys"][0], "check 0");
  ASSERT_TRUE(served->Go("compare_spots", {{"expected_keys", {"call 3"}}}).ok());
  Result<JobOutcome> third = served->Await("compare_spots", 30);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->result["fields"]["expected_keys"][0], "call 3");
  Result<JobOutcome> end = served->End();
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->result.value("final", false));
}

TEST_F(ServedJobTest, StopEndsAJobWaitingForAGo) {
  auto served = Make({"reference", "compare"});
  Json serve = served->ServeSpec(30);
  served->Start([serve](std::atomic<pid_t>*) { return Play(serve, 2); });
  ASSERT_TRUE(served->Await("reference", 30).ok());
  auto t = std::chrono::steady_clock::now();
  Result<JobOutcome> end = served->End();
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->result.value("final", false));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 5);
  EXPECT_TRUE(fs::exists(root_ / "signals" / "stop"));
  EXPECT_FALSE(fs::exists(root_ / "answers" / "compare.json"));
}

TEST_F(ServedJobTest, AJobThatEndsWithoutAnsweringIsAFailedAnswer) {
  auto served = Make({"reference", "compare"});
  Json serve = served->ServeSpec(30);
  served->Start([serve](std::atomic<pid_t>*) { return Play(serve, 1); });
  ASSERT_TRUE(served->Await("reference", 30).ok());
  ASSERT_TRUE(served->Go("compare", Json::object()).ok());
  Result<JobOutcome> out = served->Await("compare", 30);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->Ok());
  EXPECT_EQ(out->ErrorKind(), "internal");
  EXPECT_NE(out->Reason().find("without answering 'compare'"), std::string::npos) << out->Reason();
}

TEST_F(ServedJobTest, AJobThatDoesNotAnswerInTimeIsKilled) {
  auto served = Make({"reference"});
  // A real process that never answers: Await must kill it (its pid) and report the timeout.
  served->Start([](std::atomic<pid_t>* pid) {
    pid_t child = fork();
    if (child == 0) {
      execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    pid->store(child);
    int status = 0;
    waitpid(child, &status, 0);
    JobOutcome end;
    end.process.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return Result<JobOutcome>(end);
  });
  auto t = std::chrono::steady_clock::now();
  Result<JobOutcome> out = served->Await("reference", 0.3);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_result);
  EXPECT_TRUE(out->process.timed_out);
  EXPECT_EQ(out->process.term_signal, SIGKILL);
  EXPECT_LT(waited, 10);
}

TEST_F(ServedJobTest, AnEarlyServedJobWaitsForTheGoOfItsFirstRequest) {
  auto served = Make({"reference", "compare"});
  Json wait_for = served->WaitForGo(30);
  fs::path go = wait_for["go"].get<std::string>();
  served->Start([go](std::atomic<pid_t>*) {
    while (!fs::exists(go)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    JobOutcome end;
    end.has_result = true;
    end.result = {{"ok", false}, {"error_kind", "task"}, {"reason", "after the go"}};
    return Result<JobOutcome>(end);
  });
  ASSERT_TRUE(served->Go("reference", Json::object()).ok());
  Result<JobOutcome> out = served->Await("reference", 30);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->Reason(), "after the go") << "the go Go writes is the one the job waits for";
  EXPECT_EQ(wait_for["stop"], served->ServeSpec(30)["stop"]);
}

TEST_F(ServedJobTest, WaitReadyWaitsForTheMarkOfAnEarlyServedJob) {
  auto served = Make({"reference", "compare"});
  EXPECT_LT(served->WaitReady(30), 0.1) << "a job never started is not waited for";
  Json wait_for = served->WaitForGo(30);
  fs::path ready = wait_for["ready"].get<std::string>();
  EXPECT_EQ(ready.parent_path(), root_ / "answers") << "the mark goes where only the job writes";
  served->Start([ready](std::atomic<pid_t>*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its set-up
    EXPECT_TRUE(WriteFileAtomic(ready, "ready\n").ok());
    JobOutcome end;
    end.has_result = true;
    end.result = {{"ok", false}, {"error_kind", "internal"}, {"reason", "ended"}};
    return Result<JobOutcome>(end);
  });
  const double waited = served->WaitReady(30);
  EXPECT_TRUE(fs::exists(ready));
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 10);
  ASSERT_TRUE(served->End().ok());
  EXPECT_LT(served->WaitReady(30), 0.1) << "a job that ended is not waited for";
}

TEST_F(ServedJobTest, AJobNeverStartedAnswersNothing) {
  auto served = Make({"reference", "compare"});
  EXPECT_FALSE(served->Await("reference", 1).ok());
  EXPECT_FALSE(served->Go("compare", Json::object()).ok());
  EXPECT_FALSE(served->End().ok());
}

// A kept job's round (ServedJob::Attach): its process runs on after the round, whose end is the
// round's end file; its answers come as any served job's.
TEST_F(ServedJobTest, AnAttachedRoundEndsAtItsRoundEndWhileTheProcessRunsOn) {
  auto served = Make({"reference", "compare"});
  std::promise<Result<JobOutcome>> process_end;
  SharedJobProcess process;
  process.outcome = process_end.get_future().share();
  process.isolation = Isolation::kDegraded;
  const fs::path round_end = root_ / "answers" / "round_end.json";
  served->Attach(process, round_end);
  ASSERT_TRUE(
      WriteFileAtomic(root_ / "answers" / "reference.json", R"({"ok": true, "n": 0})").ok());
  Result<JobOutcome> first = served->Await("reference", 30);
  ASSERT_TRUE(first.ok() && first->Ok()) << first->result.dump();
  ASSERT_TRUE(served->Go("compare", {{"k", 1}}).ok());
  std::thread round([&] {
    // The job answers, then sees `stop` and ends the round, not the process.
    EXPECT_TRUE(WriteFileAtomic(root_ / "answers" / "compare.json", R"({"ok": true})").ok());
    while (!fs::exists(root_ / "signals" / "stop"))
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_TRUE(WriteFileAtomic(round_end, R"({"ok": true, "round": 3, "reusable": true})").ok());
  });
  EXPECT_TRUE(served->Await("compare", 30)->Ok());
  Result<JobOutcome> end = served->End(/*now=*/true);
  round.join();
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->result.value("round", -1), 3);
  EXPECT_TRUE(end->result.value("reusable", false));
  EXPECT_EQ(end->isolation, Isolation::kDegraded) << "the process's containment, not the file's";
  EXPECT_EQ(process.outcome.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "ending the round leaves the process running";
  process_end.set_value(Internal("not used"));
}

TEST_F(ServedJobTest, AnAttachedRoundWhoseProcessDiesAnswersWithTheProcessEnd) {
  auto served = Make({"reference", "compare"});
  std::promise<Result<JobOutcome>> process_end;
  SharedJobProcess process;
  process.outcome = process_end.get_future().share();
  served->Attach(process, root_ / "answers" / "round_end.json");
  JobOutcome died;
  died.process.term_signal = 9;
  process_end.set_value(died);
  Result<JobOutcome> answer = served->Await("reference", 30);
  ASSERT_TRUE(answer.ok());
  EXPECT_FALSE(answer->has_result) << "no answer and no round end: the process's end";
  EXPECT_EQ(answer->process.term_signal, 9);
}

}  // namespace
}  // namespace cuda_agent
