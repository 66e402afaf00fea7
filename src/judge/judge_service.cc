// judge_service.cc — the in-process judge service.
#include "judge/judge_service.h"

#include "workspace/workspace.h"

namespace cuda_agent {

JudgeResult InProcessJudge::Evaluate(const JudgeRequest& request) {
  // A workspace is judged where it is (its protected files are checked there); a candidate that
  // arrived as data is written to a private folder first.
  if (!request.workspace.empty())
    return judge_.Run(&request.task, request.workspace, request.options);
  fs::path cache =
      request.options.cache_dir.empty() ? DefaultCacheDir() : request.options.cache_dir;
  std::error_code ec;
  fs::create_directories(cache / "candidates", ec);
  Result<fs::path> dir = MakeTempDir(cache / "candidates", request.candidate.hash());
  JudgeResult failed;
  failed.outcome = Outcome::kInternalError;
  if (!dir.ok()) {
    failed.reason = "internal error: " + dir.status().message();
    return failed;
  }
  Status written = request.candidate.WriteFiles(dir.value());
  if (!written.ok()) {
    fs::remove_all(dir.value(), ec);
    failed.reason = "internal error: " + written.message();
    return failed;
  }
  JudgeResult result = judge_.Run(&request.task, dir.value(), request.options);
  fs::remove_all(dir.value(), ec);
  return result;
}

}  // namespace cuda_agent
