// nvcc_plan_test.cc — reading nvcc's dryrun into two chains, and a real nvcc building through them.
#include "builder/nvcc_plan.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <regex>
#include <set>

#include "builder/extension_builder.h"
#include "builder/fat_binary.h"
#include "common/subprocess.h"
#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// nvcc 13.0's dryrun of `nvcc -c -O3 ... -keep --keep-dir /w/out/.nvcc/k /w/src/kernels/k.cu -o
// /w/out/k.o`, its paths shortened and its preprocessing lines cut to their essentials.
constexpr const char* kDryrun = R"(#$ _NVVM_BRANCH_=nvvm
#$ _SPACE_= 
#$ TOP=/cuda/bin/..
#$ CICC_PATH=/cuda/bin/../nvvm/bin
#$ NVVMIR_LIBRARY_DIR=/cuda/bin/../nvvm/libdevice
#$ PATH=/cuda/bin/../nvvm/bin:/cuda/bin:/usr/bin:/bin
#$ SYSTEM_INCLUDES="-isystem" "/cuda/bin/../targets/x86_64-linux/include/cccl"  
#$ CUDAFE_FLAGS=
#$ gcc -std=c++17 -E -x c++ -D__CUDACC__ -fPIC -O3 -I"/w/src" -include "cuda_runtime.h" -m64 "/w/src/kernels/k.cu" -o "/w/out/.nvcc/k/k.cpp4.ii" 
#$ cudafe++ --c++17 --orig_src_file_name "/w/src/kernels/k.cu" --gen_c_file_name "/w/out/.nvcc/k/k.cudafe1.cpp" --stub_file_name "k.cudafe1.stub.c" --gen_module_id_file --module_id_file_name "/w/out/.nvcc/k/k.module_id" "/w/out/.nvcc/k/k.cpp4.ii" 
#$ gcc -std=c++17 -D__CUDA_ARCH__=900 -E -x c++ -fPIC -O3 -I"/w/src" -m64 "/w/src/kernels/k.cu" -o "/w/out/.nvcc/k/k.cpp1.ii" 
#$ "$CICC_PATH/cicc" --c++17 -arch compute_90a --include_file_name "k.fatbin.c" -tused --module_id_file_name "/w/out/.nvcc/k/k.module_id" --stub_file_name "/w/out/.nvcc/k/k.cudafe1.stub.c" "/w/out/.nvcc/k/k.cpp1.ii" -o "/w/out/.nvcc/k/k.ptx"
#$ ptxas -arch=sm_90a -m64  "/w/out/.nvcc/k/k.ptx"  -o "/w/out/.nvcc/k/k.cubin" 
#$ fatbinary --create="/w/out/.nvcc/k/k.fatbin" -64 --cicc-cmdline="-ftz=0 -fmad=1 " "--image3=kind=elf,sm=90a,file=/w/out/.nvcc/k/k.cubin" --embedded-fatbin="/w/out/.nvcc/k/k.fatbin.c" 
#$ rm /w/out/.nvcc/k/k.fatbin
#$ gcc -std=c++17 -D__CUDA_ARCH__=900 -c -x c++ -fPIC -O3 -I"/w/src" -m64 "/w/out/.nvcc/k/k.cudafe1.cpp" -o "/w/out/k.o" 
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(PlanNvcc, SplitsNvccsCommandsIntoTwoChainsAndTheHostCompile) {
  Result<NvccPlan> plan = PlanNvcc(kDryrun);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->host_chain.size(), 2u);
  EXPECT_EQ(plan->host_chain[0].back(), "/w/out/.nvcc/k/k.cpp4.ii");
  const CommandLine& cudafe = plan->host_chain[1];
  EXPECT_EQ(cudafe.front(), "cudafe++");
  EXPECT_EQ(std::count(cudafe.begin(), cudafe.end(), "--gen_module_id_file"), 0)
      << "cudafe++ reads the module id written beforehand instead of generating it";
  ASSERT_EQ(plan->device_chain.size(), 4u) << "rm is dropped";
  EXPECT_EQ(plan->device_chain[1].front(), "/cuda/bin/../nvvm/bin/cicc");
  EXPECT_EQ(plan->device_chain[2].front(), "ptxas");
  const CommandLine& fatbinary = plan->device_chain[3];
  EXPECT_EQ(fatbinary[1], "--create=/w/out/.nvcc/k/k.fatbin");
  EXPECT_EQ(fatbinary[3], "--cicc-cmdline=-ftz=0 -fmad=1 ");
  EXPECT_EQ(plan->host_compile.back(), "/w/out/k.o");
  EXPECT_EQ(plan->module_id_file, "/w/out/.nvcc/k/k.module_id");
  std::set<std::string> env(plan->env.begin(), plan->env.end());
  EXPECT_TRUE(env.count("CICC_PATH=/cuda/bin/../nvvm/bin"));
  EXPECT_TRUE(env.count("PATH=/cuda/bin/../nvvm/bin:/cuda/bin:/usr/bin:/bin"));
  EXPECT_TRUE(env.count("_SPACE_="));
}

