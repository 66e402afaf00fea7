// json.h — the project's one door to the JSON library (nlohmann/json): the Json type and file I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

using Json = nlohmann::json;

// ParseJson parses text; `what` names the source in the error message.
Result<Json> ParseJson(const std::string& text, const std::string& what);
Result<Json> ReadJsonFile(const fs::path& path);
Status WriteJsonFile(const fs::path& path, const Json& value);

}  // namespace cuda_agent
