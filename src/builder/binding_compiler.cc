// binding_compiler.cc — finding the clang that compiles binding files.
#include "builder/binding_compiler.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/log.h"
#include "common/subprocess.h"

namespace cuda_agent {
namespace {

constexpr int kOldestClang = 11;  // -fpch-instantiate-templates
constexpr int kNewestClang = 30;

std::optional<BindingClang> Probe(const std::string& path) {
  RunOptions opt;
  opt.argv = {path, "--version"};
  opt.timeout_seconds = 20;
  Result<RunResult> run = RunProcess(opt);
  if (!run.ok() || !run->Succeeded()) return std::nullopt;
  BindingClang clang{path, run->out.substr(0, run->out.find('\n')), 0};
  clang.major = ParseClangMajor(clang.version);
  if (clang.major < kOldestClang) return std::nullopt;
  return clang;
}

std::optional<BindingClang> Discover(const std::string& setting) {
  if (setting == "off") return std::nullopt;
  if (setting != "auto") {
    Result<std::string> path = FindExecutable(setting);
    std::optional<BindingClang> clang = path.ok() ? Probe(path.value()) : std::nullopt;
    if (!clang) {
      LogWarn("--binding-clang " + setting +
              " is not a clang++ of version 11 or newer; binding files are compiled with g++");
    }
    return clang;
  }
  for (int major = kNewestClang; major >= kOldestClang; --major) {
    Result<std::string> path = FindExecutable("clang++-" + std::to_string(major));
    if (path.ok()) return Probe(path.value());
  }
  Result<std::string> path = FindExecutable("clang++");
  return path.ok() ? Probe(path.value()) : std::nullopt;
}

}  // namespace

int ParseClangMajor(const std::string& version_line) {
  const std::string marker = "clang version ";
  size_t at = version_line.find(marker);
  if (at == std::string::npos) return 0;
  at += marker.size();
  int major = 0;
  for (; at < version_line.size() && std::isdigit(static_cast<unsigned char>(version_line[at]));
       ++at) {
    major = major * 10 + (version_line[at] - '0');
    if (major > 1000) return 0;
  }
  return major;
}

std::optional<BindingClang> FindBindingClang(const std::string& setting) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<BindingClang>> found;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(setting);
  if (it == found.end()) it = found.emplace(setting, Discover(setting)).first;
  return it->second;
}

const char* BindingOptimization(Device device) { return device == Device::kCuda ? "-O0" : "-O3"; }

}  // namespace cuda_agent
