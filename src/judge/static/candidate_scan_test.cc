// candidate_scan_test.cc — the static scan of whole candidates (values, as the judge reads them
// once): which files are scanned, quoted includes resolved against the value, the size limit, the
// CUDA libraries the sources use (what the build links); the bundled examples and the workspace
// template must scan clean, and every hack-corpus case that needs the C++ scan must be rejected by
// the rule its case names.
#include <gtest/gtest.h>

#include "common/json.h"
#include "common/test_dir.h"
#include "judge/static_rules.h"

namespace cuda_agent {
namespace {

// ScanFolder: the scan of the candidate a folder holds, read as the judge reads it.
CandidateScan ScanFolder(const fs::path& dir) {
  Result<Candidate> candidate = Candidate::FromFolder(dir);
  EXPECT_TRUE(candidate.ok()) << dir << ": " << candidate.status().message();
  return candidate.ok() ? ScanCandidate(candidate.value()) : CandidateScan{};
}

CudaLibraries LibrariesOf(std::map<std::string, std::string> files) {
  Result<Candidate> candidate = Candidate::FromFiles(std::move(files));
  EXPECT_TRUE(candidate.ok()) << candidate.status().message();
  if (!candidate.ok()) return {};
  CudaLibraries scanned = ScanCandidate(candidate.value()).libraries;
  EXPECT_EQ(scanned, CandidateLibraries(candidate.value())) << "with the rules skipped, the same";
  return scanned;
}

TEST(StaticRules, OnlyKernelSourcesAreScanned) {
  TestDir dir("static-scan");
  ASSERT_TRUE(
      WriteFileAtomic(dir.path() / "kernels" / "deep" / "a.cuh", "void f() { dlopen(0, 0); }\n")
          .ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "kernels" / "notes.txt", "dlopen\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "other.cu", "void f() { dlopen(0, 0); }\n").ok());
  std::vector<StaticViolation> found = ScanFolder(dir.path()).violations;
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].file, "kernels/deep/a.cuh");
}

// A candidate's quoted includes resolve against the value's files, not against a folder.
TEST(StaticRules, QuotedIncludesResolveAgainstTheValue) {
  Result<Candidate> candidate = Candidate::FromFiles(
      {{"kernels/a.cu",
        "#include \"common.cuh\"\n#include \"gone.cuh\"\nvoid f() { dlopen(0, 0); }\n"},
       {"kernels/common.cuh", "void g() { std::thread t; }\n"},
       {"model_new.py", "class ModelNew: pass\n"}});
  ASSERT_TRUE(candidate.ok());
  std::vector<StaticViolation> found = ScanCandidate(candidate.value()).violations;
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].rule, "forbidden_include") << "gone.cuh is not a file of the candidate";
  EXPECT_EQ(found[0].line, 2);
  EXPECT_EQ(found[1].rule, "dynamic_loading");
  EXPECT_EQ(found[2].file, "kernels/common.cuh");
}

TEST(StaticRules, OversizedSourceInACandidateValueIsRejected) {
  Result<Candidate> c = Candidate::FromFiles({{"kernels/x.cu", std::string((1 << 20) + 1, ' ')}});
  ASSERT_TRUE(c.ok());
  std::vector<StaticViolation> found = ScanCandidate(c.value()).violations;
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "unscannable_source");
}

// The word in a comment or a string names no library (the builder once searched the text for
// "cublas" and "cudnn" and linked both here).
TEST(CandidateLibraries, CommentsAndStringsNameNone) {
  EXPECT_EQ(LibrariesOf({{"kernels/a.cu",
                          "// faster than cublas and cudnn; see cublasSgemm\n"
                          "/* cudnnConvolutionForward */\n"
                          "const char* kWhy = \"beats cublasSgemm and cudnn\";\n"
                          "__global__ void k(float* y) { y[0] = 1.0f; }\n"}}),
            CudaLibraries{});
}

