// binding_compiler_test.cc — which clang compiles binding files, and at which optimisation level.
#include "builder/binding_compiler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// FakeCompiler writes an executable script at `path` that prints `version` for --version.
void FakeCompiler(const fs::path& path, const std::string& version) {
  ASSERT_TRUE(WriteFileAtomic(path, "#!/bin/sh\necho '" + version + "'\necho 'Target: x'\n").ok());
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
}

class FindBindingClangTest : public ::testing::Test {
 protected:
  std::optional<BindingClang> FindWith(const std::string& setting) {
    return FindBindingClang(setting);
  }
};

TEST(ParseClangMajor, ReadsTheMajorVersionOfEveryVendorsLine) {
  EXPECT_EQ(ParseClangMajor("Debian clang version 14.0.6"), 14);
  EXPECT_EQ(ParseClangMajor("Ubuntu clang version 16.0.6 (15)"), 16);
  EXPECT_EQ(ParseClangMajor("clang version 9.0.1"), 9);
  EXPECT_EQ(ParseClangMajor("g++ (GCC) 12.2.0"), 0);
  EXPECT_EQ(ParseClangMajor("clang version "), 0);
  EXPECT_EQ(ParseClangMajor(""), 0);
}

TEST(BindingOptimization, HostGlueUnoptimisedOnlyWhereTheHostIsNotTimed) {
  EXPECT_STREQ(BindingOptimization(Device::kCuda), "-O0");
  EXPECT_STREQ(BindingOptimization(Device::kCpu), "-O3");
}

TEST_F(FindBindingClangTest, OffTurnsItOff) { EXPECT_FALSE(FindWith("off").has_value()); }

TEST_F(FindBindingClangTest, ANamedCompilerIsUsedWhenItIsARecentClang) {
  TestDir dir("binding-clang");
  FakeCompiler(dir.path() / "clang++-fake", "Debian clang version 14.0.6");
  std::optional<BindingClang> clang = FindWith((dir.path() / "clang++-fake").string());
  ASSERT_TRUE(clang.has_value());
  EXPECT_EQ(clang->path, (dir.path() / "clang++-fake").string());
  EXPECT_EQ(clang->version, "Debian clang version 14.0.6");
  EXPECT_EQ(clang->major, 14);
}

TEST_F(FindBindingClangTest, AnOldClangOrNoCompilerAtAllIsNone) {
  TestDir dir("binding-clang-old");
  FakeCompiler(dir.path() / "clang++-old", "clang version 9.0.0");
  EXPECT_FALSE(FindWith((dir.path() / "clang++-old").string()).has_value());
  FakeCompiler(dir.path() / "not-clang", "g++ (GCC) 12.2.0");
  EXPECT_FALSE(FindWith((dir.path() / "not-clang").string()).has_value());
  EXPECT_FALSE(FindWith((dir.path() / "missing" / "clang++").string()).has_value());
}

}  // namespace
}  // namespace cuda_agent
