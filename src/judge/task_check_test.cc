// task_check_test.cc — the pure parts of `tasks check`: options, progress lines, blame, the report.
#include "judge/task_check.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace cuda_agent {
namespace {

Task MakeTask(const std::string& name, const std::string& id) {
  Task t;
  t.name = name;
  t.id = id;
  return t;
}

Json Answer(bool strict, bool paper) {
  return {{"pass", {{"strict", strict}, {"paper", paper}}}, {"rel_norm_err", 1.0}};
}

Json Checked(const std::string& name, bool zeros_paper, bool independent_strict = false) {
  return {{"name", name},
          {"id", "id-" + name},
          {"ok", true},
          {"output_signature", "Tensor[float32](8, 4096)"},
          {"inputs_vary", true},
          {"answers",
           {{"zeros", Answer(false, zeros_paper)},
            {"constant", Answer(false, false)},
            {"noise", Answer(false, false)},
            {"input", Json()},
            {"independent", Answer(independent_strict, independent_strict)}}}};
}

TaskCheckOptions TwoPolicies() {
  TaskCheckOptions opt;
  opt.device = Device::kCpu;
  opt.policies = {"strict", "paper"};
  return opt;
}

TEST(TaskCheckPolicies, AllOrOne) {
  EXPECT_EQ(TaskCheckPolicies("all").value(),
            (std::vector<std::string>{"strict", "tf32-fair", "paper"}));
  EXPECT_EQ(TaskCheckPolicies("tf32-fair").value(), std::vector<std::string>{"tf32-fair"});
  EXPECT_FALSE(TaskCheckPolicies("loose").ok());
}

TEST(SelectTasks, ByNameIdOrStemWithLimit) {
  std::vector<Task> suite = {MakeTask("level1/1_Square", "aaa"), MakeTask("level1/2_Relu", "bbb"),
                             MakeTask("level2/3_Gemm", "ccc")};
  EXPECT_EQ(SelectTasks(suite, "", 0).size(), 3u);
  EXPECT_EQ(SelectTasks(suite, "", 2).size(), 2u);
  std::vector<Task> chosen = SelectTasks(suite, "3_Gemm,bbb", 0);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].name, "level1/2_Relu");  // suite order, not the order asked
  EXPECT_EQ(chosen[1].name, "level2/3_Gemm");
  EXPECT_TRUE(SelectTasks(suite, "nothing", 0).empty());
}

