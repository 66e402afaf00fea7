// candidate.cc — making, hashing and writing candidate values.
#include "workspace/candidate.h"

#include <algorithm>

#include "common/hash.h"
#include "workspace/layout.h"

namespace cuda_agent {

bool IsCandidatePath(const fs::path& rel) {
  if (rel == "model_new.py") return true;
  std::string first = rel.begin() == rel.end() ? "" : rel.begin()->string();
  if (first != "kernels") return false;
  static const std::vector<std::string> kExts = {".cu", ".cuh", ".cpp", ".cc",
                                                 ".h",  ".hpp", ".inl"};
  return std::find(kExts.begin(), kExts.end(), rel.extension().string()) != kExts.end();
}

Candidate::Candidate(std::map<std::string, std::string> files) : files_(std::move(files)) {
  Sha256 h;
  for (const auto& [name, content] : files_) {
    h.Update(name);
    h.Update(std::string(1, '\0'));
    h.Update(content);
    h.Update(std::string(1, '\0'));
  }
  hash_ = h.HexDigest().substr(0, 16);
}

Result<Candidate> Candidate::FromFolder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("candidate folder not found: " + dir.string());
  std::map<std::string, std::string> files;
  for (const fs::path& rel : ListFilesRecursive(dir)) {
    if (!IsCandidatePath(rel)) continue;
    Result<std::string> content = ReadFile(dir / rel);
    if (!content.ok()) return content.status();
    files[rel.generic_string()] = std::move(content).value();
  }
  return Candidate(std::move(files));
}

Result<Candidate> Candidate::FromFiles(std::map<std::string, std::string> files) {
  if (files.size() > kMaxCandidateFiles) {
    return InvalidArgument("a candidate has at most " + std::to_string(kMaxCandidateFiles) +
                           " files (got " + std::to_string(files.size()) + ")");
  }
  size_t total = 0;
  for (const auto& [name, content] : files) {
    const fs::path rel(name);
    bool escapes = rel.is_absolute() || name.empty() || name.find('\\') != std::string::npos;
    for (const fs::path& part : rel) escapes = escapes || part == ".." || part == ".";
    if (escapes || rel.lexically_normal().generic_string() != name) {
      return InvalidArgument("file name '" + name +
                             "' leaves the workspace: use a relative name such as "
                             "kernels/my_kernel.cu or model_new.py");
    }
    if (!IsCandidatePath(rel)) {
      return InvalidArgument("'" + name +
                             "' is not a candidate file: a candidate holds model_new.py and "
                             "kernels/** sources or headers (.cu .cuh .cpp .cc .h .hpp .inl)");
    }
    total += content.size();
  }
  if (total > kMaxCandidateBytes) {
    return InvalidArgument("a candidate's files hold at most " +
                           std::to_string(kMaxCandidateBytes >> 20) + " MiB");
  }
  return Candidate(std::move(files));
}

Result<Candidate> Candidate::FromJson(const Json& files) {
  if (!files.is_object()) {
    return InvalidArgument("files must be an object of name → content");
  }
  std::map<std::string, std::string> map;
  for (const auto& [name, content] : files.items()) {
    if (!content.is_string())
      return InvalidArgument("the content of '" + name + "' is not a string");
    map[name] = content.get<std::string>();
  }
  return FromFiles(std::move(map));
}

size_t Candidate::bytes() const {
  size_t total = 0;
  for (const auto& [name, content] : files_) total += content.size();
  return total;
}

Json Candidate::ToJson() const {
  Json out = Json::object();
  for (const auto& [name, content] : files_) out[name] = content;
  return out;
}

Status Candidate::WriteFiles(const fs::path& dest) const {
  for (const auto& [name, content] : files_) {
    std::error_code ec;
    fs::create_directories((dest / name).parent_path(), ec);
    if (ec) return Internal("cannot create " + (dest / name).parent_path().string());
    Status s = WriteFileAtomic(dest / name, content);
    if (!s.ok()) return s;
  }
  return OkStatus();
}

Status Candidate::WriteSnapshot(const fs::path& dest, const fs::path& template_dir) const {
  Status s = WriteFiles(dest);
  if (!s.ok()) return s;
  return CopyFiles(
      template_dir, dest,
      std::vector<fs::path>(std::begin(kInfrastructureFiles), std::end(kInfrastructureFiles)));
}

}  // namespace cuda_agent
