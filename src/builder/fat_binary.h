// fat_binary.h — the device code a file holds, as CUDA fat binaries (the containers nvcc's
// `fatbinary` writes and the host object embeds in its `.nv_fatbin` section; the linker joins the
// objects' sections). The judge inspects each .cu file's fat binary as soon as nvcc's device chain
// has made it, while the host side still compiles, and then finds the linked library's device code
// to be exactly those fat binaries (binary_inspector.h, InspectionFromFatbins).
//
//   Result<std::vector<std::string>> blobs = LibraryFatbins(build / "cuda_extension.so");
//   for (const std::string& blob : *blobs) ... Sha256Hex(blob) ...
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

// SplitFatbins splits bytes made of fat binaries (each a 16-byte header — magic 0xBA55ED50,
// version, header size, payload size — then its payload), with zero padding allowed between them,
// into the fat binaries. An error names the offset of anything else, or a header that runs past
// the end.
Result<std::vector<std::string>> SplitFatbins(std::string_view bytes);

// FatbinFile reads a fat binary file (the `--create` output of nvcc's `fatbinary`) and splits it.
Result<std::vector<std::string>> FatbinFile(const fs::path& path);

// LibraryFatbins returns the fat binaries in the `.nv_fatbin` section of a 64-bit little-endian ELF
// file (none when it has no such section). An error when the file is not one, or when the fat
// binary magic also occurs outside that section: device code placed elsewhere (a blob another
// section carries and the candidate registers itself) is not what the caller would inspect, so
// the caller must read the whole file with cuobjdump instead.
Result<std::vector<std::string>> LibraryFatbins(const fs::path& library);

}  // namespace cuda_agent
