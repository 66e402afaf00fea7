// options_test.cc — the option table: values, switches, errors and environment mirrors.
#include "cli/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace cuda_agent {
namespace {

const std::vector<OptionSpec> kSpecs = {
    {"device", true, "", "cuda"}, {"json", false, "", ""}, {"iters", true, "", "20"}};

TEST(ParseArgs, ValuesSwitchesDefaults) {
  Result<ParsedArgs> a = ParseArgs(kSpecs, {"--device", "cpu", "--json", "pos", "--iters=7"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->Get("device"), "cpu");
  EXPECT_TRUE(a->Has("json"));
  EXPECT_EQ(a->Get("iters"), "7");
  EXPECT_EQ(a->positional(), std::vector<std::string>{"pos"});
  Result<ParsedArgs> d = ParseArgs(kSpecs, {});
  EXPECT_EQ(d->Get("device"), "cuda");
  EXPECT_FALSE(d->Has("json"));
}

TEST(ParseArgs, Errors) {
  EXPECT_FALSE(ParseArgs(kSpecs, {"--nope"}).ok());
  EXPECT_FALSE(ParseArgs(kSpecs, {"--device"}).ok());
  EXPECT_FALSE(ParseArgs(kSpecs, {"--json=1"}).ok());
  EXPECT_FALSE(ParseArgs(kSpecs, {"-x"}).ok());
}

TEST(ParseArgs, EnvironmentMirror) {
  EXPECT_EQ(EnvName("task-timeout"), "CUDA_AGENT_TASK_TIMEOUT");
  setenv("CUDA_AGENT_ITERS", "3", 1);
  setenv("CUDA_AGENT_JSON", "1", 1);
  Result<ParsedArgs> a = ParseArgs(kSpecs, {});
  EXPECT_EQ(a->Get("iters"), "3");
  EXPECT_TRUE(a->Has("json"));
  Result<ParsedArgs> b = ParseArgs(kSpecs, {"--iters", "9"});
  EXPECT_EQ(b->Get("iters"), "9") << "the command line wins over the environment";
  unsetenv("CUDA_AGENT_ITERS");
  unsetenv("CUDA_AGENT_JSON");
}

TEST(AsksForHelp, OnlyBeforeTheEndOfOptions) {
  EXPECT_TRUE(AsksForHelp({"--help"}));
  EXPECT_TRUE(AsksForHelp({"run", "-h"}));
  EXPECT_TRUE(AsksForHelp({"run", "--writable", "x", "--help", "--", "echo"}));
  EXPECT_FALSE(AsksForHelp({}));
  EXPECT_FALSE(AsksForHelp({"run", "--", "echo", "--help"}));
  EXPECT_FALSE(AsksForHelp({"run", "--", "ls", "-h"}));
  EXPECT_FALSE(AsksForHelp({"--helpful"}));
}

TEST(ParseFlags, Numbers) {
  Result<ParsedArgs> a = ParseArgs(kSpecs, {"--iters", "x"});
  EXPECT_FALSE(ParseIntFlag(a.value(), "iters").ok());
  Result<ParsedArgs> b = ParseArgs(kSpecs, {"--iters", "12"});
  EXPECT_EQ(ParseIntFlag(b.value(), "iters").value(), 12);
}

TEST(ParseFlags, ZeroOnlyWhereItMeansOff) {
  Result<ParsedArgs> a = ParseArgs(kSpecs, {"--iters", "0"});
  EXPECT_FALSE(ParseDoubleFlag(a.value(), "iters").ok());
  EXPECT_EQ(ParseDoubleFlag(a.value(), "iters", /*allow_zero=*/true).value(), 0.0);
  Result<ParsedArgs> b = ParseArgs(kSpecs, {"--iters", "-1"});
  EXPECT_FALSE(ParseDoubleFlag(b.value(), "iters", /*allow_zero=*/true).ok());
}

}  // namespace
}  // namespace cuda_agent
