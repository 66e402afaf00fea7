// fat_binary_test.cc — fat binaries split from bytes and found in ELF libraries (made here by g++
// with a .nv_fatbin section, as nvcc's host objects carry one), and the library's inspection joined
// from its fat binaries' (binary_inspector.h). cuobjdump cannot run on a machine without CUDA's
// tools, so the inspections' tool is a fake that answers with fixed SASS and counts its runs.
#include "builder/fat_binary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

#include "builder/binary_inspector.h"
#include "common/subprocess.h"
#include "common/test_dir.h"

namespace cuda_agent {
namespace {

// Fatbin: a fat binary with a `payload_bytes`-long payload of `fill`.
std::string Fatbin(size_t payload_bytes, char fill) {
  std::string blob(16, '\0');
  const uint32_t magic = 0xBA55ED50;
  const uint16_t version = 1, header = 16;
  const uint64_t payload = payload_bytes;
  std::memcpy(blob.data(), &magic, 4);
  std::memcpy(blob.data() + 4, &version, 2);
  std::memcpy(blob.data() + 6, &header, 2);
  std::memcpy(blob.data() + 8, &payload, 8);
  return blob + std::string(payload_bytes, fill);
}

std::string CArray(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += std::to_string(c) + ",";
  return out;
}

// Library compiles a shared library whose .nv_fatbin section holds `fatbins` (each 8-aligned, as
// nvcc's objects place them) and whose read-only data holds `elsewhere`.
fs::path Library(const fs::path& dir, const std::vector<std::string>& fatbins,
                 const std::string& elsewhere = "") {
  std::string source;
  for (size_t i = 0; i < fatbins.size(); ++i) {
    source +=
        "__attribute__((section(\".nv_fatbin\"), used, aligned(8))) static const unsigned "
        "char fatbin_" +
        std::to_string(i) + "[] = {" + CArray(fatbins[i]) + "};\n";
  }
  if (!elsewhere.empty()) {
    source += "__attribute__((used)) const unsigned char other[] = {" + CArray(elsewhere) + "};\n";
  }
  source += "int entry(void) { return 1; }\n";
  EXPECT_TRUE(WriteFileAtomic(dir / "lib.c", source).ok());
  RunOptions cc;
  cc.argv = {"g++",
             "-x",
             "c",
             "-shared",
             "-fPIC",
             "-o",
             (dir / "lib.so").string(),
             (dir / "lib.c").string()};
  Result<RunResult> run = RunProcess(cc);
  EXPECT_TRUE(run.ok() && run->Succeeded()) << (run.ok() ? run->err : run.status().message());
  return dir / "lib.so";
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(FatBinary, SplitsFatBinariesAcrossAlignmentPadding) {
  const std::string a = Fatbin(24, 'a'), b = Fatbin(8, 'b');
  Result<std::vector<std::string>> blobs = SplitFatbins(a + std::string(8, '\0') + b);
  ASSERT_TRUE(blobs.ok()) << blobs.status().message();
  EXPECT_EQ(blobs.value(), (std::vector<std::string>{a, b}));
  EXPECT_TRUE(SplitFatbins("").ok());
}

TEST(FatBinary, RefusesWhatIsNoFatBinary) {
  const std::string a = Fatbin(24, 'a');
  Result<std::vector<std::string>> junk = SplitFatbins(a + "xyz");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("offset 40"), std::string::npos)
      << junk.status().message();
  Result<std::vector<std::string>> cut = SplitFatbins(a.substr(0, 30));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("runs past the end"), std::string::npos);
}

TEST(FatBinary, FindsTheLibrarysFatBinariesInItsSection) {
  TestDir dir("fat-binary");
  const std::string a = Fatbin(40, 'a'), b = Fatbin(16, 'b');
  Result<std::vector<std::string>> blobs = LibraryFatbins(Library(dir.path(), {a, b}));
  ASSERT_TRUE(blobs.ok()) << blobs.status().message();
  EXPECT_EQ(Sorted(blobs.value()), Sorted({a, b}));
}

TEST(FatBinary, NoSectionIsNoFatBinaryAndDeviceCodeElsewhereIsAnError) {
  TestDir dir("fat-binary");
  Result<std::vector<std::string>> none = LibraryFatbins(Library(dir.path(), {}));
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_TRUE(none->empty());
  // A fat binary kept in another section (to be registered by the candidate's own code).
  Result<std::vector<std::string>> hidden =
      LibraryFatbins(Library(dir.path(), {Fatbin(8, 'a')}, Fatbin(8, 'h')));
  ASSERT_FALSE(hidden.ok());
  EXPECT_NE(hidden.status().message().find("outside .nv_fatbin"), std::string::npos)
      << hidden.status().message();
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "text", "not an ELF file").ok());
  EXPECT_FALSE(LibraryFatbins(dir.path() / "text").ok());
}

constexpr const char* kSassOfA = R"SASS(
Fatbin elf code:
================
arch = sm_90a

	code for sm_90a
		Function : _Z1aPf
        /*0000*/                   HMMA.1684.F32.TF32 R4, R8, R12, RZ ;   /* 0x0000000c0804723c */
        /*0010*/                   EXIT ;                                 /* 0x000000000000794d */
)SASS";

constexpr const char* kSassOfB = R"SASS(
Fatbin elf code:
================
arch = sm_90a

	code for sm_90a
		Function : _Z1bPf
        /*0000*/                   FFMA R3, R2, R5, R3 ;                  /* 0x0000000502037223 */
		Function : _Z1aPf
        /*0000*/                   DMMA.884 R4, R8, R12, R4 ;             /* 0x0000000c0804723f */
)SASS";

