// rules.h — the C++/CUDA static rules by name: the Rule each check emits, in the documented
// order, and its table entry (StaticRuleInfo: name, rationale, what it matches, the HACKS.md
// classes it stops). The checks live one family to a file beside this one (rule_families.h).
#pragma once

#include <vector>

#include "judge/static_rules.h"

namespace cuda_agent {

// Rule indexes StaticRules(); the order is the documented order.
enum Rule : int {
  kForbiddenInclude,
  kTorchCompute,
  kTensorCompute,
  kTorchNamespaceAlias,
  kLibraryCompute,
  kPythonApi,
  kSideStream,
  kHostThread,
  kHostRoundtrip,
  kL2Persistence,
  kDeviceState,
  kStaticState,
  kGlobalState,
  kDynamicLoading,
  kSymbolInterposition,
  kLinkerTricks,
  kTimerPatching,
  kClockRead,
  kProcessEscape,
  kFileIo,
  kAsmEscape,
  kHiddenIdentifier,
  kBackendSwitch,
  kUnscannableSource,
};

// RuleTable: one entry per Rule, in the same order (rules.cc).
const std::vector<StaticRuleInfo>& RuleTable();

}  // namespace cuda_agent