TEST(CandidateLibraries, AnIncludeOrANameNamesTheLibrary) {
  const std::string gemm =
      "#include <cublas_v2.h>\n"
      "cublasStatus_t gemm(cublasHandle_t h, const float* a, const float* b, float* c) {\n"
      "  const float one = 1.0f, zero = 0.0f;\n"
      "  return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4);\n"
      "}\n";
  EXPECT_EQ(LibrariesOf({{"kernels/gemm.cu", gemm}}), CudaLibraries{CudaLibrary::kCublas});
  EXPECT_EQ(LibrariesOf({{"kernels/a.cuh", "#include <cudnn.h>\n"}}),
            CudaLibraries{CudaLibrary::kCudnn})
      << "a header counts too";
  EXPECT_EQ(LibrariesOf({{"kernels/a.cpp",
                          "extern \"C\" int cudnnCreate(void**);\n"
                          "int f(void** h) { return cudnnCreate(h); }\n"}}),
            CudaLibraries{CudaLibrary::kCudnn})
      << "a name without the header";
  EXPECT_EQ(
      LibrariesOf({{"kernels/a.cu", "#include <cublasLt.h>\nvoid f() { cublasLtCreate(0); }\n"}}),
      CudaLibraries{CudaLibrary::kCublasLt})
      << "cuBLASLt is not cuBLAS";
  EXPECT_EQ(LibrariesOf({{"kernels/a.cu", gemm}, {"kernels/b.cu", "#include <curand.h>\n"}}),
            (CudaLibraries{CudaLibrary::kCublas, CudaLibrary::kCurand}));
  EXPECT_EQ(LibrariesOf({{"model_new.py", "# cublas\nimport cublas\n"}}), CudaLibraries{})
      << "only kernels/ sources";
  EXPECT_EQ(LinkNames({CudaLibrary::kCudnn, CudaLibrary::kCublas}),
            (std::vector<std::string>{"cublas", "cudnn"}))
      << "linked in the table's order";
}

// A source too large to scan (refused by the rules) still names its libraries when the rules are
// skipped (a test-only judgement still links it).
TEST(CandidateLibraries, WithoutTheRulesEveryFileIsLexed) {
  std::string big = "#include <cudnn.h>\n" + std::string(1 << 20, ' ');
  Result<Candidate> c = Candidate::FromFiles({{"kernels/x.cu", big}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(CandidateLibraries(c.value()), CudaLibraries{CudaLibrary::kCudnn});
  EXPECT_EQ(ScanCandidate(c.value()).libraries, CudaLibraries{});
}

// Every bundled example candidate and the workspace template's binding header must scan clean:
// the rules may not reject the code legitimate candidates are made of.
TEST(StaticRules, ExampleCandidatesScanClean) {
  fs::path examples = fs::path(CUDA_AGENT_SOURCE_DIR) / "examples";
  int scanned = 0;
  for (const auto& task : fs::directory_iterator(examples)) {
    fs::path candidates = task.path() / "candidates";
    if (!fs::is_directory(candidates)) continue;
    for (const auto& candidate : fs::directory_iterator(candidates)) {
      std::vector<StaticViolation> found = ScanFolder(candidate.path()).violations;
      std::string text;
      for (const StaticViolation& v : found) text += FormatViolation(v) + "\n";
      EXPECT_TRUE(found.empty()) << candidate.path() << "\n" << text;
      ++scanned;
    }
  }
  EXPECT_GE(scanned, 15);
  // The plain-binding adapter's test candidate (forged views and all) is legitimate code too.
  std::vector<StaticViolation> plain =
      ScanFolder(fs::path(CUDA_AGENT_SOURCE_DIR) / "tests/build/plain_ops").violations;
  EXPECT_TRUE(plain.empty()) << (plain.empty() ? "" : FormatViolation(plain.front()));
  std::vector<StaticViolation> header = ScanSource(
      ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "templates/workspace/binding_registry.h").value(),
      "kernels/binding_registry.h");
  EXPECT_LE(header.size(), 2u) << "only the registry's own static instance and ## may fire";
}

// The hack corpus (tests/hacks): a case that needs the C++ scan must be rejected by it, with the
// rule its reason names as the first violation; every other case (model_new.py hacks, legitimate
// candidates) has clean C++ sources. The legitimate cuBLAS case links cuBLAS.
TEST(StaticRules, HackCorpus) {
  fs::path hacks = fs::path(CUDA_AGENT_SOURCE_DIR) / "tests" / "hacks";
  int needing_scan = 0;
  for (const auto& entry : fs::directory_iterator(hacks)) {
    if (!fs::exists(entry.path() / "case.json")) continue;
    Json c = ReadJsonFile(entry.path() / "case.json").value();
    bool needs_scan = false;
    for (const Json& r : c.value("requires", Json::array())) needs_scan |= r == "cpp_static_scan";
    CandidateScan scan = ScanFolder(entry.path());
    const std::vector<StaticViolation>& found = scan.violations;
    if (entry.path().filename() == "legit_cublas_gemm_epilogue") {
      EXPECT_EQ(scan.libraries, CudaLibraries{CudaLibrary::kCublas}) << "what its build links";
    }
    std::string text;
    for (const StaticViolation& v : found) text += FormatViolation(v) + "\n";
    if (needs_scan) {
      ++needing_scan;
      ASSERT_FALSE(found.empty()) << entry.path();
      EXPECT_EQ(found.front().rule, c["expect"]["reason_contains"].get<std::string>())
          << entry.path() << "\n"
          << text;
    } else {
      EXPECT_TRUE(found.empty()) << entry.path() << "\n" << text;
    }
  }
  EXPECT_GE(needing_scan, 15);
}

}  // namespace
}  // namespace cuda_agent