TEST(PlanNvcc, RefusesEveryOtherShape) {
  struct Case {
    std::string dryrun;
    std::string says;
  };
  std::string text = kDryrun;
  std::vector<Case> cases = {
      {Replace(text, "cudafe++ --c++17", "otherfe --c++17"), "no cudafe++"},
      {Replace(text, "--gen_module_id_file ", ""), "does not generate the module id"},
      {Replace(text, "-tused --module_id_file_name \"/w/out/.nvcc/k/k.module_id\"",
               "-tused --module_id_file_name \"/w/out/other.module_id\""),
       "another module id"},
      {Replace(text, "-c -x c++ -fPIC", "-x c++ -fPIC"), "does not compile"},
      {Replace(text, "-std=c++17 -E -x c++ -D__CUDACC__", "-std=c++17 -x c++ -D__CUDACC__"),
       "not preprocessing"},
      {Replace(text, "\"$CICC_PATH/cicc\"", "\"$OTHER_PATH/cicc\""), "OTHER_PATH is not set"},
      {"#$ PATH=/bin\n#$ cudafe++ x\n", "expected at least 4"},
  };
  for (const Case& c : cases) {
    Result<NvccPlan> plan = PlanNvcc(c.dryrun);
    ASSERT_FALSE(plan.ok()) << c.says;
    EXPECT_NE(plan.status().message().find(c.says), std::string::npos) << plan.status().message();
  }
}

TEST(SplitCommandLine, QuotesEscapesAndVariables) {
  std::map<std::string, std::string> vars = {{"A", "/a b"}, {"B", "x"}};
  Result<CommandLine> words =
      SplitCommandLine(R"(tool "$A/bin" '$A' ${B}y "q\"q" a\ b "" -o"f g")", vars);
  ASSERT_TRUE(words.ok()) << words.status().message();
  EXPECT_EQ(words.value(),
            (CommandLine{"tool", "/a b/bin", "$A", "xy", "q\"q", "a b", "", "-of g"}));
  for (const char* bad : {"a `b`", "a $(b)", "a; b", "a | b", "a > b", "\"open", "$NOPE"}) {
    EXPECT_FALSE(SplitCommandLine(bad, vars).ok()) << bad;
  }
}

TEST(ShellScript, EveryWordReachesTheCommandAsWrittenAndAFailureStopsTheChain) {
  TestDir dir("shell-script");
  CommandLine print = {"printf", "%s|", "it's", "$HOME", "`id`", "a b", "; rm -rf x"};
  RunOptions opt;
  opt.argv = {"/bin/sh", "-c",
              ShellScript({print, {"false"}, {"touch", (dir.path() / "reached").string()}})};
  Result<RunResult> run = RunProcess(opt);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->out, "it's|$HOME|`id`|a b|; rm -rf x|");
  EXPECT_FALSE(run->Succeeded());
  EXPECT_FALSE(fs::exists(dir.path() / "reached"));
}

TEST(NvccModuleId, NvccsShapeOneIdPerContent) {
  std::string id = NvccModuleId("relu_scale.cu", "key1");
  EXPECT_EQ(id.substr(9), "_13_relu_scale_cu_" + id.substr(id.size() - 8));
  EXPECT_EQ(id[0], '_');
  EXPECT_EQ(id, NvccModuleId("relu_scale.cu", "key1"));
  EXPECT_NE(id, NvccModuleId("relu_scale.cu", "key2"));
}

