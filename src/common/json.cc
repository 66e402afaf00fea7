// json.cc — JSON parsing and files, exceptions converted to Status here.
#include "common/json.h"

namespace cuda_agent {

Result<Json> ParseJson(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    return InvalidArgument(what + " is not valid JSON: " + e.what());
  }
}

Result<Json> ReadJsonFile(const fs::path& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseJson(text.value(), path.string());
}

Status WriteJsonFile(const fs::path& path, const Json& value) {
  return WriteFileAtomic(path, value.dump(2) + "\n");
}

}  // namespace cuda_agent
