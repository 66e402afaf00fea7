// log.h — leveled logging to stderr. Level from $CUDA_AGENT_LOG (error|warn|info|debug), default
// warn.
//
//   LogInfo("built " + std::to_string(n) + " objects");
#pragma once

#include <string>

namespace cuda_agent {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void SetLogLevel(LogLevel level);
void Log(LogLevel level, const std::string& message);
inline void LogError(const std::string& m) { Log(LogLevel::kError, m); }
inline void LogWarn(const std::string& m) { Log(LogLevel::kWarn, m); }
inline void LogInfo(const std::string& m) { Log(LogLevel::kInfo, m); }
inline void LogDebug(const std::string& m) { Log(LogLevel::kDebug, m); }

}  // namespace cuda_agent
