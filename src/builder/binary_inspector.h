// binary_inspector.h — what the built extension contains: its device kernels (names as the profiler
// shows them) and the machine instructions each one uses. The judge uses it for two defences:
// the kernel audit (HACKS C3: which kernels that ran are the candidate's own) and the precision
// check (HACKS B11: half/TF32/int8 tensor-core instructions in an fp32 task under `strict`).
//
//   BinaryInspection in = InspectExtension(build / "cuda_extension.so", cuda_home, run_tool);
//   for (const auto& k : in.kernels) if (!TensorCoreOpcodes(k).empty()) ...
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace cuda_agent {

struct DeviceKernel {
  std::string mangled;            // "_Z6relu_kIfEvPKT_PS0_l"
  std::string name;               // demangled: "void relu_k<float>(float const*, float*, long)"
  std::set<std::string> opcodes;  // SASS mnemonics without modifiers: "HMMA", "FFMA", ...
};

struct BinaryInspection {
  // Where the kernel list came from: "sass" (cuobjdump: names and instructions), "symbols" (nm:
  // every function the library defines, no instructions), or "none".
  std::string source = "none";
  std::vector<DeviceKernel> kernels;
  std::string note;  // why the SASS could not be read, when it could not
  // How it was found: "library" (the tool run on the library), "fat binaries" (the library's fat
  // binaries, each inspected when the build made it: InspectFatbinCached), "stored" (this
  // library's inspection, kept from an earlier judgement).
  std::string from;
};

// Runs a tool (cuobjdump, nm) the way the caller contains its tools.
using ToolRunner = std::function<Result<RunResult>(const RunOptions&)>;

// InspectExtension reads `library` with cuobjdump -sass (from `cuda_home`/bin or PATH); without
// cuobjdump it falls back to the library's function symbols (nm), which name the kernels but not
// their instructions. Never fails: what could not be read is in `note`.
BinaryInspection InspectExtension(const fs::path& library, const std::string& cuda_home,
                                  const ToolRunner& run);

// InspectExtensionCached: InspectExtension, remembered under `cache_dir`/inspections by the
// library's SHA-256 (an unchanged candidate's library is not read again). Before it runs the tool
// on the library it tries InspectionFromFatbins. Empty cache_dir: no cache.
BinaryInspection InspectExtensionCached(const fs::path& library, const std::string& cuda_home,
                                        const ToolRunner& run, const fs::path& cache_dir);

// InspectFatbinCached reads one fat binary file (the output of a .cu file's device chain, while
// its host side still compiles) with cuobjdump -sass and stores the kernels under
// `cache_dir`/inspections by the fat binary's SHA-256; nothing to do when they are stored already.
// cuobjdump takes 0.5-0.9 s on the GPU host however small the code, so done during the build this
// leaves the judgement's path. An error when the file is not one fat binary or cuobjdump cannot
// read it: the library is then read whole, as before.
Status InspectFatbinCached(const fs::path& fatbin, const std::string& cuda_home,
                           const ToolRunner& run, const fs::path& cache_dir);

// InspectionFromFatbins: the library's inspection joined from its fat binaries' stored ones
// (fat_binary.h LibraryFatbins: the library's device code is exactly its .nv_fatbin section),
// or nullopt when the library has none, holds device code elsewhere, or one is not stored.
std::optional<BinaryInspection> InspectionFromFatbins(const fs::path& library,
                                                      const fs::path& cache_dir);

Json InspectionToJson(const BinaryInspection& inspection);
Result<BinaryInspection> InspectionFromJson(const Json& j);

// ParseCuobjdumpSass turns `cuobjdump -sass` output into kernels (one per "Function :" section;
// the same function for several architectures is merged).
std::vector<DeviceKernel> ParseCuobjdumpSass(std::string_view text);

// Demangle returns the Itanium-demangled form of `mangled`, or `mangled` itself.
std::string Demangle(const std::string& mangled);

// KernelKey normalises a kernel name as a profiler or the demangler writes it, for matching: the
// return type and the parameter list are dropped, templates kept ("relu_k<float>").
std::string KernelKey(std::string_view name);

// TensorCoreOpcodes lists the kernel's tensor-core matrix instructions that take reduced-precision
// inputs (half, bfloat16, TF32, int8/4, fp8: HMMA, HGMMA, IMMA, ...). DMMA (fp64) is not one.
std::vector<std::string> TensorCoreOpcodes(const DeviceKernel& kernel);

}  // namespace cuda_agent
