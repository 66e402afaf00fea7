// link_stubs_test.cc — SONAMEs read from ELF files, stubs made once, and a library linked against
// a stub that loads and calls the real library.
#include "builder/link_stubs.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// Compile runs g++ on C sources with `args`; the test fails with its output when
// it does not succeed.
void Compile(const std::vector<std::string>& args) {
  RunOptions cc;
  cc.argv = {"g++", "-x", "c"};  // the sources are C
  cc.argv.insert(cc.argv.end(), args.begin(), args.end());
  Result<RunResult> run = RunProcess(cc);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(run->Succeeded()) << run->err;
}

// A real library, lib/libanswer.so.3 (SONAME libanswer.so.3) with the link name libanswer.so
// beside it, as libraries are installed; `answer()` returns 42.
fs::path MakeAnswerLibrary(const fs::path& root) {
  const fs::path lib = root / "lib";
  fs::create_directories(lib);
  EXPECT_TRUE(WriteFileAtomic(root / "answer.c", "int answer(void) { return 42; }\n").ok());
  Compile({"-shared", "-fPIC", "-Wl,-soname,libanswer.so.3", "-o",
           (lib / "libanswer.so.3").string(), (root / "answer.c").string()});
  fs::create_symlink("libanswer.so.3", lib / "libanswer.so");
  return lib;
}

TEST(LinkStubs, ReadsTheSonameOfALibraryThroughItsLinkName) {
  TestDir dir("link-stubs-soname");
  const fs::path lib = MakeAnswerLibrary(dir.path());
  Result<std::string> soname = ReadSoname(lib / "libanswer.so");
  ASSERT_TRUE(soname.ok()) << soname.status().message();
  EXPECT_EQ(soname.value(), "libanswer.so.3");

  Compile({"-shared", "-fPIC", "-o", (dir.path() / "libplain.so").string(),
           (dir.path() / "answer.c").string()});
  Result<std::string> none = ReadSoname(dir.path() / "libplain.so");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(none.value(), "");

  EXPECT_FALSE(ReadSoname(dir.path() / "answer.c").ok()) << "not an ELF file";
  EXPECT_FALSE(ReadSoname(dir.path() / "missing.so").ok());
}

TEST(LinkStubs, ALibraryLinkedAgainstAStubCallsTheRealOne) {
  TestDir dir("link-stubs-load");
  const fs::path lib = MakeAnswerLibrary(dir.path());
  const fs::path cache = dir.path() / "cache";
  std::optional<fs::path> stubs =
      LinkStubs(cache, {"answer"}, {(dir.path() / "none").string(), lib.string()});
  ASSERT_TRUE(stubs.has_value());
  EXPECT_EQ(stubs->parent_path(), cache / "link-stubs");
  Result<std::string> stub_soname = ReadSoname(*stubs / "libanswer.so");
  ASSERT_TRUE(stub_soname.ok());
  EXPECT_EQ(stub_soname.value(), "libanswer.so.3");
  EXPECT_LT(fs::file_size(*stubs / "libanswer.so"), fs::file_size(lib / "libanswer.so.3") * 4)
      << "a stub holds no code of the library";
  EXPECT_EQ(LinkStubs(cache, {"answer"}, {lib.string()}), stubs) << "made once, then reused";

  ASSERT_TRUE(WriteFileAtomic(dir.path() / "ask.c",
                              "int answer(void);\nint ask(void) { return answer() + 1; }\n")
                  .ok());
  const fs::path asker = dir.path() / "libask.so";
  Compile({"-shared", "-fPIC", "-o", asker.string(), "-x", "c", (dir.path() / "ask.c").string(),
           "-x", "none", "-L" + stubs->string(), "-Wl,-rpath," + lib.string(), "-Wl,--no-as-needed",
           "-lanswer", "-Wl,--as-needed"});
  void* handle = dlopen(asker.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto ask = reinterpret_cast<int (*)()>(dlsym(handle, "ask"));
  ASSERT_NE(ask, nullptr) << dlerror();
  EXPECT_EQ(ask(), 43) << "answer() came from the real library";
  dlclose(handle);
}

TEST(LinkStubs, NothingWhenALibraryIsMissingOrThereIsNoCache) {
  TestDir dir("link-stubs-none");
  const fs::path lib = MakeAnswerLibrary(dir.path());
  EXPECT_FALSE(LinkStubs(dir.path() / "cache", {"answer", "question"}, {lib.string()}));
  EXPECT_FALSE(fs::exists(dir.path() / "cache" / "link-stubs") &&
               !fs::is_empty(dir.path() / "cache" / "link-stubs"))
      << "no stubs are kept for a set that cannot be linked";
  EXPECT_FALSE(LinkStubs("", {"answer"}, {lib.string()}));
  EXPECT_EQ(FindLibrary("answer", {(dir.path() / "none").string(), lib.string()}),
            lib / "libanswer.so");
}

}  // namespace
}  // namespace cuda_agent
