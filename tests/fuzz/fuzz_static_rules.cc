// fuzz_static_rules.cc — libFuzzer target for the static scan of candidate sources
// (ScanSource, src/judge/static_rules.h): any file text must scan without a crash, every violation
// must name a documented rule and a line of the file, and the scan must be deterministic.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "judge/static_rules.h"

using cuda_agent::StaticViolation;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string rel_path = "kernels/fuzz.cu";
  std::vector<StaticViolation> found = cuda_agent::ScanSource(text, rel_path);
  int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  const auto& rules = cuda_agent::StaticRules();
  for (const StaticViolation& v : found) {
    FUZZ_CHECK(std::any_of(rules.begin(), rules.end(),
                           [&](const cuda_agent::StaticRuleInfo& r) { return r.name == v.rule; }));
    FUZZ_CHECK(v.file == rel_path);
    FUZZ_CHECK(v.line >= 1 && v.line <= lines);
    FUZZ_CHECK(!v.message.empty());
    FUZZ_CHECK(!cuda_agent::FormatViolation(v).empty());
  }
  std::vector<StaticViolation> again = cuda_agent::ScanSource(text, rel_path);
  FUZZ_CHECK(again.size() == found.size());
  for (size_t k = 0; k < found.size(); ++k) {
    FUZZ_CHECK(again[k].rule == found[k].rule && again[k].line == found[k].line &&
               again[k].message == found[k].message);
  }
  return 0;
}
