// nvcc_plan.h — nvcc's compilation of one .cu file as two chains that run side by side.
//
// nvcc runs its phases one after the other: the host front end (preprocessing, cudafe++), the
// device chain (preprocessing, cicc, ptxas, fatbinary), then the host compile that embeds the fat
// binary. The two chains share one thing: the translation unit's module id, which names its
// internal symbols on both sides; cudafe++ writes it and cicc reads it. A plan takes nvcc's own
// command lines (`nvcc -dryrun -keep --keep-dir D ...`), has the id written beforehand (cudafe++
// then reads it like cicc), and so lets the chains run at once; the host compile follows.
// The build after a .cu edit takes 1.63 s instead of 1.99 s on the H100 host (median;
// docs/decisions/build.md). Any other shape of dryrun output is refused, and
// the caller runs nvcc itself.
//
//   Result<NvccPlan> plan = PlanNvcc(dryrun_output);
//   if (plan.ok()) { write NvccModuleId(...) to plan->module_id_file; run the chains; ... }
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

using CommandLine = std::vector<std::string>;

struct NvccPlan {
  std::vector<std::string> env;           // "NAME=VALUE": what nvcc sets for its tools
  std::vector<CommandLine> host_chain;    // preprocessing, cudafe++ (reads the module id)
  std::vector<CommandLine> device_chain;  // preprocessing, cicc, ptxas, fatbinary
  CommandLine host_compile;               // the object, with the fat binary embedded
  fs::path module_id_file;                // written before the chains start
};

// PlanNvcc reads `nvcc -dryrun` output (its "#$ " lines). An error says which expectation the
// output broke: one cudafe++ that generates the module id, preprocessing only before it, a cicc
// after it that reads the same id, and a last command that compiles (-c).
Result<NvccPlan> PlanNvcc(const std::string& dryrun_output);

// SplitCommandLine splits one dryrun command into words as sh would: double and single quotes,
// backslash escapes, $NAME and ${NAME} from `vars` (unknown names are an error). Command
// substitution and operators (`, $(, ;, |, &, <, >) are refused: a dryrun line has none.
Result<CommandLine> SplitCommandLine(const std::string& line,
                                     const std::map<std::string, std::string>& vars);

// ShellScript joins commands into one `sh -c` script that stops at the first failure; every word
// is single-quoted, so nothing in a file name is interpreted.
std::string ShellScript(const std::vector<CommandLine>& commands);

// NvccModuleId is an identifier for a translation unit in nvcc's shape,
// _<hash>_<length>_<name>_<hash>: `name` is the file's name ("relu_scale.cu" gives relu_scale_cu),
// `key` anything that changes with the unit's content and flags (the hashes are taken from it and
// from `name`).
std::string NvccModuleId(const std::string& name, const std::string& key);

}  // namespace cuda_agent
