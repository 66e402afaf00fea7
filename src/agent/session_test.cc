// session_test.cc — a session on the CPU with the real workspace template and sandbox: open, the
// prompt and tools, calls (one at a time), the in-process grade's request, close, and reopen.
#include "agent/session.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// RecordingJudge stands in for the judge service: it keeps each request and answers reward 2.
class RecordingJudge : public JudgeService {
 public:
  JudgeResult Evaluate(const JudgeRequest& request) override {
    requests.push_back(request);
    JudgeResult r;
    r.reward = 2;
    r.correct = true;
    r.stage = Stage::kDone;
    r.reason = "recorded";
    return r;
  }
  std::string Describe() const override { return "recording"; }
  std::vector<JudgeRequest> requests;
};

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TestDir>("session");
    const fs::path source = CUDA_AGENT_SOURCE_DIR;
    task_spec_ = (source / "examples" / "relu_scale" / "model.py").string();
    Result<Task> task = LoadTask(task_spec_);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    spec_.task_spec = task_spec_;
    spec_.task = task.value();
    spec_.dir = dir_->path() / "s";
    spec_.judge.device = Device::kCpu;
    spec_.judge.candidate_timeout_s = 33;
    spec_.binary = ExecutablePath();
    spec_.env.home = source;
  }
  Result<std::unique_ptr<Session>> Open(bool reopen = false) {
    SessionSpec spec = spec_;
    spec.reopen = reopen;
    return Session::Open(spec, judge_);
  }
  static Observation Bash(Session& s, const std::string& command) {
    return s.Call("Bash", Json{{"command", command}}.dump());
  }

  std::unique_ptr<TestDir> dir_;
  std::string task_spec_;
  SessionSpec spec_;
  RecordingJudge judge_;
};

TEST_F(SessionTest, OpensAWorkspaceRunsToolsAndGradesInProcess) {
  Result<std::unique_ptr<Session>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Session& s = *opened.value();
  const fs::path ws = s.Workspace();
  EXPECT_EQ(ws, fs::canonical(dir_->path() / "s" / "workspace"));
  EXPECT_TRUE(fs::exists(ws / "model.py"));
  EXPECT_TRUE(fs::exists(ws / ".cuda-agent" / "workspace.json"));
  EXPECT_EQ(s.SystemPrompt(), ReadFile(ws / "SKILL.md").value());
  EXPECT_NE(s.TaskMessage().find("torch.relu(x) * self.scale"), std::string::npos);
  EXPECT_NE(s.TaskMessage().find("C++ kernels (CPU mode)"), std::string::npos);
  EXPECT_EQ(s.ToolSpecs().size(), 10u);
  EXPECT_EQ(s.Spec().task_spec, task_spec_);

  Observation wrote =
      s.Call("Write", Json{{"file_path", "kernels/a.cpp"}, {"content", "int a = 1;\n"}}.dump());
  EXPECT_FALSE(wrote.is_error) << wrote.text;
  // Bash runs in the workspace, with the gateway's socket in its environment.
  Observation bash = Bash(s, "cat kernels/a.cpp; echo \"gw=$CUDA_AGENT_JUDGE_GATEWAY\"");
  EXPECT_FALSE(bash.is_error) << bash.text;
  EXPECT_NE(bash.text.find("int a = 1;"), std::string::npos) << bash.text;
  EXPECT_NE(bash.text.find("gw=" + (dir_->path() / "s" / "gateway" / "judge.sock").string()),
            std::string::npos)
      << bash.text;
  // Malformed and forbidden calls are error observations.
  EXPECT_TRUE(s.Call("Bash", "{not json").is_error);
  EXPECT_TRUE(s.Call("Delete", "{}").is_error);
  Observation edit = s.Call(
      "Edit",
      Json{{"file_path", "model.py"}, {"old_string", "relu"}, {"new_string", "tanh"}}.dump());
  EXPECT_TRUE(edit.is_error);
  EXPECT_NE(edit.text.find("protected"), std::string::npos) << edit.text;
  EXPECT_FALSE(s.BestInLoop().has_value());

  // The grade goes to the injected service: the full pipeline on this workspace, its protected
  // files checked there, with the session's options.
  JudgeResult graded = s.Grade();
  EXPECT_EQ(graded.reward, 2);
  ASSERT_EQ(judge_.requests.size(), 1u);
  const JudgeRequest& request = judge_.requests[0];
  EXPECT_EQ(request.workspace, ws);
  EXPECT_EQ(request.task.id, spec_.task.id);
  EXPECT_EQ(request.options.device, Device::kCpu);
  EXPECT_EQ(request.options.until, Stage::kDone);
  EXPECT_EQ(request.options.candidate_timeout_s, 33);
  EXPECT_EQ(request.candidate.files().count("kernels/a.cpp"), 1u);

  s.Close();
  s.Close();  // idempotent
  Observation after = Bash(s, "echo hi");
  EXPECT_TRUE(after.is_error);
  EXPECT_NE(after.text.find("closed"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_->path() / "s" / "gateway" / "judge.sock"));
  // A closed session can still be graded (the workspace stays).
  EXPECT_EQ(s.Grade().reward, 2);
}

TEST_F(SessionTest, OneFolderOneSessionAndReopenKeepsTheWorkspace) {
  {
    Result<std::unique_ptr<Session>> first = Open();
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    Observation wrote = first.value()->Call(
        "Write", Json{{"file_path", "kernels/kept.cpp"}, {"content", "// kept\n"}}.dump());
    ASSERT_FALSE(wrote.is_error) << wrote.text;
    Observation job = first.value()->Call(
        "Bash", Json{{"command", "echo background"}, {"run_in_background", true}}.dump());
    ASSERT_FALSE(job.is_error) << job.text;
    EXPECT_NE(job.text.find("bash_1"), std::string::npos) << job.text;
  }  // destroyed: closed

  Result<std::unique_ptr<Session>> again = Open();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("exists already"), std::string::npos);

  Result<std::unique_ptr<Session>> reopened = Open(/*reopen=*/true);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  Session& s = *reopened.value();
  Observation read = s.Call("Read", Json{{"file_path", "kernels/kept.cpp"}}.dump());
  EXPECT_FALSE(read.is_error) << read.text;
  EXPECT_NE(read.text.find("// kept"), std::string::npos);
  // Background job ids go on after the earlier session's (its log is kept).
  Observation job =
      s.Call("Bash", Json{{"command", "echo again"}, {"run_in_background", true}}.dump());
  EXPECT_NE(job.text.find("bash_2"), std::string::npos) << job.text;
  EXPECT_TRUE(fs::exists(dir_->path() / "s" / "jobs" / "bash_1.log"));

  // Nothing to reopen in an empty folder.
  spec_.dir = dir_->path() / "empty";
  Result<std::unique_ptr<Session>> none = Open(/*reopen=*/true);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

TEST_F(SessionTest, CallsFromSeveralThreadsRunOneAtATime) {
  Result<std::unique_ptr<Session>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Session& s = *opened.value();
  auto work = [&]() {
    Observation o = Bash(s, "echo start >> calls.log; sleep 0.3; echo end >> calls.log");
    EXPECT_FALSE(o.is_error) << o.text;
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(ReadFile(s.Workspace() / "calls.log").value(), "start\nend\nstart\nend\n");
}

}  // namespace
}  // namespace cuda_agent
