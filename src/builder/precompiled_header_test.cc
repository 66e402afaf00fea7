// precompiled_header_test.cc — which files get which precompiled header, and what is in it.
#include "builder/precompiled_header.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/test_dir.h"

namespace cuda_agent {
namespace {

TEST(PrecompiledHeader, VariantFollowsTheIncludes) {
  EXPECT_EQ(PchVariantFor("#include <cuda_runtime.h>\nint f();"), PchVariant::kNone);
  EXPECT_EQ(PchVariantFor("#include <torch/types.h>\n#include <c10/cuda/CUDAStream.h>"),
            PchVariant::kCore);
  EXPECT_EQ(PchVariantFor("#include <pybind11/pybind11.h>"), PchVariant::kCore);
  EXPECT_EQ(PchVariantFor("#include <torch/extension.h>"), PchVariant::kFull);
}

TEST(PrecompiledHeader, CoreHeaderLeavesOutTheFullApi) {
  std::string core = PchHeaderText(Device::kCuda, PchVariant::kCore);
  std::string full = PchHeaderText(Device::kCuda, PchVariant::kFull);
  EXPECT_EQ(core.find("torch/extension.h"), std::string::npos);
  EXPECT_NE(full.find("torch/extension.h"), std::string::npos);
  EXPECT_NE(core.find("c10/cuda/CUDAStream.h"), std::string::npos);
  EXPECT_EQ(PchHeaderText(Device::kCpu, PchVariant::kCore).find("cuda_runtime"), std::string::npos);
}

TEST(PrecompiledHeader, NothingWithoutACacheOrForPlainFiles) {
  Toolchain tc;
  EXPECT_FALSE(
      PrecompiledHeader("", {"g++"}, tc, PchVariant::kCore, PchCompiler::kGcc).has_value());
  EXPECT_FALSE(
      PrecompiledHeader("/tmp", {"g++"}, tc, PchVariant::kNone, PchCompiler::kGcc).has_value());
}

TEST(PrecompiledHeader, EachCompilerReadsItsOwnFile) {
  EXPECT_EQ(PchIncludeFlags("/c/pch/x", PchCompiler::kGcc),
            (std::vector<std::string>{"-include", "/c/pch/x/cuda_agent_pch.h"}));
  EXPECT_EQ(PchIncludeFlags("/c/pch/x", PchCompiler::kClang),
            (std::vector<std::string>{"-include-pch", "/c/pch/x/cuda_agent_pch.h.pch"}));
}

// A stand-in compiler: writes its arguments into the file after -o (after `delay` seconds), or
// fails when `fail`.
fs::path FakePchCompiler(const fs::path& dir, bool fail) {
  fs::path script = dir / (fail ? "failing-cc" : "recording-cc");
  std::string body = fail ? "#!/bin/sh\nexit 1\n"
                          : "#!/bin/sh\nall=\"$*\"\nwhile [ $# -gt 0 ]; do\n"
                            "  if [ \"$1\" = -o ]; then echo \"$all\" > \"$2\"; fi; shift\ndone\n";
  EXPECT_TRUE(WriteFileAtomic(script, body).ok());
  EXPECT_EQ(chmod(script.c_str(), 0755), 0);
  return script;
}

// Asks for the header until it is made (or `timeout_s` passes); the made folder or nothing.
std::optional<fs::path> WaitForHeader(const fs::path& cache, const std::vector<std::string>& flags,
                                      PchCompiler compiler, bool* failed, double timeout_s = 20) {
  Toolchain tc;
  for (int i = 0; i < timeout_s * 20; ++i) {
    std::optional<fs::path> dir =
        PrecompiledHeader(cache, flags, tc, PchVariant::kCore, compiler, true, failed);
    if (dir || *failed) return dir;
    usleep(50 * 1000);
  }
  return std::nullopt;
}

TEST(PrecompiledHeader, ClangsHeaderKeepsTheInstantiationsAndLivesApartFromGccs) {
  TestDir dir("pch-compilers");
  const std::vector<std::string> flags = {FakePchCompiler(dir.path(), false).string(), "-O0"};
  bool failed = true;
  std::optional<fs::path> clang =
      WaitForHeader(dir.path() / "cache", flags, PchCompiler::kClang, &failed);
  ASSERT_TRUE(clang.has_value());
  EXPECT_FALSE(failed);
  Result<std::string> made = ReadFile(*clang / "cuda_agent_pch.h.pch");
  ASSERT_TRUE(made.ok());
  EXPECT_NE(made->find("-fpch-instantiate-templates"), std::string::npos) << made.value();
  EXPECT_NE(made->find("-x c++-header"), std::string::npos) << made.value();

  std::optional<fs::path> gcc =
      WaitForHeader(dir.path() / "cache", flags, PchCompiler::kGcc, &failed);
  ASSERT_TRUE(gcc.has_value());
  EXPECT_NE(*gcc, *clang) << "one folder per compiler";
  Result<std::string> gch = ReadFile(*gcc / "cuda_agent_pch.h.gch");
  ASSERT_TRUE(gch.ok());
  EXPECT_EQ(gch->find("-fpch-instantiate-templates"), std::string::npos) << gch.value();
}

TEST(PrecompiledHeader, ANewClangAtTheSamePathGetsANewHeader) {
  TestDir dir("pch-upgrade");
  const std::vector<std::string> flags = {FakePchCompiler(dir.path(), false).string()};
  bool failed = false;
  std::optional<fs::path> before =
      WaitForHeader(dir.path() / "cache", flags, PchCompiler::kClang, &failed);
  ASSERT_TRUE(before.has_value());
  // The "upgrade": the same path, other content.
  Result<std::string> script = ReadFile(flags[0]);
  ASSERT_TRUE(script.ok());
  ASSERT_TRUE(WriteFileAtomic(flags[0], script.value() + "# upgraded\n").ok());
  ASSERT_EQ(chmod(flags[0].c_str(), 0755), 0);
  std::optional<fs::path> after =
      WaitForHeader(dir.path() / "cache", flags, PchCompiler::kClang, &failed);
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(*before, *after);
}

TEST(PrecompiledHeader, AFailedAttemptIsReportedAndNotRepeatedAtOnce) {
  TestDir dir("pch-failed");
  const std::vector<std::string> flags = {FakePchCompiler(dir.path(), true).string()};
  bool failed = false;
  EXPECT_FALSE(
      WaitForHeader(dir.path() / "cache", flags, PchCompiler::kClang, &failed).has_value());
  EXPECT_TRUE(failed);
  Toolchain tc;
  EXPECT_FALSE(PrecompiledHeader(dir.path() / "cache", flags, tc, PchVariant::kCore,
                                 PchCompiler::kClang, true, &failed)
                   .has_value());
  EXPECT_TRUE(failed) << "the failure stands for the hour";
}

TEST(PrecompiledHeader, AskingWithoutStartingMakesNothing) {
  TestDir dir("pch-no-start");
  Toolchain tc;
  const std::vector<std::string> flags = {FakePchCompiler(dir.path(), false).string()};
  EXPECT_FALSE(PrecompiledHeader(dir.path() / "cache", flags, tc, PchVariant::kCore,
                                 PchCompiler::kGcc, false)
                   .has_value());
  usleep(300 * 1000);
  EXPECT_FALSE(fs::exists(dir.path() / "cache" / "pch"));
}

}  // namespace
}  // namespace cuda_agent