// The real nvcc, where one is installed (CUDA_HOME or /usr/local/cuda); no GPU is needed.
class SplitBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* home = std::getenv("CUDA_HOME");
    cuda_home_ = home != nullptr ? home : "/usr/local/cuda";
    if (!fs::exists(fs::path(cuda_home_) / "bin" / "nvcc")) {
      GTEST_SKIP() << "no nvcc under " << cuda_home_;
    }
  }

  // Builds binding.cpp (empty) and kernels/k.cu; no torch libraries are linked here, so a build
  // whose objects compiled ends in "link failed".
  BuildReport Build(const fs::path& root, const std::string& kernel, std::string cuda_home = "",
                    bool sandboxed = true, std::function<void(const fs::path&)> on_device_code = {},
                    bool split = true) {
    EXPECT_TRUE(
        WriteFileAtomic(root / "template" / "binding.cpp", "int binding_marker() { return 1; }\n")
            .ok());
    Result<Candidate> candidate = Candidate::FromFiles({{"kernels/k.cu", kernel}});
    EXPECT_TRUE(candidate.ok());
    Toolchain tc;
    tc.device = Device::kCuda;
    tc.cuda_home = cuda_home.empty() ? cuda_home_ : cuda_home;
    tc.gpu = GpuInfo{"test", "9.0", "sm_90"};
    BuildRequest req;
    req.template_dir = root / "template";
    req.out_dir = root / "out";
    // As the judge builds (the chains' runs and the link's once differed in whether they kept the
    // host uid).
    if (sandboxed) req.sandbox = &Sandbox::Default();
    req.on_device_code = std::move(on_device_code);
    req.split_nvcc = split;
    return BuildExtension(candidate.value(), req, tc);
  }

  // The object's global symbols, the module id (in the names of what an anonymous namespace
  // holds) replaced by "ID": nvcc's and the plan's ids differ.
  std::set<std::string> GlobalSymbols(const fs::path& object) {
    RunOptions nm;
    nm.argv = {"nm", "-g", "--defined-only", object.string()};
    Result<RunResult> run = RunProcess(nm);
    EXPECT_TRUE(run.ok() && run->Succeeded());
    std::set<std::string> names;
    size_t pos = 0;
    while (run.ok() && pos < run->out.size()) {
      size_t end = run->out.find('\n', pos);
      if (end == std::string::npos) end = run->out.size();
      std::string line = run->out.substr(pos, end - pos);
      std::regex id("[0-9a-f]{8}_4_k_cu_[0-9a-f]{8}");
      names.insert(std::regex_replace(line.substr(line.rfind(' ') + 1), id, "ID"));
      pos = end + 1;
    }
    return names;
  }

  std::string cuda_home_;
};

constexpr const char* kKernel = R"(#include <cuda_runtime.h>
namespace {
__global__ void scale_kernel(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
}  // namespace
void launch_scale(float* y, const float* x, int n) { scale_kernel<<<(n + 255) / 256, 256>>>(y, x, n); }
)";

TEST_F(SplitBuild, CompilesTheSameObjectAsNvccItself) {
  TestDir split_dir("split-build");
  BuildReport split = Build(split_dir.path(), kKernel);
  EXPECT_EQ(split.objects_compiled, 2) << split.failure << split.log_tail;
  EXPECT_EQ(split.objects_split, 1);
  EXPECT_NE(split.failure.find("link failed"), std::string::npos) << split.failure;
  EXPECT_EQ(split.log_tail.find("Permission denied"), std::string::npos) << split.log_tail;
  EXPECT_NE(split.log_tail.find("-lc10"), std::string::npos)
      << "only torch's libraries are missing";
  EXPECT_FALSE(fs::exists(split_dir.path() / "out" / ".nvcc" / "kernels_k.cu"))
      << "the chains' intermediate files are removed";

  TestDir plain_dir("plain-build");
  BuildReport plain = Build(plain_dir.path(), kKernel, "", true, {}, /*split=*/false);
  EXPECT_EQ(plain.objects_compiled, 2) << plain.failure << plain.log_tail;
  EXPECT_EQ(plain.objects_split, 0);

  std::set<std::string> symbols = GlobalSymbols(split_dir.path() / "out" / "kernels_k.cu.o");
  EXPECT_TRUE(symbols.count("_Z12launch_scalePfPKfi")) << "the launcher";
  EXPECT_TRUE(symbols.count("_ZN36_GLOBAL__N__ID12scale_kernelEPfPKfi")) << "the kernel's stub";
  EXPECT_EQ(symbols, GlobalSymbols(plain_dir.path() / "out" / "kernels_k.cu.o"));
}

TEST_F(SplitBuild, RecordsWhereTheBuildTimeGoes) {
  TestDir dir("split-steps");
  BuildReport report = Build(dir.path(), kKernel);
  ASSERT_EQ(report.objects_split, 1) << report.failure << report.log_tail;
  std::map<std::string, BuildStep> steps;
  for (const BuildStep& step : report.steps) {
    EXPECT_GE(step.start_s, 0) << step.name;
    EXPECT_LE(step.start_s + step.seconds, report.seconds + 1e-6) << step.name;
    steps[step.name] = step;
  }
  std::set<std::string> names;
  for (const auto& [name, step] : steps) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"binding.cpp: compile", "kernels/k.cu: nvcc -dryrun",
                                          "kernels/k.cu: host chain", "kernels/k.cu: device chain",
                                          "kernels/k.cu: host compile", "link"}));
  const BuildStep& host = steps["kernels/k.cu: host chain"];
  const BuildStep& device = steps["kernels/k.cu: device chain"];
  EXPECT_LT(device.start_s, host.start_s + host.seconds) << "the chains ran side by side";
  EXPECT_GE(steps["kernels/k.cu: host compile"].start_s,
            std::max(host.start_s + host.seconds, device.start_s + device.seconds) - 1e-6);
  EXPECT_GE(steps["link"].start_s, steps["kernels/k.cu: host compile"].start_s);

  TestDir plain_dir("plain-steps");
  BuildReport plain = Build(plain_dir.path(), kKernel, "", true, {}, /*split=*/false);
  std::set<std::string> plain_names;
  for (const BuildStep& step : plain.steps) plain_names.insert(step.name);
  EXPECT_TRUE(plain_names.count("kernels/k.cu: compile")) << plain.failure;
}

