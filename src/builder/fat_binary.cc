// fat_binary.cc — fat binaries found in fat binary files and in ELF files' .nv_fatbin sections.
#include "builder/fat_binary.h"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace cuda_agent {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uintmax_t kMaxFileBytes = 512u << 20;  // an extension library is a few MB

// A fat binary's header, as it lies in the file (little-endian).
struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_bytes;
  uint64_t payload_bytes;
};
static_assert(sizeof(FatbinHeader) == 16);

Result<std::string> ReadBounded(const fs::path& path) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return NotFound("cannot read " + path.string() + ": " + ec.message());
  if (size > kMaxFileBytes) {
    return InvalidArgument(path.string() + " is larger than " +
                           std::to_string(kMaxFileBytes >> 20) + " MiB");
  }
  return ReadFile(path);
}

// A little-endian machine reads the ELF fields in place; the section table is checked to lie
// inside the file before any entry is read.
template <typename T>
bool LoadAt(std::string_view bytes, uint64_t at, T* out) {
  if (at > bytes.size() || bytes.size() - at < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + at, sizeof(T));
  return true;
}

}  // namespace

Result<std::vector<std::string>> SplitFatbins(std::string_view bytes) {
  std::vector<std::string> blobs;
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes[at] == '\0') {  // alignment padding between the objects' fat binaries
      ++at;
      continue;
    }
    FatbinHeader header;
    if (!LoadAt(bytes, at, &header) || header.magic != kFatbinMagic) {
      return InvalidArgument("no fat binary header at offset " + std::to_string(at));
    }
    const size_t left = bytes.size() - at;
    if (header.header_bytes < sizeof(FatbinHeader) || header.header_bytes > left ||
        header.payload_bytes > left - header.header_bytes) {
      return InvalidArgument("the fat binary at offset " + std::to_string(at) +
                             " runs past the end");
    }
    const size_t total = header.header_bytes + static_cast<size_t>(header.payload_bytes);
    blobs.emplace_back(bytes.substr(at, total));
    at += total;
  }
  return blobs;
}

Result<std::vector<std::string>> FatbinFile(const fs::path& path) {
  Result<std::string> bytes = ReadBounded(path);
  if (!bytes.ok()) return bytes.status();
  Result<std::vector<std::string>> blobs = SplitFatbins(bytes.value());
  if (!blobs.ok()) return InvalidArgument(path.string() + ": " + blobs.status().message());
  return blobs;
}

Result<std::vector<std::string>> LibraryFatbins(const fs::path& library) {
  Result<std::string> read = ReadBounded(library);
  if (!read.ok()) return read.status();
  const std::string_view bytes = read.value();
  const std::string name = library.string();
  Elf64_Ehdr header;
  if (!LoadAt(bytes, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_shentsize != sizeof(Elf64_Shdr)) {
    return InvalidArgument(name + " is not a 64-bit little-endian ELF file");
  }
  Elf64_Shdr first;
  if (header.e_shoff == 0 || !LoadAt(bytes, header.e_shoff, &first)) {
    return InvalidArgument(name + ": no section table");
  }
  // Many sections: the count and the names' index are kept in the first entry.
  const uint64_t count = header.e_shnum != 0 ? header.e_shnum : first.sh_size;
  const uint64_t names_index = header.e_shstrndx != SHN_XINDEX ? header.e_shstrndx : first.sh_link;
  if (count == 0 || count > (bytes.size() - header.e_shoff) / sizeof(Elf64_Shdr) ||
      names_index >= count) {
    return InvalidArgument(name + ": the section table runs past the end");
  }
  auto section = [&](uint64_t i) {
    Elf64_Shdr s;
    LoadAt(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), &s);  // in bounds: checked above
    return s;
  };
  const Elf64_Shdr names = section(names_index);
  if (names.sh_offset > bytes.size() || names.sh_size > bytes.size() - names.sh_offset) {
    return InvalidArgument(name + ": the section names run past the end");
  }
  const std::string_view name_table = bytes.substr(names.sh_offset, names.sh_size);
  std::string_view fatbins;
  size_t fatbins_at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const Elf64_Shdr s = section(i);
    if (s.sh_name >= name_table.size()) continue;
    const std::string_view section_name =
        name_table.substr(s.sh_name).substr(0, name_table.substr(s.sh_name).find('\0'));
    if (section_name != ".nv_fatbin" || s.sh_type == SHT_NOBITS) continue;
    if (!fatbins.empty() || s.sh_offset > bytes.size() || s.sh_size > bytes.size() - s.sh_offset) {
      return InvalidArgument(name + ": a second or truncated .nv_fatbin section");
    }
    fatbins = bytes.substr(s.sh_offset, s.sh_size);
    fatbins_at = s.sh_offset;
  }
  // The magic anywhere else means device code outside the section.
  const uint32_t magic = kFatbinMagic;
  const std::string_view needle(reinterpret_cast<const char*>(&magic), sizeof(magic));
  for (size_t at = bytes.find(needle); at != std::string_view::npos;
       at = bytes.find(needle, at + 1)) {
    if (at < fatbins_at || at >= fatbins_at + fatbins.size()) {
      return InvalidArgument(name + ": fat binary magic outside .nv_fatbin at offset " +
                             std::to_string(at));
    }
  }
  Result<std::vector<std::string>> blobs = SplitFatbins(fatbins);
  if (!blobs.ok()) return InvalidArgument(name + ": .nv_fatbin: " + blobs.status().message());
  return blobs;
}

}  // namespace cuda_agent
