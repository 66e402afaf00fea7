// static_rules.cc — the C++/CUDA static scan's entry points: which files are scanned, the limits on
// them, and the rule table. The rules are in judge/static/ (source_scan.h lists the families).
#include "judge/static_rules.h"

#include <set>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

bool IsScannedExtension(const fs::path& p) {
  static const std::set<std::string> kExts = {".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".inl"};
  return kExts.count(p.extension().string()) > 0;
}

bool IsScannedFile(const fs::path& rel) {
  return rel.begin() != rel.end() && *rel.begin() == "kernels" && IsScannedExtension(rel);
}

StaticViolation Unscannable(const std::string& file, std::string why) {
  return {std::string(RuleTable()[kUnscannableSource].name), file, 1, std::move(why)};
}

StaticViolation TooLarge(const std::string& file, uintmax_t size) {
  return Unscannable(file, std::to_string(size) + " bytes: a kernel source may have at most " +
                               std::to_string(kMaxSourceBytes));
}

void Append(std::vector<StaticViolation>& all, std::vector<StaticViolation> found) {
  all.insert(all.end(), found.begin(), found.end());
}

}  // namespace

const std::vector<StaticRuleInfo>& StaticRules() { return RuleTable(); }

std::vector<StaticViolation> ScanSource(std::string_view text, const std::string& rel_path,
                                        const fs::path& candidate_dir, const PolicyRules& rules) {
  HasFile has_file;
  if (!candidate_dir.empty()) {
    has_file = [candidate_dir](const fs::path& rel) {
      std::error_code ec;
      return fs::is_regular_file(candidate_dir / rel, ec);
    };
  }
  SourceScan scan(text, rel_path, std::move(has_file));
  scan.torch_compute_allowed = rules.torch_compute;
  return scan.Run();
}

std::vector<StaticViolation> ScanCandidateSources(const fs::path& candidate_dir) {
  std::vector<StaticViolation> all;
  for (const fs::path& rel : ListFilesRecursive(candidate_dir / "kernels")) {
    if (!IsScannedExtension(rel)) continue;
    const std::string file = (fs::path("kernels") / rel).generic_string();
    std::error_code ec;
    const uintmax_t size = fs::file_size(candidate_dir / file, ec);
    if (!ec && size > kMaxSourceBytes) {
      all.push_back(TooLarge(file, size));
      continue;
    }
    Result<std::string> text = ReadFile(candidate_dir / file);
    if (!text.ok()) {
      all.push_back(Unscannable(file, text.status().message()));
      continue;
    }
    Append(all, ScanSource(text.value(), file, candidate_dir));
  }
  return all;
}

std::vector<StaticViolation> ScanCandidate(const Candidate& candidate, const PolicyRules& rules) {
  const auto& files = candidate.files();
  HasFile has_file = [&files](const fs::path& rel) {
    return files.count(rel.generic_string()) > 0;
  };
  std::vector<StaticViolation> all;
  for (const auto& [file, text] : files) {
    if (!IsScannedFile(file)) continue;
    if (text.size() > kMaxSourceBytes) {
      all.push_back(TooLarge(file, text.size()));
      continue;
    }
    SourceScan scan(text, file, has_file);
    scan.torch_compute_allowed = rules.torch_compute;
    Append(all, scan.Run());
  }
  return all;
}

std::string FormatViolation(const StaticViolation& v) {
  return v.rule + ": " + v.file + ":" + std::to_string(v.line) + ": " + v.message;
}

}  // namespace cuda_agent
