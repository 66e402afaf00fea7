// judge_service.cc — the in-process judge service.
#include "judge/judge_service.h"

namespace cuda_agent {

JudgeResult InProcessJudge::Evaluate(const JudgeRequest& request) {
  // The candidate goes straight through; a request that names only a workspace is read here, once.
  if (request.candidate.empty() && !request.workspace.empty()) {
    return judge_.Run(&request.task, request.workspace, request.options);
  }
  return judge_.Run(&request.task, request.candidate, request.options, request.workspace);
}

}  // namespace cuda_agent
