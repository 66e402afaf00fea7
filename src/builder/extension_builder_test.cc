// extension_builder_test.cc — the builder on the candidate value: it builds a value whose folder is
// gone, compiles the value rather than what its folder holds now, leaves nothing of an earlier
// build to be included, and links exactly the CUDA libraries it is given. With g++ and empty
// stand-ins for torch's libraries (no torch, no nvcc, no GPU needed).
#include "builder/extension_builder.h"

#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "common/test_dir.h"

namespace cuda_agent {
namespace {

class ValueBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteFileAtomic(dir_.path() / "template" / kBindingSource,
                                "int binding_marker() { return 1; }\n")
                    .ok());
    // Empty libraries named like torch's and the CUDA ones, each with a SONAME the link records.
    fs::create_directories(libs());
    for (const std::string name : {"c10", "torch", "torch_cpu", "torch_python", "c10_cuda",
                                   "torch_cuda", "cudart", "cublas", "cudnn"}) {
      RunOptions cc;
      cc.argv = {"g++",
                 "-shared",
                 "-nostdlib",
                 "-o",
                 (libs() / ("lib" + name + ".so")).string(),
                 "-Wl,-soname,lib" + name + ".so.1",
                 "-x",
                 "c",
                 "/dev/null"};
      Result<RunResult> made = RunProcess(cc);
      ASSERT_TRUE(made.ok() && made->Succeeded()) << name << (made.ok() ? made->err : "");
    }
  }

  fs::path libs() const { return dir_.path() / "libs"; }

  Candidate Value(std::map<std::string, std::string> files) {
    Result<Candidate> c = Candidate::FromFiles(std::move(files));
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? c.value() : Candidate();
  }

  BuildReport Build(const Candidate& candidate, Device device = Device::kCpu,
                    CudaLibraries libraries = {}) {
    Toolchain tc;
    tc.device = device;
    tc.library_dirs = {libs().string()};
    BuildRequest req;
    req.template_dir = dir_.path() / "template";
    req.out_dir = dir_.path() / "out";
    req.cache_dir = dir_.path() / "cache";
    req.libraries = std::move(libraries);
    req.binding_clang = "off";
    return BuildExtension(candidate, req, tc);
  }

  // Output: what `argv` prints, "" when it cannot run.
  static std::string Output(std::vector<std::string> argv) {
    RunOptions opt;
    opt.argv = std::move(argv);
    Result<RunResult> run = RunProcess(opt);
    return run.ok() && run->Succeeded() ? run->out : "";
  }

  TestDir dir_{"value-build"};
};

constexpr const char* kKernel = "int value_kernel() { return 7; }\n";

TEST_F(ValueBuild, BuildsAValueWhoseFolderIsGone) {
  TestDir folder("value-folder");
  ASSERT_TRUE(WriteFileAtomic(folder.path() / "kernels" / "k.cpp", kKernel).ok());
  Result<Candidate> candidate = Candidate::FromFolder(folder.path());
  ASSERT_TRUE(candidate.ok());
  fs::remove_all(folder.path());
  BuildReport report = Build(candidate.value());
  ASSERT_TRUE(report.ok) << report.failure << report.log_tail;
  EXPECT_EQ(report.sources, (std::vector<std::string>{"binding.cpp", "kernels/k.cpp"}));
  EXPECT_TRUE(fs::exists(report.library));
  EXPECT_EQ(ReadFile(dir_.path() / "out" / kBuildSourceFolder / "kernels" / "k.cpp").value(),
            kKernel)
      << "the compilers' copy is written from the value";
}

TEST_F(ValueBuild, CompilesTheValueNotWhatItsFolderHoldsNow) {
  TestDir folder("value-changed");
  ASSERT_TRUE(WriteFileAtomic(folder.path() / "kernels" / "k.cpp", kKernel).ok());
  Result<Candidate> candidate = Candidate::FromFolder(folder.path());
  ASSERT_TRUE(candidate.ok());
  ASSERT_TRUE(WriteFileAtomic(folder.path() / "kernels" / "k.cpp",
                              "int changed_after_reading() { return 8; }\n")
                  .ok());
  BuildReport report = Build(candidate.value());
  ASSERT_TRUE(report.ok) << report.failure << report.log_tail;
  std::string symbols = Output({"nm", "-D", "--defined-only", report.library.string()});
  if (symbols.empty()) GTEST_SKIP() << "no nm";
  EXPECT_NE(symbols.find("value_kernel"), std::string::npos) << symbols;
  EXPECT_EQ(symbols.find("changed_after_reading"), std::string::npos) << symbols;
}

TEST_F(ValueBuild, AnEarlierBuildsFilesAreNotThereToInclude) {
  BuildReport first =
      Build(Value({{"kernels/k.cpp", "#include \"old.h\"\nint k() { return OLD; }\n"},
                   {"kernels/old.h", "#define OLD 1\n"}}));
  ASSERT_TRUE(first.ok) << first.failure << first.log_tail;
  BuildReport second =
      Build(Value({{"kernels/k.cpp", "#include \"old.h\"\nint k() { return OLD; }\n"}}));
  EXPECT_FALSE(second.ok) << "old.h is not part of this candidate";
  EXPECT_NE(second.failure.find("old.h"), std::string::npos) << second.failure;
}

// The libraries linked are the ones given (the static scan's), not words in the text: a comment
// naming cuBLAS links nothing more, and cuBLAS given is linked (recorded as needed).
TEST_F(ValueBuild, LinksExactlyTheLibrariesItIsGiven) {
  const Candidate candidate =
      Value({{"kernels/k.cpp", "// faster than cublas; no cudnn either\nint k() { return 1; }\n"}});
  BuildReport plain = Build(candidate, Device::kCuda);
  ASSERT_TRUE(plain.ok) << plain.failure << plain.log_tail;
  EXPECT_TRUE(plain.libraries.empty());
  std::string needed = Output({"readelf", "-d", plain.library.string()});
  if (needed.empty()) GTEST_SKIP() << "no readelf";
  EXPECT_NE(needed.find("libcudart.so.1"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("libcublas.so.1"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("libcudnn.so.1"), std::string::npos) << needed;

  BuildReport gemm = Build(candidate, Device::kCuda, {CudaLibrary::kCublas});
  ASSERT_TRUE(gemm.ok) << gemm.failure << gemm.log_tail;
  EXPECT_EQ(gemm.objects_cached, 2) << "the objects' keys do not depend on the link";
  EXPECT_FALSE(gemm.library_cached) << "another link command is another library";
  EXPECT_EQ(gemm.libraries, (std::vector<std::string>{"cublas"}));
  needed = Output({"readelf", "-d", gemm.library.string()});
  EXPECT_NE(needed.find("libcublas.so.1"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("libcudnn.so.1"), std::string::npos) << needed;
}

TEST_F(ValueBuild, ATemplateWithoutBindingCppIsAFailure) {
  fs::remove(dir_.path() / "template" / kBindingSource);
  BuildReport report = Build(Value({{"kernels/k.cpp", kKernel}}));
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.failure.find("binding.cpp"), std::string::npos) << report.failure;
}

}  // namespace
}  // namespace cuda_agent
