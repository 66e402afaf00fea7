// binary_inspector.cc — cuobjdump/nm output parsing and kernel-name normalisation.
#include "builder/binary_inspector.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

#include "builder/fat_binary.h"
#include "common/hash.h"
#include "common/text.h"

namespace cuda_agent {
namespace {

constexpr size_t kMaxToolOutput = 256u << 20;  // SASS of a large extension runs to tens of MB
constexpr double kToolTimeoutSeconds = 120;

// The mnemonic of one SASS line such as
//   "        /*0090*/  @!P0 HMMA.1684.F32.TF32 R4, R8, R12, RZ ;   /* 0x... */"
// or "" when the line is not an instruction.
std::string Mnemonic(std::string_view line) {
  size_t open = line.find("/*");
  if (open == std::string_view::npos) return "";
  size_t close = line.find("*/", open);
  if (close == std::string_view::npos) return "";
  std::string_view addr = line.substr(open + 2, close - open - 2);
  if (addr.empty() || addr.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
    return "";
  std::string_view rest = TrimSpace(line.substr(close + 2));
  if (!rest.empty() && rest.front() == '@') {  // predicate guard
    size_t space = rest.find(' ');
    if (space == std::string_view::npos) return "";
    rest = TrimSpace(rest.substr(space));
  }
  size_t end = 0;
  while (end < rest.size() &&
         (std::isupper(static_cast<unsigned char>(rest[end])) ||
          std::isdigit(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) {
    ++end;
  }
  return end == 0 ? "" : std::string(rest.substr(0, end));
}

std::string ToolPath(const std::string& cuda_home, const std::string& name) {
  if (!cuda_home.empty()) {
    fs::path p = fs::path(cuda_home) / "bin" / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  Result<std::string> found = FindExecutable(name);
  return found.ok() ? found.value() : "";
}

Result<RunResult> RunQuiet(const ToolRunner& run, std::vector<std::string> argv) {
  RunOptions opt;
  opt.argv = std::move(argv);
  opt.timeout_seconds = kToolTimeoutSeconds;
  opt.max_output_bytes = kMaxToolOutput;
  return run(opt);
}

// FunctionSymbols: the names of the functions `library` defines (nm), as kernels without opcodes.
std::vector<DeviceKernel> FunctionSymbols(std::string_view nm_output) {
  std::vector<DeviceKernel> out;
  std::istringstream in{std::string(nm_output)};
  std::string line;
  while (std::getline(in, line)) {
    // "0000000000012340 T _Z6relu_kIfEvPKT_PS0_l"
    std::istringstream fields(line);
    std::string addr, type, name;
    if (!(fields >> addr >> type >> name)) continue;
    if (type != "T" && type != "t" && type != "W" && type != "w") continue;
    out.push_back({name, Demangle(name), {}});
  }
  return out;
}

}  // namespace

std::string Demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::vector<DeviceKernel> ParseCuobjdumpSass(std::string_view text) {
  std::vector<DeviceKernel> kernels;
  std::map<std::string, size_t> index;
  DeviceKernel* current = nullptr;
  for (std::string_view line : SplitLines(text)) {
    std::string_view t = TrimSpace(line);
    if (t.rfind("Function :", 0) == 0) {
      std::string mangled(TrimSpace(t.substr(10)));
      auto [it, added] = index.emplace(mangled, kernels.size());
      if (added) kernels.push_back({mangled, Demangle(mangled), {}});
      current = &kernels[it->second];
      continue;
    }
    if (t.rfind("code for", 0) == 0 || t.rfind("Fatbin", 0) == 0) {
      current = nullptr;
      continue;
    }
    if (current == nullptr) continue;
    std::string op = Mnemonic(line);
    if (!op.empty()) current->opcodes.insert(op);
  }
  return kernels;
}

std::string KernelKey(std::string_view name) {
  // "(anonymous namespace)" is the one parenthesis inside a name; make it a plain token first.
  std::string plain(TrimSpace(name));
  static const std::string kAnon = "(anonymous namespace)";
  for (size_t at = plain.find(kAnon); at != std::string::npos; at = plain.find(kAnon, at)) {
    plain.replace(at, kAnon.size(), "{anonymous}");
  }
  std::string_view s = plain;
  // The parameter list: the first '(' outside template brackets, after the name began.
  int depth = 0;
  size_t params = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<')
      ++depth;
    else if (c == '>')
      --depth;
    else if (c == '(' && depth == 0 && i > 0) {
      params = i;
      break;
    }
  }
  std::string_view head = TrimSpace(s.substr(0, params));
  // A return type ("void ") precedes template functions; the name is the last top-level token.
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    char c = head[i];
    if (c == '<')
      ++depth;
    else if (c == '>')
      --depth;
    else if (c == ' ' && depth == 0)
      start = i + 1;
  }
  std::string key;
  for (char c : head.substr(start)) {
    if (c != ' ') key += c;  // "relu_k<float >" and "relu_k<float>" are one kernel
  }
  for (size_t at = key.find("{anonymous}"); at != std::string::npos;
       at = key.find("{anonymous}", at)) {
    key.replace(at, 11, "(anonymous)");
  }
  return key;
}

std::vector<std::string> TensorCoreOpcodes(const DeviceKernel& kernel) {
  // Matrix instructions on reduced-precision inputs, Volta to Blackwell: HMMA (fp16/bf16/tf32),
  // HGMMA (Hopper warpgroup), IMMA/IGMMA (int8/int4), QGMMA/QMMA/OMMA (fp8/fp4), BMMA/BGMMA
  // (1-bit), and the tcgen05 UTC*MMA family. DMMA (fp64) is full precision.
  static const char* const kFamilies[] = {"HMMA",    "HGMMA",   "IMMA",    "IGMMA", "QGMMA",
                                          "QMMA",    "OMMA",    "BMMA",    "BGMMA", "UTCHMMA",
                                          "UTCQMMA", "UTCOMMA", "UTCIMMA", "UTCMMA"};
  std::vector<std::string> found;
  for (const auto& op : kernel.opcodes) {
    for (const char* f : kFamilies) {
      if (op == f) found.push_back(op);
    }
  }
  return found;
}

BinaryInspection InspectExtension(const fs::path& library, const std::string& cuda_home,
                                  const ToolRunner& run) {
  BinaryInspection out;
  std::string cuobjdump = ToolPath(cuda_home, "cuobjdump");
  if (!cuobjdump.empty()) {
    Result<RunResult> r = RunQuiet(run, {cuobjdump, "-sass", library.string()});
    if (r.ok() && r->exit_code == 0 && !r->timed_out && !r->out_truncated) {
      out.source = "sass";
      out.kernels = ParseCuobjdumpSass(r->out);
      return out;
    }
    // A library without device code makes cuobjdump fail; that is no kernel, not an error.
    out.note = "cuobjdump -sass failed: " +
               (r.ok() ? r->Describe() + " " + std::string(TrimSpace(r->err.substr(0, 300)))
                       : r.status().message());
  } else {
    out.note = "cuobjdump not found (CUDA home '" + cuda_home + "', PATH)";
  }
  std::string nm = ToolPath("", "nm");
  if (nm.empty()) {
    out.note += "; nm not found";
    return out;
  }
  Result<RunResult> r = RunQuiet(run, {nm, "--defined-only", library.string()});
  if (!r.ok() || r->exit_code != 0 || r->out_truncated) {
    out.note += "; nm failed: " + (r.ok() ? r->Describe() : r.status().message());
    return out;
  }
  out.source = "symbols";
  out.kernels = FunctionSymbols(r->out);
  return out;
}

Json InspectionToJson(const BinaryInspection& inspection) {
  Json kernels = Json::array();
  for (const auto& k : inspection.kernels) {
    kernels.push_back({{"mangled", k.mangled}, {"name", k.name}, {"opcodes", k.opcodes}});
  }
  return {{"source", inspection.source}, {"note", inspection.note}, {"kernels", kernels}};
}

Result<BinaryInspection> InspectionFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("kernels") || !j["kernels"].is_array()) {
    return InvalidArgument("not an inspection record");
  }
  BinaryInspection out;
  out.source = j.value("source", std::string("none"));
  out.note = j.value("note", std::string());
  for (const auto& k : j["kernels"]) {
    DeviceKernel kernel;
    kernel.mangled = k.value("mangled", std::string());
    kernel.name = k.value("name", std::string());
    for (const auto& op : k.value("opcodes", Json::array()))
      kernel.opcodes.insert(op.get<std::string>());
    out.kernels.push_back(std::move(kernel));
  }
  return out;
}

namespace {

fs::path InspectionRecord(const fs::path& cache_dir, const std::string& name) {
  return cache_dir / "inspections" / (name + ".json");
}

std::optional<BinaryInspection> StoredInspection(const fs::path& record) {
  Result<Json> stored = ReadJsonFile(record);
  if (!stored.ok()) return std::nullopt;
  Result<BinaryInspection> parsed = InspectionFromJson(stored.value());
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed).value();
}

void StoreInspection(const fs::path& record, const BinaryInspection& inspection) {
  std::error_code ec;
  fs::create_directories(record.parent_path(), ec);
  (void)WriteJsonFile(record, InspectionToJson(inspection));
}

std::string FatbinRecordName(const std::string& blob) { return "fatbin-" + Sha256Hex(blob); }

}  // namespace

