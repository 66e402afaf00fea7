// single_file_judge.cc — KernelBench's single-file solutions through the judge
// (single_file_judge.h).
#include "judge/single_file_judge.h"

namespace cuda_agent {

JudgeResult SingleFileRefusal(const fs::path& file, const SingleFileConversion& conversion,
                              const JudgeOptions& options) {
  JudgeResult result;
  result.device = DeviceName(options.device);
  result.candidate = {{"dir", file.string()}, {"hash", Candidate().hash()}};
  result.Fail(Stage::kStatic, "single_file", conversion.error);
  if (options.test_skip_static) result.MarkStaticSkipped();
  result.candidate["single_file"] = SingleFileJson(file, conversion);
  return result;
}

Result<JudgeResult> JudgeSingleFile(const HarnessEnv& env, const Task& task, const fs::path& file,
                                    const JudgeOptions& options, std::vector<std::string>* notes) {
  Result<SingleFileCandidate> converted = CandidateFromSingleFile(env, file);
  if (!converted.ok()) return converted.status();
  const SingleFileConversion& conversion = converted->conversion;
  if (notes) *notes = conversion.notes;
  if (!conversion.ok) return SingleFileRefusal(file, conversion, options);
  JudgeResult result = Judge(env).Run(&task, converted->candidate, options, file);
  result.candidate["single_file"] = SingleFileJson(file, conversion);
  return result;
}

}  // namespace cuda_agent
