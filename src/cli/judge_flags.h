// judge_flags.h — the judge's option table and its parsing, shared by every subcommand that judges
// or measures (judge, build, baselines, bench; commands.cc, eval_commands.cc).
//
//   std::vector<OptionSpec> specs = JudgeSpecs();   // plus the command's own flags
//   Result<ParsedArgs> a = ParseArgs(specs, args);
//   Result<JudgeOptions> opt = OptionsFromArgs(a.value());
#pragma once

#include <string>
#include <vector>

#include "cli/exit_status.h"
#include "cli/options.h"
#include "judge/judge.h"

namespace cuda_agent {

// JudgeSpecs: --device, --policy, --warmup, --iters, --baselines, --cache-dir, ... (docs/cli.md).
const std::vector<OptionSpec>& JudgeSpecs();

// WithJudgeSpecs: the judge's flags plus a command's own (which win over a judge flag of the same
// name).
std::vector<OptionSpec> WithJudgeSpecs(const std::vector<OptionSpec>& own);

// OptionsFromArgs builds JudgeOptions from parsed judge flags; an error names the bad flag.
Result<JudgeOptions> OptionsFromArgs(const ParsedArgs& args);

// UsageError prints "cuda-agent COMMAND: MESSAGE" and the options to stderr; returns kExitUsage.
int UsageError(const std::string& command, const std::string& message,
               const std::vector<OptionSpec>& specs);

}  // namespace cuda_agent