TEST_F(SplitBuild, HandsOverTheDeviceCodeTheObjectEmbedsBeforeTheHostCompile) {
  TestDir dir("split-device-code");
  std::mutex mu;
  std::vector<fs::path> handed;
  bool object_there = true;
  BuildReport report = Build(dir.path(), kKernel, "", true, [&](const fs::path& fatbin) {
    std::lock_guard<std::mutex> lock(mu);
    handed.push_back(fatbin);
    object_there = fs::exists(dir.path() / "out" / "kernels_k.cu.o");
  });
  EXPECT_EQ(report.objects_split, 1) << report.failure;
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_FALSE(object_there) << "handed over before the host compile made the object";
  Result<std::vector<std::string>> fatbin = FatbinFile(handed.front());
  ASSERT_TRUE(fatbin.ok()) << fatbin.status().message();
  Result<std::vector<std::string>> embedded = LibraryFatbins(dir.path() / "out" / "kernels_k.cu.o");
  ASSERT_TRUE(embedded.ok()) << embedded.status().message();
  EXPECT_EQ(fatbin.value(), embedded.value());  // what the inspection reads is what runs
  ASSERT_EQ(embedded->size(), 1u);
}

TEST_F(SplitBuild, AnUnexpectedDryrunFallsBackToNvccItself) {
  TestDir dir("split-fallback");
  // An nvcc whose dryrun lists other commands (a later release, say) and that compiles as nvcc
  // does. Outside the sandbox: its private /tmp would hide this script.
  fs::path fake = dir.path() / "cuda" / "bin" / "nvcc";
  std::string real = (fs::path(cuda_home_) / "bin" / "nvcc").string();
  ASSERT_TRUE(WriteFileAtomic(fake,
                              "#!/bin/sh\ncase \" $* \" in *\" -dryrun \"*)\n"
                              "  echo '#$ newtool --all-phases-at-once' >&2; exit 0;;\nesac\n"
                              "exec '" +
                                  real + "' \"$@\"\n")
                  .ok());
  fs::permissions(fake, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  BuildReport report = Build(dir.path(), kKernel, (dir.path() / "cuda").string(), false);
  EXPECT_EQ(report.objects_split, 0);
  EXPECT_EQ(report.objects_compiled, 2) << report.failure << report.log_tail;
  EXPECT_TRUE(GlobalSymbols(dir.path() / "out" / "kernels_k.cu.o").count("_Z12launch_scalePfPKfi"));
}

TEST_F(SplitBuild, ReportsAFrontEndErrorOnceAndAPtxasErrorFromTheDeviceChain) {
  TestDir dir("split-errors");
  BuildReport syntax =
      Build(dir.path(), "__global__ void k(float* y) {\n  y[0] = undeclared;\n}\n");
  EXPECT_EQ(syntax.objects_split, 1);
  EXPECT_NE(syntax.failure.find("kernels/k.cu:2"), std::string::npos) << syntax.failure;
  EXPECT_NE(syntax.failure.find("undeclared"), std::string::npos) << syntax.failure;
  size_t first = syntax.log_tail.find("error: identifier");
  EXPECT_NE(first, std::string::npos) << syntax.log_tail;
  EXPECT_EQ(syntax.log_tail.find("error: identifier", first + 1), std::string::npos)
      << "cicc's copy of the front end's error is not shown: " << syntax.log_tail;

  BuildReport ptxas = Build(dir.path(),
                            "__global__ void k(float* y) {\n  __shared__ float s[100000];\n"
                            "  s[threadIdx.x] = y[threadIdx.x];\n  __syncthreads();\n"
                            "  y[threadIdx.x] = s[threadIdx.x + 1];\n}\n");
  EXPECT_EQ(ptxas.objects_split, 1);
  EXPECT_NE(ptxas.failure.find("shared"), std::string::npos) << ptxas.failure << ptxas.log_tail;
}

}  // namespace
}  // namespace cuda_agent
