// judge_options_test.cc — the option table: every option reads back what it writes, a bad value is
// refused with the flag's name, and docs/cli.md lists every option with its default.
#include "judge/judge_options.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "common/fs.h"

namespace cuda_agent {
namespace {

TEST(JudgeOptionTable, EveryOptionReadsBackItsDefaultAndNamesAreUnique) {
  std::set<std::string> flags, keys;
  const JudgeOptions defaults;
  for (const JudgeOptionField& f : JudgeOptionTable()) {
    EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
    if (f.travels()) {
      EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    }
    EXPECT_NE(std::string(f.help), "") << f.flag;
    const std::string text = JudgeOptionText(defaults, f.flag);
    JudgeOptions o;
    if (f.kind != OptionKind::kSwitch) {
      ASSERT_TRUE(SetJudgeOption(o, f.flag, text).ok()) << f.flag << " '" << text << "'";
    }
    EXPECT_EQ(JudgeOptionText(o, f.flag), text) << f.flag;
  }
}

TEST(JudgeOptionTable, ASetValueReadsBackAndReachesItsField) {
  JudgeOptions o;
  const std::pair<const char*, const char*> values[] = {
      {"device", "cpu"},
      {"until", "verify"},
      {"baselines", "eager"},
      {"checks", "7"},
      {"sampled-checks", "0"},
      {"sampled-seconds", "1.5"},
      {"timeout", "30"},
      {"reward", "paper"},
      {"policy", "tf32-fair"},
      {"baseline-store", "none"},
      {"sanitize", "racecheck"},
      {"timed-queues", "0"},
      {"profile-standby", "off"},
      {"keep-reference", "off"},
      {"keep-reference-idle", "5"},
      {"keep-reference-max", "1"},
      {"binding-clang", "off"},
      {"lease-gather", "off"},
  };
  for (auto [flag, text] : values) {
    ASSERT_TRUE(SetJudgeOption(o, flag, text).ok()) << flag;
    EXPECT_EQ(JudgeOptionText(o, flag), text) << flag;
  }
  EXPECT_EQ(o.device, Device::kCpu);
  EXPECT_EQ(o.until, Stage::kVerify);
  EXPECT_TRUE(o.eager_baseline && !o.compile_baseline);
  EXPECT_EQ(o.checks, 7);
  EXPECT_EQ(o.sampled_checks, 0);
  EXPECT_DOUBLE_EQ(o.sampled_checks_seconds, 1.5);
  EXPECT_EQ(o.policy.name, "tf32-fair");
  EXPECT_FALSE(o.use_baseline_store);
  EXPECT_EQ(o.timed_queues, 0);
  EXPECT_EQ(o.standby, StandbyMode::kOff);
  EXPECT_FALSE(StandbyWanted(o));
  EXPECT_FALSE(o.keep_reference);
  EXPECT_DOUBLE_EQ(o.keep_reference_idle_s, 5);
  EXPECT_EQ(o.keep_reference_max, 1);
  EXPECT_FALSE(o.lease_gather.on());
  // Gathering is on by default (4 timings or 1 s); other values read back as written.
  EXPECT_EQ(JudgeOptionText(JudgeOptions(), "lease-gather"), "4,1");
  ASSERT_TRUE(SetJudgeOption(o, "lease-gather", "8,2.5").ok());
  EXPECT_EQ(JudgeOptionText(o, "lease-gather"), "8,2.5");
  EXPECT_EQ(o.lease_gather.timings, 8);
  ASSERT_TRUE(SetJudgeOption(o, "sampled-min", "72").ok());
  EXPECT_EQ(JudgeOptionText(o, "sampled-min"), "72");
  EXPECT_EQ(o.sampled_min, 72);
  // The environment mirrors' old spellings: 0/1 for on/off, 0 for the binding compiler.
  ASSERT_TRUE(SetJudgeOption(o, "profile-standby", "1").ok());
  EXPECT_TRUE(StandbyWanted(o));
  ASSERT_TRUE(SetJudgeOption(o, "binding-clang", "0").ok());
  EXPECT_EQ(o.binding_clang, "off");
}

TEST(JudgeOptionTable, StandbyFollowsTheDeviceUnlessSet) {
  JudgeOptions o;
  EXPECT_TRUE(StandbyWanted(o));  // cuda
  o.device = Device::kCpu;
  EXPECT_FALSE(StandbyWanted(o));
}

TEST(JudgeOptionTable, ABadValueIsRefusedWithTheFlagsNameAndChangesNothing) {
  const std::pair<const char*, const char*> bad[] = {
      {"device", "tpu"},
      {"until", "done2"},
      {"baselines", "torch"},
      {"checks", "0"},
      {"sampled-checks", "10001"},
      {"sampled-min", "-1"},
      {"sampled-seconds", "-1"},
      {"warmup", "x"},
      {"iters", "0"},
      {"timeout", "0"},
      {"reward", "nope"},
      {"policy", "loose"},
      {"sanitize", "leakcheck"},
      {"timed-queues", "33"},
      {"profile-standby", "yes"},
      {"keep-reference", "maybe"},
      {"keep-reference-max", "0"},
      {"lease-gather", "2"},
      {"baseline-drift", "0"},
  };
  for (auto [flag, text] : bad) {
    JudgeOptions o;
    const std::string before = JudgeOptionText(o, flag);
    Status s = SetJudgeOption(o, flag, text);
    EXPECT_FALSE(s.ok()) << flag << " " << text;
    EXPECT_NE(s.message().find(flag), std::string::npos) << s.message();
    EXPECT_EQ(JudgeOptionText(o, flag), before) << flag;
  }
  JudgeOptions o;
  EXPECT_FALSE(SetJudgeOption(o, "no-such-option", "1").ok());
}

// docs/cli.md's table of `judge` lists each option on a line of its own with its default (the
// default's text as the table writes it, or a word for an empty one).
TEST(JudgeOptionTable, TheCommandLinePageListsEveryOptionWithItsDefault) {
  Result<std::string> page = ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "docs" / "cli.md");
  ASSERT_TRUE(page.ok());
  const JudgeOptions defaults;
  for (const JudgeOptionField& f : JudgeOptionTable()) {
    const std::string name = "`--" + std::string(f.flag) + "`";
    std::istringstream lines(page.value());
    std::string line, found;
    while (std::getline(lines, line)) {
      if (line.rfind("| ", 0) == 0 && line.find(name) != std::string::npos) {
        found = line;
        break;
      }
    }
    ASSERT_FALSE(found.empty()) << name << " has no row in docs/cli.md";
    const std::string text = JudgeOptionText(defaults, f.flag);
    if (!text.empty()) {
      EXPECT_NE(found.find(text), std::string::npos) << name << " default " << text;
    }
  }
}

}  // namespace
}  // namespace cuda_agent
