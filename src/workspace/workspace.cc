// workspace.cc — template copy, protection.
#include "workspace/workspace.h"

#include <sys/stat.h>

#include "common/hash.h"
#include "common/json.h"
#include "workspace/layout.h"

namespace cuda_agent {
namespace {

constexpr const char* kMetaDir = ".cuda-agent";
constexpr const char* kMetaFile = "workspace.json";

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

}  // namespace

std::vector<std::string> ProtectedFiles(const fs::path& workspace_dir) {
  std::vector<std::string> files = {"model.py", "SKILL.md"};
  files.insert(files.end(), std::begin(kInfrastructureFiles), std::end(kInfrastructureFiles));
  for (const fs::path& rel : ListFilesRecursive(workspace_dir / "utils")) {
    if (rel.extension() == ".pyc") continue;
    files.push_back((fs::path("utils") / rel).generic_string());
  }
  return files;
}

Status InitWorkspace(const WorkspaceSpec& spec) {
  std::error_code ec;
  if (fs::exists(spec.dir, ec) && !fs::is_empty(spec.dir, ec)) {
    return InvalidArgument("workspace folder is not empty: " + spec.dir.string());
  }
  fs::path templ = spec.env.TemplateDir();
  if (!fs::exists(templ / "SKILL.md")) {
    return FailedPrecondition("workspace template missing at " + templ.string());
  }
  fs::create_directories(spec.dir / "kernels", ec);
  if (ec) return Internal("cannot create " + spec.dir.string() + ": " + ec.message());
  Status copied = CopyFiles(templ, spec.dir, ListFilesRecursive(templ));
  if (!copied.ok()) return copied;
  Result<std::string> skill = ReadFile(spec.dir / "SKILL.md");
  if (!skill.ok()) return skill.status();
  Status written = WriteFileAtomic(
      spec.dir / "SKILL.md", ReplaceAll(skill.value(), "{{DEVICE}}", DeviceName(spec.device)));
  if (!written.ok()) return written;
  written = WriteFileAtomic(spec.dir / "model.py", spec.task.code);
  if (!written.ok()) return written;

  Json protected_hashes = Json::object();
  for (const std::string& rel : ProtectedFiles(spec.dir)) {
    Result<std::string> digest = Sha256File(spec.dir / rel);
    if (!digest.ok()) return digest.status();
    protected_hashes[rel] = digest.value();
    chmod((spec.dir / rel).c_str(), 0444);
  }
  Json meta = {{"schema_version", 1},
               {"task", {{"id", spec.task.id}, {"name", spec.task.name}}},
               {"device", DeviceName(spec.device)},
               {"binary", spec.binary.string()},
               {"home", spec.env.home.string()},
               {"protected", protected_hashes}};
  return WriteJsonFile(spec.dir / kMetaDir / kMetaFile, meta);
}

Status VerifyProtectedFiles(const fs::path& workspace_dir) {
  Result<Json> meta = ReadJsonFile(workspace_dir / kMetaDir / kMetaFile);
  if (!meta.ok()) return meta.status();
  const Json recorded = meta->value("protected", Json::object());
  if (!recorded.is_object())
    return InvalidArgument("workspace.json: \"protected\" is not an object");
  for (const auto& [rel, digest] : recorded.items()) {
    Result<std::string> now = Sha256File(workspace_dir / rel);
    if (!now.ok() || !digest.is_string() || now.value() != digest.get<std::string>()) {
      return FailedPrecondition("protected file changed: " + rel);
    }
  }
  return OkStatus();
}

}  // namespace cuda_agent
