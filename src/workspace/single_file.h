// single_file.h — KernelBench's single-file solution (one .py whose ModelNew builds its CUDA with
// torch.utils.cpp_extension.load_inline) as a candidate: the harness's
// python/cuda_agent_harness/single_file.py reads the file statically — it never imports or runs it
// — and writes kernels/ (the sources, a REGISTER_BINDING binding) and model_new.py (the author's
// file with each load_inline(...) replaced by cuda_extension). A file whose sources are computed at
// run time, or that load_inline itself could never build, is refused with the reason and line.
//
//   if (std::optional<fs::path> py = SingleFileOf(candidate)) {
//     Result<SingleFileCandidate> c = CandidateFromSingleFile(env, *py);
//     if (c.ok() && !c->conversion.ok) Refuse(c->conversion.error);   // a verdict, not an error
//   }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"
#include "workspace/candidate.h"

namespace cuda_agent {

// SingleFileConversion is the converter's report (its --json output).
struct SingleFileConversion {
  bool ok = false;
  std::string error;               // the refusal, "solution.py:12: ...", when !ok
  int line = 0;                    // the refusal's line in the file; 0 when it names none
  std::vector<std::string> notes;  // what was ignored (the author's compiler flags) or moved
  std::vector<std::string> files;  // the files written, relative to the folder
};

// SingleFileCandidate is a converted file read back as a candidate value.
struct SingleFileCandidate {
  SingleFileConversion conversion;
  Candidate candidate;  // empty when the file was refused
};

// SingleFileOf: the solution file `candidate` names — itself when it is a .py file, or the one .py
// of a folder that holds exactly one and no kernels/ — else nothing (a candidate folder).
std::optional<fs::path> SingleFileOf(const fs::path& candidate);

// ConvertSingleFile runs `python -m cuda_agent_harness.single_file FILE OUT_DIR --json` with the
// harness's interpreter and home; OUT_DIR (made when missing) then holds the candidate's files,
// overwriting those of the same names, unless the file is refused (nothing is written then). A
// refusal is a report with ok == false; an error Status means the converter could not run.
Result<SingleFileConversion> ConvertSingleFile(const HarnessEnv& env, const fs::path& file,
                                               const fs::path& out_dir);

// CandidateFromSingleFile converts `file` in a private temporary folder, reads the candidate from
// it (Candidate::FromFolder) and removes the folder.
Result<SingleFileCandidate> CandidateFromSingleFile(const HarnessEnv& env, const fs::path& file);

// SingleFileJson: the conversion for a JudgeResult's candidate.single_file ({file, notes, files,
// and error/line when refused}).
Json SingleFileJson(const fs::path& file, const SingleFileConversion& conversion);

}  // namespace cuda_agent