// FakeCuobjdump stands for cuobjdump, which cannot run here: it answers each fat binary file
// with the SASS given for its name, and the library with `library_sass`, and counts its runs.
struct FakeCuobjdump {
  std::map<std::string, std::string> sass_by_file;
  std::string library_sass;
  std::vector<std::string> runs;
  ToolRunner Runner() {
    return [this](const RunOptions& o) -> Result<RunResult> {
      runs.push_back(o.argv.back());
      RunResult r;
      r.exit_code = 0;
      auto it = sass_by_file.find(fs::path(o.argv.back()).filename().string());
      r.out = it != sass_by_file.end() ? it->second : library_sass;
      return r;
    };
  }
};

struct InspectionFixture {
  TestDir dir{"fatbin-inspection"};
  fs::path cuda_home = dir.path() / "cuda";
  fs::path cache = dir.path() / "cache";
  std::string a = Fatbin(40, 'a'), b = Fatbin(16, 'b');
  InspectionFixture() {
    fs::create_directories(cuda_home / "bin");
    EXPECT_TRUE(WriteFileAtomic(cuda_home / "bin" / "cuobjdump", "").ok());  // found, not run
    EXPECT_TRUE(WriteFileAtomic(dir.path() / "a.fatbin", a).ok());
    EXPECT_TRUE(WriteFileAtomic(dir.path() / "b.fatbin", b).ok());
  }
};

TEST(FatbinInspection, TheLibraryIsJoinedFromItsFatBinariesWithoutReadingIt) {
  InspectionFixture f;
  FakeCuobjdump tool{{{"a.fatbin", kSassOfA}, {"b.fatbin", kSassOfB}}, "", {}};
  ASSERT_TRUE(
      InspectFatbinCached(f.dir.path() / "a.fatbin", f.cuda_home.string(), tool.Runner(), f.cache)
          .ok());
  ASSERT_TRUE(
      InspectFatbinCached(f.dir.path() / "b.fatbin", f.cuda_home.string(), tool.Runner(), f.cache)
          .ok());
  // Stored: the same device code is not read twice (an unchanged .cu file's next build).
  ASSERT_TRUE(
      InspectFatbinCached(f.dir.path() / "a.fatbin", f.cuda_home.string(), tool.Runner(), f.cache)
          .ok());
  EXPECT_EQ(tool.runs.size(), 2u);

  fs::path library = Library(f.dir.path(), {f.a, f.b});
  BinaryInspection in =
      InspectExtensionCached(library, f.cuda_home.string(), tool.Runner(), f.cache);
  EXPECT_EQ(tool.runs.size(), 2u);  // the library itself was not read
  EXPECT_EQ(in.from, "fat binaries");
  EXPECT_EQ(in.source, "sass");
  ASSERT_EQ(in.kernels.size(), 2u);
  // A kernel found in two fat binaries is one kernel with the instructions of both.
  auto a = std::find_if(in.kernels.begin(), in.kernels.end(),
                        [](const DeviceKernel& k) { return k.mangled == "_Z1aPf"; });
  ASSERT_NE(a, in.kernels.end());
  EXPECT_EQ(a->opcodes, (std::set<std::string>{"HMMA", "EXIT", "DMMA"}));
  EXPECT_EQ(InspectExtensionCached(library, f.cuda_home.string(), tool.Runner(), f.cache).from,
            "stored");
}

TEST(FatbinInspection, AFatBinaryNotInspectedSendsTheWholeLibraryToTheTool) {
  InspectionFixture f;
  FakeCuobjdump tool{{{"a.fatbin", kSassOfA}}, kSassOfB, {}};
  ASSERT_TRUE(
      InspectFatbinCached(f.dir.path() / "a.fatbin", f.cuda_home.string(), tool.Runner(), f.cache)
          .ok());
  fs::path library = Library(f.dir.path(), {f.a, f.b});  // b was never inspected
  EXPECT_FALSE(InspectionFromFatbins(library, f.cache).has_value());
  BinaryInspection in =
      InspectExtensionCached(library, f.cuda_home.string(), tool.Runner(), f.cache);
  EXPECT_EQ(in.from, "library");
  EXPECT_EQ(tool.runs.back(), library.string());
  EXPECT_EQ(in.kernels.size(), 2u);  // kSassOfB: what the tool said of the library
}

TEST(FatbinInspection, DeviceCodeOutsideTheSectionSendsTheLibraryToTheTool) {
  InspectionFixture f;
  FakeCuobjdump tool{{{"a.fatbin", kSassOfA}}, kSassOfB, {}};
  ASSERT_TRUE(
      InspectFatbinCached(f.dir.path() / "a.fatbin", f.cuda_home.string(), tool.Runner(), f.cache)
          .ok());
  fs::path library = Library(f.dir.path(), {f.a}, Fatbin(8, 'h'));
  EXPECT_FALSE(InspectionFromFatbins(library, f.cache).has_value());
  EXPECT_EQ(InspectExtensionCached(library, f.cuda_home.string(), tool.Runner(), f.cache).from,
            "library");
}

TEST(FatbinInspection, AFileOfOtherThanOneFatBinaryIsRefused) {
  InspectionFixture f;
  FakeCuobjdump tool{{}, "", {}};
  ASSERT_TRUE(WriteFileAtomic(f.dir.path() / "two.fatbin", f.a + f.b).ok());
  EXPECT_FALSE(
      InspectFatbinCached(f.dir.path() / "two.fatbin", f.cuda_home.string(), tool.Runner(), f.cache)
          .ok());
  EXPECT_FALSE(InspectFatbinCached(f.dir.path() / "a.fatbin", f.cuda_home.string(), tool.Runner(),
                                   fs::path())
                   .ok());  // no cache to keep it in
  EXPECT_TRUE(tool.runs.empty());
}

}  // namespace
}  // namespace cuda_agent
