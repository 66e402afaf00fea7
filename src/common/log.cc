// log.cc — stderr logger; one mutex so lines from build threads do not interleave.
#include "common/log.h"

#include <iostream>
#include <mutex>

#include "common/host_environment.h"

namespace cuda_agent {
namespace {

LogLevel LevelFromEnv() {
  const std::string& v = HostValue(HostVar::kLog);
  if (v == "error") return LogLevel::kError;
  if (v == "info") return LogLevel::kInfo;
  if (v == "debug") return LogLevel::kDebug;
  return LogLevel::kWarn;
}

LogLevel g_level = LevelFromEnv();
std::mutex g_mutex;

}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }

void Log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) > static_cast<int>(g_level)) return;
  static constexpr const char* kNames[] = {"error", "warn", "info", "debug"};
  std::lock_guard<std::mutex> lock(g_mutex);
  std::cerr << "cuda-agent: " << kNames[static_cast<int>(level)] << ": " << message << "\n";
}

}  // namespace cuda_agent
