// static_rules.h — the static scan of a candidate's C++/CUDA sources (HACKS.md: C1, C4, A1, A2,
// A4, A7, B2, B4, D). A list of named rules, each with its rationale, applied to every
// kernels/** source and header before anything is compiled. Comments and the contents of string
// literals are blanked first, so no rule fires on them. The scan is the first layer only: macros
// are not expanded and types are guessed from declarations, so the runtime guards and the kernel
// audit must still catch what it cannot see. docs/static-rules.md explains every rule; the rules
// themselves are in judge/static/, one family to a file.
//
//   CandidateScan scan = ScanCandidate(candidate);
//   if (!scan.violations.empty()) Fail("static_rule", FormatViolation(scan.violations.front()));
//   request.libraries = scan.libraries;  // what the builder links
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "builder/cuda_libraries.h"
#include "common/fs.h"
#include "judge/precision.h"
#include "workspace/candidate.h"

namespace cuda_agent {

// StaticViolation is one place where a rule fired.
struct StaticViolation {
  std::string rule;     // the rule's name, e.g. "torch_compute"
  std::string file;     // relative to the candidate folder, e.g. "kernels/x.cu"
  int line = 0;         // 1-based
  std::string message;  // one line: what was found and what to do instead
};

// StaticRuleInfo describes one rule for documentation and for agents.
struct StaticRuleInfo {
  std::string_view name;
  std::string_view rationale;  // why the rule exists (the hack it stops)
  std::string_view matches;    // what it matches, in words
  std::string_view hacks;      // the HACKS.md classes it stops, e.g. "A4 D"
};

// StaticRules lists every C++ rule in the order they are documented.
const std::vector<StaticRuleInfo>& StaticRules();

// CandidateScan: what the static scan found in a candidate's C++/CUDA sources.
struct CandidateScan {
  std::vector<StaticViolation> violations;  // empty: the sources pass
  CudaLibraries libraries;  // the CUDA libraries the sources use: what the build links
};

// ScanCandidate scans every kernels/** file with a source or header extension (.cu .cuh .cpp .cc
// .h .hpp .inl) of a candidate already in memory (the candidate is read once); quoted includes
// resolve against its files. Violations are sorted by file, then line; one rule reports a given
// line once, a file at most 100 violations. A file larger than 1 MiB is itself a violation (and
// not scanned). `rules` is the policy's (PolicyRules::torch_compute: the torch-compute rules off,
// backend_switch on).
CandidateScan ScanCandidate(const Candidate& candidate, const PolicyRules& rules = {});

// CandidateLibraries: only the libraries of the same files, every file lexed whatever its size
// (what a judgement without the rules, JudgeOptions::test_skip_static, still links).
CudaLibraries CandidateLibraries(const Candidate& candidate);

// ScanSource scans one file's text. `rel_path` is the file's path relative to the candidate (it
// names the file in violations and resolves quoted includes: any path inside kernels/ counts as
// the candidate's).
std::vector<StaticViolation> ScanSource(std::string_view text, const std::string& rel_path,
                                        const PolicyRules& rules = {});

// FormatViolation is the one-line reason the judge reports: "<rule>: <file>:<line>: <message>".
std::string FormatViolation(const StaticViolation& v);

}  // namespace cuda_agent