Status InspectFatbinCached(const fs::path& fatbin, const std::string& cuda_home,
                           const ToolRunner& run, const fs::path& cache_dir) {
  if (cache_dir.empty()) return InvalidArgument("no cache to keep the inspection in");
  Result<std::vector<std::string>> blobs = FatbinFile(fatbin);
  if (!blobs.ok()) return blobs.status();
  if (blobs->size() != 1) {
    return InvalidArgument(fatbin.string() + " holds " + std::to_string(blobs->size()) +
                           " fat binaries, not one");
  }
  fs::path record = InspectionRecord(cache_dir, FatbinRecordName(blobs->front()));
  if (fs::exists(record)) return OkStatus();
  std::string cuobjdump = ToolPath(cuda_home, "cuobjdump");
  if (cuobjdump.empty()) return NotFound("cuobjdump not found");
  Result<RunResult> r = RunQuiet(run, {cuobjdump, "-sass", fatbin.string()});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || r->timed_out || r->out_truncated) {
    return Internal("cuobjdump -sass " + fatbin.string() + ": " + r->Describe());
  }
  BinaryInspection inspection;
  inspection.source = "sass";
  inspection.kernels = ParseCuobjdumpSass(r->out);
  StoreInspection(record, inspection);
  return OkStatus();
}