TEST(ParseProgress, StartedLinesRecordsAndACutLine) {
  ProgressState s = ParseProgress(
      "{\"started\": \"a\"}\n{\"name\": \"a\", \"ok\": true}\n\n{\"started\": \"b\"}\n{\"name\": "
      "\"b\", \"o");
  EXPECT_EQ(s.started, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(s.records.size(), 1u);
  EXPECT_TRUE(s.records["a"]["ok"].get<bool>());
}

TEST(IsFlagged, AnyAnswerUnderAnyPolicy) {
  EXPECT_TRUE(IsFlagged(Checked("t", true)));
  EXPECT_TRUE(IsFlagged(Checked("t", false, true)));
  EXPECT_FALSE(IsFlagged(Checked("t", false)));
  Json failed = {{"name", "t"}, {"ok", false}, {"reason", "raised"}};
  EXPECT_FALSE(IsFlagged(failed));
}

JobOutcome Ended(int exit_code, int signal, bool timed_out, const std::string& err) {
  JobOutcome job;
  job.process.exit_code = exit_code;
  job.process.term_signal = signal;
  job.process.timed_out = timed_out;
  job.process.err = err;
  return job;
}

TEST(BlameRecord, SaysHowTheJobEnded) {
  Task t = MakeTask("level1/9_Big", "abc");
  Json crash = BlameRecord(t, Ended(-1, SIGSEGV, false, "Fatal Python error\n"), 600);
  EXPECT_EQ(crash["name"], "level1/9_Big");
  EXPECT_EQ(crash["id"], "abc");
  EXPECT_FALSE(crash["ok"].get<bool>());
  EXPECT_EQ(crash["error_kind"], "crash");
  EXPECT_NE(crash["reason"].get<std::string>().find("SIGSEGV"), std::string::npos);

  Json watchdog = BlameRecord(t, Ended(1, 0, false, "Timeout (0:10:00)!\nThread 0x1 ...\n"), 600);
  EXPECT_EQ(watchdog["error_kind"], "timeout");
  EXPECT_NE(watchdog["reason"].get<std::string>().find("600 s"), std::string::npos);

  EXPECT_EQ(BlameRecord(t, Ended(-1, SIGKILL, true, ""), 600)["error_kind"], "timeout");
  JobOutcome oom = Ended(-1, SIGKILL, false, "");
  oom.oom_killed = true;
  EXPECT_EQ(BlameRecord(t, oom, 600)["error_kind"], "oom");
  EXPECT_EQ(BlameRecord(t, Ended(7, 0, false, "boom\n"), 600)["error_kind"], "crash");
}

TEST(MakeTaskCheckReport, CountsPerPolicyAndAnswer) {
  std::vector<Task> tasks = {MakeTask("softmax", "1"), MakeTask("gemm", "2"),
                             MakeTask("broken", "3"), MakeTask("odd", "4"), MakeTask("later", "5")};
  std::map<std::string, Json> records = {
      {"softmax", Checked("softmax", true)},
      {"gemm", Checked("gemm", false)},
      {"broken",
       {{"name", "broken"}, {"ok", false}, {"error_kind", "task"}, {"reason", "raised | oops"}}},
      {"odd",
       {{"name", "odd"},
        {"ok", false},
        {"status", "malformed"},
        {"reason", "task defines no class Model"}}},
  };
  Json r = MakeTaskCheckReport("suite", tasks, records, TwoPolicies(), {{"sandbox", "full"}});
  EXPECT_FALSE(r["complete"].get<bool>());
  EXPECT_EQ(r["counts"]["tasks"], 5);
  EXPECT_EQ(r["counts"]["checked"], 2);
  EXPECT_EQ(r["counts"]["failed"], 1);
  EXPECT_EQ(r["counts"]["malformed"], 1);
  EXPECT_EQ(r["counts"]["pending"], 1);
  EXPECT_EQ(r["counts"]["flagged"], 1);
  EXPECT_EQ(r["summary"]["paper"]["zeros"], 1);
  EXPECT_EQ(r["summary"]["strict"]["zeros"], 0);
  EXPECT_EQ(r["summary"]["paper"]["any"], 1);
  EXPECT_EQ(r["summary"]["strict"]["any"], 0);
  ASSERT_EQ(r["tasks"].size(), 4u);
  EXPECT_EQ(r["tasks"][0]["status"], "checked");
  EXPECT_TRUE(r["tasks"][0]["flagged"].get<bool>());
  EXPECT_EQ(r["tasks"][2]["status"], "failed");
}

TEST(FormatTaskCheckMarkdown, SummaryThenOnlyTheFlaggedTasks) {
  std::vector<Task> tasks = {MakeTask("softmax", "1"), MakeTask("gemm", "2"),
                             MakeTask("broken", "3"), MakeTask("constant", "4")};
  Json constant = Checked("constant", false, true);
  constant["inputs_vary"] = false;
  std::map<std::string, Json> records = {
      {"softmax", Checked("softmax", true)},
      {"gemm", Checked("gemm", false)},
      {"broken",
       {{"name", "broken"}, {"ok", false}, {"error_kind", "task"}, {"reason", "raised | oops"}}},
      {"constant", constant},
  };
  std::string md = FormatTaskCheckMarkdown(
      MakeTaskCheckReport("kb", tasks, records, TwoPolicies(), Json::object()));
  EXPECT_NE(md.find("# Task check: kb"), std::string::npos);
  EXPECT_EQ(md.find("Partial report"), std::string::npos);
  EXPECT_NE(md.find("4 selected; 3 checked, 1 failed to run, 0 malformed"), std::string::npos);
  EXPECT_NE(md.find("| trivial answer | strict | paper |"), std::string::npos);
  EXPECT_NE(md.find("| zeros | 0 | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| output independent of the input | 1 | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| any of these (flagged) | 1 | 2 |"), std::string::npos);
  EXPECT_NE(md.find("| softmax | Tensor[float32](8, 4096) | paper | — | — | — | — |"),
            std::string::npos);
  EXPECT_NE(md.find("| constant | Tensor[float32](8, 4096) | — | — | — | — | strict, paper (the "
                    "inputs do not "
                    "change with the seed) |"),
            std::string::npos);
  EXPECT_EQ(md.find("| gemm |"), std::string::npos);  // flagged by nothing: not in the table
  EXPECT_NE(md.find("| broken | task | raised \\| oops |"), std::string::npos);
}

TEST(FormatTaskCheckMarkdown, PartialReportAndNothingFlagged) {
  std::vector<Task> tasks = {MakeTask("gemm", "2"), MakeTask("later", "5")};
  std::map<std::string, Json> records = {{"gemm", Checked("gemm", false)}};
  std::string md = FormatTaskCheckMarkdown(
      MakeTaskCheckReport("kb", tasks, records, TwoPolicies(), Json::object()));
  EXPECT_NE(md.find("**Partial report**: 1 of 2 tasks not done yet."), std::string::npos);
  EXPECT_NE(md.find("## Flagged tasks\n\nNone."), std::string::npos);
}

TEST(DescribeRecord, OneLinePerOutcome) {
  EXPECT_EQ(DescribeRecord(Checked("t", false)), "ok");
  EXPECT_EQ(DescribeRecord(Checked("t", true, true)),
            "flagged: zeros (paper), independent (paper, strict)");
  EXPECT_EQ(DescribeRecord({{"name", "t"}, {"ok", false}, {"reason", "raised"}}), "failed: raised");
}

}  // namespace
}  // namespace cuda_agent
