// candidate_scan_test.cc — the static scan of whole candidates: which files of a folder are
// scanned, a candidate value scanned like its folder, the size limit; the bundled examples and the
// workspace template must scan clean, and every hack-corpus case that needs the C++ scan must be
// rejected by the rule its case names.
#include <gtest/gtest.h>

#include "common/json.h"
#include "judge/static_rules.h"

namespace cuda_agent {
namespace {

TEST(StaticRules, OnlyKernelSourcesAreScanned) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "static-scan").value();
  fs::create_directories(dir / "kernels" / "deep");
  ASSERT_TRUE(
      WriteFileAtomic(dir / "kernels" / "deep" / "a.cuh", "void f() { dlopen(0, 0); }\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "kernels" / "notes.txt", "dlopen\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "other.cu", "void f() { dlopen(0, 0); }\n").ok());
  std::vector<StaticViolation> found = ScanCandidateSources(dir);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].file, "kernels/deep/a.cuh");
  fs::remove_all(dir);
}

// A candidate in memory scans as its folder does; its quoted includes resolve against its files.
TEST(StaticRules, CandidateValueScansLikeItsFolder) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "static-value").value();
  ASSERT_TRUE(WriteFileAtomic(dir / "kernels" / "a.cu",
                              "#include \"common.cuh\"\n#include \"gone.cuh\"\n"
                              "void f() { dlopen(0, 0); }\n")
                  .ok());
  ASSERT_TRUE(
      WriteFileAtomic(dir / "kernels" / "common.cuh", "void g() { std::thread t; }\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "model_new.py", "class ModelNew: pass\n").ok());
  std::vector<StaticViolation> from_folder = ScanCandidateSources(dir);
  std::vector<StaticViolation> from_value = ScanCandidate(Candidate::FromFolder(dir).value());
  ASSERT_EQ(from_value.size(), 3u);
  ASSERT_EQ(from_folder.size(), from_value.size());
  for (size_t i = 0; i < from_value.size(); ++i) {
    EXPECT_EQ(FormatViolation(from_folder[i]), FormatViolation(from_value[i]));
  }
  EXPECT_EQ(from_value[0].rule, "forbidden_include") << "gone.cuh is not a file of the candidate";
  EXPECT_EQ(from_value[0].line, 2);
  fs::remove_all(dir);
}

TEST(StaticRules, OversizedSourceInACandidateValueIsRejected) {
  Result<Candidate> c = Candidate::FromFiles({{"kernels/x.cu", std::string((1 << 20) + 1, ' ')}});
  ASSERT_TRUE(c.ok());
  std::vector<StaticViolation> found = ScanCandidate(c.value());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "unscannable_source");
}

TEST(StaticRules, OversizedSourceIsRejected) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "static-big").value();
  fs::create_directories(dir / "kernels");
  ASSERT_TRUE(WriteFileAtomic(dir / "kernels" / "x.cu", std::string((1 << 20) + 1, ' ')).ok());
  std::vector<StaticViolation> found = ScanCandidateSources(dir);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "unscannable_source");
  fs::remove_all(dir);
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
      std::vector<StaticViolation> found = ScanCandidateSources(candidate.path());
      std::string text;
      for (const StaticViolation& v : found) text += FormatViolation(v) + "\n";
      EXPECT_TRUE(found.empty()) << candidate.path() << "\n" << text;
      ++scanned;
    }
  }
  EXPECT_GE(scanned, 15);
  // The plain-binding adapter's test candidate (forged views and all) is legitimate code too.
  std::vector<StaticViolation> plain =
      ScanCandidateSources(fs::path(CUDA_AGENT_SOURCE_DIR) / "tests/build/plain_ops");
  EXPECT_TRUE(plain.empty()) << (plain.empty() ? "" : FormatViolation(plain.front()));
  std::vector<StaticViolation> header = ScanSource(
      ReadFile(fs::path(CUDA_AGENT_SOURCE_DIR) / "templates/workspace/binding_registry.h").value(),
      "kernels/binding_registry.h");
  EXPECT_LE(header.size(), 2u) << "only the registry's own static instance and ## may fire";
}

// The hack corpus (tests/hacks): a case that needs the C++ scan must be rejected by it, with the
// rule its reason names as the first violation; every other case (model_new.py hacks, legitimate
// candidates) has clean C++ sources.
TEST(StaticRules, HackCorpus) {
  fs::path hacks = fs::path(CUDA_AGENT_SOURCE_DIR) / "tests" / "hacks";
  int needing_scan = 0;
  for (const auto& entry : fs::directory_iterator(hacks)) {
    if (!fs::exists(entry.path() / "case.json")) continue;
    Json c = ReadJsonFile(entry.path() / "case.json").value();
    bool needs_scan = false;
    for (const Json& r : c.value("requires", Json::array())) needs_scan |= r == "cpp_static_scan";
    std::vector<StaticViolation> found = ScanCandidateSources(entry.path());
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
