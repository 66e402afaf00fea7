// diagnostics_test.cc — compiler error extraction for g++, nvcc and the linker.
#include "builder/diagnostics.h"

#include <gtest/gtest.h>

#include "builder/extension_builder.h"

namespace cuda_agent {
namespace {

TEST(ParseCompilerErrors, Gcc) {
  std::string out =
      "/tmp/job/src/kernels/relu.cpp: In function 'void f()':\n"
      "/tmp/job/src/kernels/relu.cpp:12:5: error: 'x' was not declared in this scope\n"
      "/tmp/job/src/kernels/relu.cpp:13:1: warning: unused\n"
      "/tmp/job/src/kernels/relu.cpp:20:9: fatal error: foo.h: No such file or directory\n";
  auto errors = ParseCompilerErrors(out, "/tmp/job/src/", 10);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].file, "kernels/relu.cpp");
  EXPECT_EQ(errors[0].line, 12);
  EXPECT_EQ(errors[0].column, 5);
  EXPECT_EQ(errors[0].ToString(),
            "kernels/relu.cpp:12:5: error: 'x' was not declared in this scope");
  EXPECT_EQ(errors[1].line, 20);
}

TEST(ParseCompilerErrors, NvccAndLinker) {
  std::string out =
      "/w/src/kernels/k.cu(7): error: identifier \"blockDimx\" is undefined\n"
      "/w/src/kernels/k.cu(7): error: identifier \"blockDimx\" is undefined\n"
      "ptxas error   : Entry function uses too much shared data\n"
      "/usr/bin/ld: k.o: in function `f': undefined reference to `launch_relu'\n";
  auto errors = ParseCompilerErrors(out, "/w/src/", 10);
  ASSERT_EQ(errors.size(), 3u) << "duplicates are dropped";
  EXPECT_EQ(errors[0].ToString(), "kernels/k.cu:7: error: identifier \"blockDimx\" is undefined");
  EXPECT_EQ(errors[1].message, "Entry function uses too much shared data");
  EXPECT_NE(errors[2].message.find("undefined reference to `launch_relu'"), std::string::npos);
}

TEST(ParseCompilerErrors, Limit) {
  std::string out;
  for (int i = 1; i <= 30; ++i) out += "a.cpp:" + std::to_string(i) + ":1: error: e\n";
  EXPECT_EQ(ParseCompilerErrors(out, "", 8).size(), 8u);
}

TEST(CudaGencode, ArchitectureSpecificTargetsOnHopper) {
  EXPECT_EQ(CudaGencode("9.0"), "arch=compute_90a,code=sm_90a");
  EXPECT_EQ(CudaGencode("8.0"), "arch=compute_80,code=sm_80");
  EXPECT_EQ(CudaGencode("8.9"), "arch=compute_89,code=sm_89");
}

TEST(CollectSources, RulesPerDevice) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "src-test").value();
  ASSERT_TRUE(WriteFileAtomic(dir / "binding.cpp", "").ok());
  EXPECT_NE(CollectSources(dir, Device::kCpu).status().message().find("no kernel sources"),
            std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(dir / "kernels" / "a.cu", "").ok());
  EXPECT_NE(CollectSources(dir, Device::kCpu).status().message().find("cpu mode"),
            std::string::npos);
  Result<std::vector<fs::path>> cuda = CollectSources(dir, Device::kCuda);
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->size(), 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
