// source_scan.cc — one file's scan: the families applied in order, the violations collected.
#include "judge/static/source_scan.h"

#include <algorithm>

namespace cuda_agent {

SourceScan::SourceScan(std::string_view text, std::string rel_path, HasFile has)
    : src(LexSource(text)), rel(std::move(rel_path)), has_file(std::move(has)) {
  for (const Token& t : src.tokens) {
    if (!t.in_directive) code.push_back(t);
  }
  PairBrackets(code);
  for (size_t i = 0; i + 2 < src.tokens.size(); ++i) {
    if (src.tokens[i].IsIdent("using") && src.tokens[i + 1].IsIdent("namespace") &&
        src.tokens[i + 2].IsIdent("std")) {
      using_std = true;
    }
  }
}

void SourceScan::Emit(Rule rule, int line, std::string message) {
  if (torch_compute_allowed &&
      (rule == kTorchCompute || rule == kTensorCompute || rule == kTorchNamespaceAlias)) {
    return;
  }
  if (found.size() >= kMaxViolationsPerFile || !emitted.insert({rule, line}).second) return;
  found.push_back({std::string(RuleTable()[rule].name), rel, line, std::move(message)});
}

std::vector<StaticViolation> SourceScan::Run() {
  CheckIncludes(*this);
  CheckNames(*this, src.tokens);
  CheckHiddenIdentifiers(*this);
  CheckAsm(*this);
  CheckAttributes(*this);
  CheckPragmas(*this);
  CheckNamespaceAliases(*this);
  defined = DefinedFunctions(code);
  CheckInterposition(*this);
  TrackTensors(*this);
  CheckMethods(*this, code, &tensor_use);
  for (const std::vector<Token>& group : DirectiveGroups(src.tokens)) {
    CheckMethods(*this, group, nullptr);
    CheckStatic(*this, group);
  }
  CheckTensorOperators(*this);
  CheckAdlCalls(*this);
  CheckSetDevice(*this);
  CheckStatic(*this, code);
  CheckGlobals(*this);
  if (torch_compute_allowed) CheckBackendSwitches(*this);
  libraries = LibrariesUsed(src);
  std::sort(found.begin(), found.end(),
            [](const StaticViolation& a, const StaticViolation& b) { return a.line < b.line; });
  return std::move(found);
}

}  // namespace cuda_agent
