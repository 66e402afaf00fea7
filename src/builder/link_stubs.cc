// link_stubs.cc — stub libraries with the real ones' SONAMEs, for links that need only the names.
#include "builder/link_stubs.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>

#include "common/hash.h"
#include "common/log.h"
#include "common/subprocess.h"

namespace cuda_agent {
namespace {

constexpr size_t kMaxSonameBytes = 4096;

bool ReadAt(std::ifstream& in, uint64_t offset, void* out, size_t bytes) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  return static_cast<size_t>(in.gcount()) == bytes;
}

// StubKey: what the stubs stand for — each library's name, real file, size and time.
Result<std::string> StubKey(const std::vector<std::string>& names,
                            const std::vector<std::string>& dirs, std::vector<fs::path>& found) {
  Sha256 key;
  for (const std::string& name : names) {
    std::optional<fs::path> path = FindLibrary(name, dirs);
    if (!path) return NotFound("lib" + name + ".so is in none of the toolchain's library folders");
    std::error_code ec;
    fs::path real = fs::canonical(*path, ec);
    const std::string stamp = ec ? "" : FileStamp(real);
    if (stamp.empty()) return NotFound("cannot read " + path->string());
    key.Update(name + "|" + real.string() + "|" + stamp + "\n");
    found.push_back(*path);
  }
  return key.HexDigest().substr(0, 24);
}

// MakeStub writes an empty shared library `out` whose SONAME is `soname` (none when empty).
Status MakeStub(const fs::path& out, const std::string& soname) {
  RunOptions cc;
  cc.argv = {"g++", "-shared", "-nostdlib", "-o", out.string()};
  if (!soname.empty()) cc.argv.push_back("-Wl,-soname," + soname);
  cc.argv.insert(cc.argv.end(), {"-x", "c", "/dev/null"});
  cc.timeout_seconds = 60;
  Result<RunResult> run = RunProcess(cc);
  if (!run.ok()) return run.status();
  if (!run->Succeeded()) return Internal("g++ " + run->Describe() + ": " + run->err);
  return OkStatus();
}

}  // namespace

std::optional<fs::path> FindLibrary(const std::string& name, const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    fs::path candidate = fs::path(dir) / ("lib" + name + ".so");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

Result<std::string> ReadSoname(const fs::path& library) {
  std::ifstream in(library, std::ios::binary);
  if (!in) return NotFound("cannot open " + library.string());
  Elf64_Ehdr header;
  if (!ReadAt(in, 0, &header, sizeof(header)) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return InvalidArgument(library.string() + " is not a 64-bit little-endian ELF file");
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (sections.empty() ||
      !ReadAt(in, header.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) {
    return InvalidArgument(library.string() + ": cannot read its section headers");
  }
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_DYNAMIC || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= section.sh_size; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      if (!ReadAt(in, section.sh_offset + at, &entry, sizeof(entry)) || entry.d_tag == DT_NULL)
        break;
      if (entry.d_tag != DT_SONAME) continue;
      if (entry.d_un.d_val >= strings.sh_size)
        return InvalidArgument(library.string() + ": its SONAME lies outside its string table");
      char name[kMaxSonameBytes] = {};
      const uint64_t room =
          std::min<uint64_t>(kMaxSonameBytes - 1, strings.sh_size - entry.d_un.d_val);
      if (!ReadAt(in, strings.sh_offset + entry.d_un.d_val, name, room))
        return InvalidArgument(library.string() + ": cannot read its SONAME");
      return std::string(name, strnlen(name, room));
    }
  }
  return std::string();
}

std::optional<fs::path> LinkStubs(const fs::path& cache_dir, const std::vector<std::string>& names,
                                  const std::vector<std::string>& dirs) {
  if (cache_dir.empty()) return std::nullopt;
  auto unavailable = [](const std::string& why) -> std::optional<fs::path> {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      LogWarn("the extension is linked against torch's libraries themselves (" + why + ")");
    });
    return std::nullopt;
  };
  std::vector<fs::path> found;
  Result<std::string> key = StubKey(names, dirs, found);
  if (!key.ok()) return unavailable(key.status().message());
  const fs::path folder = cache_dir / "link-stubs" / key.value();
  std::error_code ec;
  if (fs::is_directory(folder, ec)) return folder;
  fs::create_directories(folder.parent_path(), ec);
  Result<fs::path> staging = MakeTempDir(folder.parent_path(), key.value());
  if (!staging.ok()) return unavailable(staging.status().message());
  for (size_t i = 0; i < names.size(); ++i) {
    Result<std::string> soname = ReadSoname(found[i]);
    Status made = soname.ok()
                      ? MakeStub(staging.value() / ("lib" + names[i] + ".so"), soname.value())
                      : soname.status();
    if (!made.ok()) {
      fs::remove_all(staging.value(), ec);
      return unavailable(found[i].string() + ": " + made.message());
    }
  }
  // Another judgement may have made the same stubs meanwhile: theirs and ours are alike.
  fs::rename(staging.value(), folder, ec);
  if (ec) fs::remove_all(staging.value(), ec);
  return fs::is_directory(folder, ec) ? std::optional<fs::path>(folder) : std::nullopt;
}

}  // namespace cuda_agent
