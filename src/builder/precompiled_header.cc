// precompiled_header.cc — the binding files' precompiled header: made once in the background, used
// when ready.
#include "builder/precompiled_header.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "common/hash.h"
#include "common/log.h"
#include "common/subprocess.h"

namespace cuda_agent {
namespace {

constexpr double kStaleAttemptSeconds = 3600;  // an attempt this old that made nothing failed

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

double AgeSeconds(const fs::path& p) {
  struct stat st;
  if (stat(p.c_str(), &st) != 0) return 1e18;
  return std::difftime(std::time(nullptr), st.st_mtime);
}

// PchFileName: the precompiled form of cuda_agent_pch.h each compiler reads.
std::string PchFileName(PchCompiler compiler) {
  return std::string(kPchHeader) + (compiler == PchCompiler::kClang ? ".pch" : ".gch");
}

}  // namespace

PchVariant PchVariantFor(const std::string& source) {
  for (const char* full :
       {"<torch/extension.h>", "<torch/torch.h>", "<torch/all.h>", "<torch/script.h>"}) {
    if (source.find(full) != std::string::npos) return PchVariant::kFull;
  }
  for (const char* prefix : {"<torch/", "<ATen/", "<c10/", "<pybind11/"}) {
    if (source.find(prefix) != std::string::npos) return PchVariant::kCore;
  }
  return PchVariant::kNone;
}

std::string PchHeaderText(Device device, PchVariant variant) {
  std::string text =
      "// cuda_agent_pch.h — precompiled by the judge (build/precompiled_header.h); not a "
      "candidate file.\n"
      "#pragma once\n";
  if (variant == PchVariant::kFull) text += "#include <torch/extension.h>\n";
  text +=
      "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>\n#include "
      "<pybind11/pybind11.h>\n";
  if (device == Device::kCuda) {
    text +=
        "#include <cuda_runtime.h>\n#include <c10/cuda/CUDAGuard.h>\n#include "
        "<c10/cuda/CUDAStream.h>\n";
  }
  return text;
}

std::vector<std::string> PchIncludeFlags(const fs::path& dir, PchCompiler compiler) {
  if (compiler == PchCompiler::kClang)
    return {"-include-pch", (dir / PchFileName(compiler)).string()};
  return {"-include", (dir / kPchHeader).string()};
}

std::optional<fs::path> PrecompiledHeader(const fs::path& cache_dir,
                                          const std::vector<std::string>& flags,
                                          const Toolchain& toolchain, PchVariant variant,
                                          PchCompiler compiler, bool start, bool* failed) {
  if (failed != nullptr) *failed = false;
  if (cache_dir.empty() || flags.empty() || variant == PchVariant::kNone) return std::nullopt;
  std::string header = PchHeaderText(toolchain.device, variant);
  std::string joined;
  for (const auto& f : flags) joined += f + "\x1f";
  // Each compiler's header in a folder of its own, even for the same flags (g++'s keeps its name).
  // clang refuses a header another build of clang made (g++ ignores a stale .gch), so an upgraded
  // clang at the same path gets a new folder: the executable's size and time are in the name.
  if (compiler == PchCompiler::kClang) joined += "clang-pch\x1f" + FileStamp(flags[0]);
  fs::path dir =
      cache_dir / "pch" / Sha256Hex(joined + toolchain.Fingerprint() + header).substr(0, 16);
  fs::path made = dir / PchFileName(compiler);
  std::error_code ec;
  if (fs::exists(made, ec)) return dir;
  // One attempt at a time, and a new one only an hour after the last (a failed one leaves
  // `failed`).
  fs::path marker = dir / "started";
  fs::path failed_mark = dir / "failed";
  if (fs::exists(marker, ec) && AgeSeconds(marker) < kStaleAttemptSeconds) {
    if (failed != nullptr) *failed = fs::exists(failed_mark, ec);
    return std::nullopt;
  }
  if (!start) return std::nullopt;
  fs::create_directories(dir, ec);
  if (ec) return std::nullopt;
  fs::remove(marker, ec);
  fs::remove(failed_mark, ec);
  int fd = open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return std::nullopt;  // another judgement just started it
  close(fd);
  fs::path header_path = dir / kPchHeader;
  if (!WriteFileAtomic(header_path, header).ok()) return std::nullopt;
  std::string command = "exec >" + ShellQuote((dir / "log.txt").string()) + " 2>&1; ";
  for (const auto& f : flags) command += ShellQuote(f) + " ";
  // clang keeps the templates the headers instantiate in the .pch; a file using it does not
  // instantiate them again.
  if (compiler == PchCompiler::kClang) command += "-fpch-instantiate-templates ";
  fs::path tmp = made;
  tmp += ".tmp";
  command += "-x c++-header " + ShellQuote(header_path.string()) + " -o " +
             ShellQuote(tmp.string()) + " && mv -f " + ShellQuote(tmp.string()) + " " +
             ShellQuote(made.string()) + " || : >" + ShellQuote(failed_mark.string());
  RunOptions env;
  Status spawned = SpawnDetached({"/bin/sh", "-c", command}, BuildEnvironment(env), "/dev/null");
  if (!spawned.ok()) LogWarn("precompiled header not started: " + spawned.message());
  return std::nullopt;
}

}  // namespace cuda_agent
