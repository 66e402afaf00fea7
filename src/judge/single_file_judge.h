// single_file_judge.h — judging KernelBench's single-file solution (one .py with load_inline): the
// file is converted statically into a candidate (workspace/single_file.h) and judged as any
// candidate; a file the converter refuses is a verdict of -1 at the static stage with the
// converter's reason (error_kind "single_file"). The conversion is in candidate.single_file. Used
// by `judge --candidate FILE.py` and by `bench` (whose kernelbench: solver hands over .py files).
//
//   Result<JudgeResult> r = JudgeSingleFile(env, task, "solution.py", options);
//   if (!r.ok()) Internal(r.status());   // the converter could not run at all
#pragma once

#include <string>
#include <vector>

#include "common/fs.h"
#include "common/status.h"
#include "harness/client.h"
#include "judge/judge.h"
#include "workspace/single_file.h"

namespace cuda_agent {

// SingleFileRefusal is the verdict for a file the converter refused: -1 at stage static,
// error_kind "single_file", the converter's reason (with file:line), candidate.single_file set.
JudgeResult SingleFileRefusal(const fs::path& file, const SingleFileConversion& conversion,
                              const JudgeOptions& options);

// JudgeSingleFile converts `file` and judges it with Judge::Run (the result names the file as the
// candidate's dir); `notes` (optional) receives what the conversion ignored (the author's flags).
Result<JudgeResult> JudgeSingleFile(const HarnessEnv& env, const Task& task, const fs::path& file,
                                    const JudgeOptions& options,
                                    std::vector<std::string>* notes = nullptr);

}  // namespace cuda_agent
