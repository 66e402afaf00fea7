// static_rules.cc — the C++/CUDA static scan's entry points: which files are scanned, the limits on
// them, and the rule table. The rules are in judge/static/ (source_scan.h lists the families).
#include "judge/static_rules.h"

#include <set>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

bool IsScannedFile(const fs::path& rel) {
  static const std::set<std::string> kExts = {".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".inl"};
  return rel.begin() != rel.end() && *rel.begin() == "kernels" &&
         kExts.count(rel.extension().string()) > 0;
}

StaticViolation TooLarge(const std::string& file, uintmax_t size) {
  return {std::string(RuleTable()[kUnscannableSource].name), file, 1,
          std::to_string(size) + " bytes: a kernel source may have at most " +
              std::to_string(kMaxSourceBytes)};
}

void Append(std::vector<StaticViolation>& all, std::vector<StaticViolation> found) {
  all.insert(all.end(), found.begin(), found.end());
}

}  // namespace

const std::vector<StaticRuleInfo>& StaticRules() { return RuleTable(); }

std::vector<StaticViolation> ScanSource(std::string_view text, const std::string& rel_path,
                                        const PolicyRules& rules) {
  SourceScan scan(text, rel_path, nullptr);
  scan.torch_compute_allowed = rules.torch_compute;
  return scan.Run();
}

CandidateScan ScanCandidate(const Candidate& candidate, const PolicyRules& rules) {
  const auto& files = candidate.files();
  HasFile has_file = [&files](const fs::path& rel) {
    return files.count(rel.generic_string()) > 0;
  };
  CandidateScan out;
  for (const auto& [file, text] : files) {
    if (!IsScannedFile(file)) continue;
    if (text.size() > kMaxSourceBytes) {
      out.violations.push_back(TooLarge(file, text.size()));
      continue;
    }
    SourceScan scan(text, file, has_file);
    scan.torch_compute_allowed = rules.torch_compute;
    Append(out.violations, scan.Run());
    out.libraries.insert(scan.libraries.begin(), scan.libraries.end());
  }
  return out;
}

CudaLibraries CandidateLibraries(const Candidate& candidate) {
  CudaLibraries used;
  for (const auto& [file, text] : candidate.files()) {
    if (!IsScannedFile(file)) continue;
    CudaLibraries found = LibrariesUsed(LexSource(text));
    used.insert(found.begin(), found.end());
  }
  return used;
}

std::string FormatViolation(const StaticViolation& v) {
  return v.rule + ": " + v.file + ":" + std::to_string(v.line) + ": " + v.message;
}

}  // namespace cuda_agent
