// static_checks.cc — the static stage: nothing of the candidate is compiled or run yet. An agent
// workspace's protected files must match the hashes recorded at `workspace init`; the C++/CUDA
// sources must pass the named rules (judge/static_rules.h), whose scan also names the CUDA
// libraries they use (what the build links); model_new.py must pass the harness's `static` job
// (syntax, ModelNew, the AST rules) — whatever stage the judgement stops at. Under the test-only
// JudgeOptions::test_skip_static both rule sets are skipped (the C++ scan, and the AST rules and
// size limit of the `static` job); the protected-file hashes and model_new.py's presence, syntax
// and ModelNew class are checked still: they are not rules a cheat could slip past but the shape
// every candidate must have.
#include "judge/stages/stages.h"
#include "judge/static_rules.h"
#include "workspace/workspace.h"

namespace cuda_agent {

Next StaticChecks(Judgement& j, const Candidate& candidate, const fs::path& workspace) {
  JudgeResult& r = j.result();
  r.stage = Stage::kStatic;
  auto t = Clock::now();
  if (!workspace.empty() && fs::exists(workspace / ".cuda-agent" / "workspace.json")) {
    if (Status intact = VerifyProtectedFiles(workspace); !intact.ok()) {
      return j.Fail(Stage::kStatic, "tampering", intact.message());
    }
  }
  const bool rules = !j.options().test_skip_static;
  std::vector<StaticViolation> found;
  if (rules) {
    CandidateScan scan = ScanCandidate(candidate, j.options().policy.rules);
    found = std::move(scan.violations);
    j.facts().libraries = std::move(scan.libraries);
  } else {
    j.facts().libraries = CandidateLibraries(candidate);  // what the link needs, rules or not
  }
  for (const auto& v : found) {
    r.violations.push_back(
        {{"rule", v.rule}, {"file", v.file}, {"line", v.line}, {"message", v.message}});
  }
  if (!found.empty()) {
    r.stage_seconds["static"] = SecondsSince(t);
    return j.Fail(Stage::kStatic, "static_rule", FormatViolation(found.front()));
  }
  // The same rules whatever stage the judgement stops at: a build alone (`cuda-agent build`, the
  // agent's compile.sh) checks model_new.py too when the candidate has one; only a build may go
  // without it (kernels compiled before model_new.py is written).
  const bool has_model_new = candidate.files().count("model_new.py") > 0;
  if (j.options().until != Stage::kBuild || has_model_new) {
    // The harness reads model_new.py from the snapshot (WriteSnapshot), which names the work
    // folder: a candidate without one is named here, by where it came from.
    if (!has_model_new) {
      std::string where = workspace.empty() ? "the candidate" : fs::absolute(workspace).string();
      return j.Fail(Stage::kStatic, "missing_model_new", "model_new.py not found in " + where);
    }
    Json spec = {{"candidate_dir", fs::absolute(j.dirs().src).string()},
                 {"policy_rules", j.options().policy.rules.ToJson()}};
    if (!rules) spec["rules"] = false;
    Result<JobOutcome> st = j.RunJob("static", "static", spec, 60, nullptr);
    if (!st.ok()) return j.Internal(st.status().message());
    if (!st->has_result) return j.Internal("static check failed to run: " + st->StderrTail(5));
    for (const auto& v : st->result.value("violations", Json::array())) r.violations.push_back(v);
    if (!st->Ok()) return j.Fail(Stage::kStatic, st->ErrorKind(), st->Reason());
  }
  r.stage_seconds["static"] = SecondsSince(t);
  return Next::kContinue;
}

}  // namespace cuda_agent
