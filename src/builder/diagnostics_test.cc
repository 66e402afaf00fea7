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
  Candidate headers_only =
      Candidate::FromFiles({{"kernels/a.cuh", ""}, {"model_new.py", ""}}).value();
  EXPECT_NE(CollectSources(headers_only, Device::kCpu).status().message().find("no kernel sources"),
            std::string::npos);
  Candidate cuda_source = Candidate::FromFiles({{"kernels/a.cu", ""}}).value();
  EXPECT_NE(CollectSources(cuda_source, Device::kCpu).status().message().find("cpu mode"),
            std::string::npos);
  Result<std::vector<fs::path>> cuda = CollectSources(cuda_source, Device::kCuda);
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda.value(), (std::vector<fs::path>{"binding.cpp", "kernels/a.cu"}));
}

// The order a listing of the written folder gave (path order, not the names' byte order): the
// link command, and so the linked library's cache key, do not change.
TEST(CollectSources, InPathOrder) {
  Candidate c = Candidate::FromFiles({{"kernels/a.b.cpp", ""},
                                      {"kernels/a/x.cpp", ""},
                                      {"kernels/a.cu", ""},
                                      {"kernels/z.cuh", ""}})
                    .value();
  Result<std::vector<fs::path>> sources = CollectSources(c, Device::kCuda);
  ASSERT_TRUE(sources.ok());
  EXPECT_EQ(sources.value(), (std::vector<fs::path>{"binding.cpp", "kernels/a/x.cpp",
                                                    "kernels/a.b.cpp", "kernels/a.cu"}));
}

TEST(LinkedLibraries, TorchsThenTheScannedOnesOnCudaOnly) {
  const CudaLibraries cublas = {CudaLibrary::kCublas};
  EXPECT_EQ(LinkedLibraries(Device::kCpu, cublas),
            (std::vector<std::string>{"c10", "torch", "torch_cpu", "torch_python"}));
  EXPECT_EQ(LinkedLibraries(Device::kCuda, {}),
            (std::vector<std::string>{"c10", "torch", "torch_cpu", "torch_python", "c10_cuda",
                                      "torch_cuda", "cudart"}));
  EXPECT_EQ(LinkedLibraries(Device::kCuda, {CudaLibrary::kCudnn, CudaLibrary::kCublas}).back(),
            "cudnn");
  EXPECT_EQ(LinkedLibraries(Device::kCuda, cublas).back(), "cublas");
}

}  // namespace
}  // namespace cuda_agent