std::optional<BinaryInspection> InspectionFromFatbins(const fs::path& library,
                                                      const fs::path& cache_dir) {
  Result<std::vector<std::string>> blobs = LibraryFatbins(library);
  if (!blobs.ok() || blobs->empty()) return std::nullopt;
  BinaryInspection joined;
  joined.source = "sass";
  joined.from = "fat binaries";
  std::map<std::string, size_t>
      index;  // a kernel in several fat binaries is one, as in cuobjdump's
  for (const std::string& blob : blobs.value()) {
    std::optional<BinaryInspection> part =
        StoredInspection(InspectionRecord(cache_dir, FatbinRecordName(blob)));
    if (!part || part->source != "sass") return std::nullopt;
    for (DeviceKernel& kernel : part->kernels) {
      auto [it, added] = index.emplace(kernel.mangled, joined.kernels.size());
      if (added) {
        joined.kernels.push_back(std::move(kernel));
      } else {
        joined.kernels[it->second].opcodes.insert(kernel.opcodes.begin(), kernel.opcodes.end());
      }
    }
  }
  return joined;
}

BinaryInspection InspectExtensionCached(const fs::path& library, const std::string& cuda_home,
                                        const ToolRunner& run, const fs::path& cache_dir) {
  Result<std::string> digest =
      cache_dir.empty() ? Result<std::string>(NotFound("no cache")) : Sha256File(library.string());
  fs::path record = digest.ok() ? InspectionRecord(cache_dir, digest.value()) : fs::path();
  if (!record.empty()) {
    if (std::optional<BinaryInspection> stored = StoredInspection(record)) {
      stored->from = "stored";
      return std::move(stored).value();
    }
    if (std::optional<BinaryInspection> joined = InspectionFromFatbins(library, cache_dir)) {
      StoreInspection(record, *joined);
      return std::move(joined).value();
    }
  }
  BinaryInspection inspection = InspectExtension(library, cuda_home, run);
  inspection.from = "library";
  if (!record.empty() && inspection.source == "sass") StoreInspection(record, inspection);
  return inspection;
}

}  // namespace cuda_agent
