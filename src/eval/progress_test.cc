// progress_test.cc — the model's counts and ETA, and both renderings.
#include "eval/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace cuda_agent {
namespace {

TEST(ProgressModelTest, EtaFollowsThisSessionsPaceOverTheTasksLeft) {
  ProgressModel m(10, 4);  // 4 resumed from the store: 6 to run
  EXPECT_FALSE(m.Start().eta_s.has_value());
  ProgressSnapshot s = m.TaskDone("a", "correct", true, 30.0);
  EXPECT_EQ(s.Finished(), 5);
  EXPECT_DOUBLE_EQ(*s.eta_s, 150.0);  // 30 s per task, 5 left
  s = m.TaskDone("b", "failed", false, 40.0);
  EXPECT_EQ(s.failed, 1);
  EXPECT_DOUBLE_EQ(*s.eta_s, 80.0);  // 20 s per task, 4 left
}

TEST(ProgressFormatTest, DurationsReadAsPeopleWriteThem) {
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(252), "4m12s");
  EXPECT_EQ(FormatDuration(7500), "2h05m");
  EXPECT_EQ(FormatDuration(-3), "0s");
}

TEST(ProgressFormatTest, BarAndLogLine) {
  ProgressModel m(4, 1);
  ProgressSnapshot s = m.TaskDone("level1/19_ReLU", "correct, 1.50x vs eager", true, 10.0);
  EXPECT_EQ(FormatBar(s, 200),
            "[############............] 2/4  1 resumed  ETA 20s  level1/19_ReLU: correct, 1.50x vs "
            "eager");
  EXPECT_EQ(FormatBar(s, 20).size(), 20u);
  EXPECT_EQ(FormatLogLine(s), "[2/4] level1/19_ReLU: correct, 1.50x vs eager (ETA 20s)");
}

TEST(ProgressViewTest, LogLinesWriteOneLinePerTaskAndNoControlCharacters) {
  std::ostringstream out;
  Progress p(2, 0, MakeLogLines(out));
  p.TaskDone("a", "correct", true);
  p.TaskDone("b", "failed: build", false);
  p.Close();
  p.Close();  // once only
  std::string text = out.str();
  EXPECT_NE(text.find("[1/2] a: correct"), std::string::npos) << text;
  EXPECT_NE(text.find("[2/2] b: failed: build"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 failed)"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find("finished"), text.rfind("finished"));
}

TEST(ProgressViewTest, TerminalBarRedrawsInPlace) {
  std::ostringstream out;
  Progress p(2, 0, MakeTerminalBar(out, 80));
  p.TaskDone("a", "correct", true);
  p.Close();
  std::string text = out.str();
  EXPECT_EQ(text.front(), '\r');
  EXPECT_NE(text.find("\r[############............] 1/2"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
}

}  // namespace
}  // namespace cuda_agent
