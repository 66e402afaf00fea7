// candidate.h — a candidate as a value: its files (kernels/** sources and headers, model_new.py) in
// memory with their hash, made once at the edge — from a folder, an HTTP body or a queued job — and
// handed down the judge's stages; the build writes its snapshot from it. Names are checked when the
// value is made, so every later stage can trust them.
//
//   Result<Candidate> c = Candidate::FromFolder("ws");                 // a workspace or folder
//   Result<Candidate> d = Candidate::FromFiles({{"kernels/a.cu", src}}); // an HTTP body
//   Status s = c->WriteSnapshot(job / "src", env.TemplateDir());
#pragma once

#include <map>
#include <string>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"

namespace cuda_agent {

// Limits on a candidate made from data (an HTTP body, a queued job).
inline constexpr size_t kMaxCandidateFiles = 256;
inline constexpr size_t kMaxCandidateBytes = 8u << 20;

class Candidate {
 public:
  Candidate() = default;

  // FromFolder reads the candidate files of `dir` (IsCandidatePath); everything else is ignored.
  static Result<Candidate> FromFolder(const fs::path& dir);
  // FromFiles takes relative names and contents; a name that is absolute, leaves the folder (..),
  // or is not a candidate file is an InvalidArgument naming it and the allowed names.
  static Result<Candidate> FromFiles(std::map<std::string, std::string> files);
  // FromJson takes {"kernels/a.cu": "...", ...} (the evaluate API's and the job queue's form).
  static Result<Candidate> FromJson(const Json& files);

  const std::map<std::string, std::string>& files() const { return files_; }
  // Hash: 16 hex digits of SHA-256 over names and contents (a folder's and the same files' given
  // as data are equal).
  const std::string& hash() const { return hash_; }
  bool empty() const { return files_.empty(); }
  size_t bytes() const;
  Json ToJson() const;

  // WriteSnapshot writes the files under `dest` and the template's fixed binding files beside
  // them (never the candidate's own copies).
  Status WriteSnapshot(const fs::path& dest, const fs::path& template_dir) const;
  // WriteFiles writes only the candidate's files under `dest`.
  Status WriteFiles(const fs::path& dest) const;

 private:
  explicit Candidate(std::map<std::string, std::string> files);
  std::map<std::string, std::string> files_;
  std::string hash_;
};

// IsCandidatePath: model_new.py, or kernels/** with a source or header extension (.cu .cuh .cpp
// .cc .h .hpp .inl).
bool IsCandidatePath(const fs::path& relative);

}  // namespace cuda_agent
