// rft_command.cc — `cuda-agent rft INPUT... --out DIR`: rejection fine-tuning data from agent
// trajectories (docs/rft.md); the filtering is src/rft/, the optional parquet a Python step.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/options.h"
#include "cli/python_step.h"
#include "rft/rft.h"

namespace cuda_agent {
namespace {

const std::vector<OptionSpec>& RftSpecs() {
  static const std::vector<OptionSpec> specs = {
      {"out", true, "output folder: sft.jsonl, report.json (and sft.parquet with --parquet)", ""},
      {"min-reward", true, "keep reward >= this (default: keep reward > 0)", ""},
      {"keep-unfinished", false, "keep episodes not ended by the model's answer", ""},
      {"max-identical-calls", true, "remove at this many identical consecutive tool calls", "3"},
      {"loop-repeats", true, "remove when a block of 2-4 calls repeats this many times in a row",
       "3"},
      {"max-turns", true, "remove episodes with more assistant turns (0: no limit)", "150"},
      {"max-tokens", true, "remove episodes whose largest context exceeds this (0: no limit)",
       "131072"},
      {"strict", false, "fail on bad input (exit 3) instead of skipping its trajectory", ""},
      {"parquet", false, "also write sft.parquet for verl's SFT trainer (needs pyarrow)", ""},
      {"json", false, "print report.json on stdout", ""},
  };
  return specs;
}

int RftUsage(const std::string& message) {
  std::cerr << "cuda-agent rft: " << message << "\n\nusage: cuda-agent rft INPUT... --out DIR\n"
            << "INPUT: an episode folder tree (trajectory.jsonl + result.json) or a JSONL of "
               "trajectory records\n\noptions:\n"
            << FormatHelp(RftSpecs());
  return kExitUsage;
}

}  // namespace

int RftCommand(const Args& args) {
  Result<ParsedArgs> parsed = ParseArgs(RftSpecs(), args);
  if (!parsed.ok()) return RftUsage(parsed.status().message());
  const ParsedArgs& a = parsed.value();
  if (a.positional().empty()) return RftUsage("no input given");
  if (a.Get("out").empty()) return RftUsage("--out is required");
  RftOptions options;
  for (const std::string& input : a.positional()) options.inputs.emplace_back(input);
  options.strict = a.Has("strict");
  options.filters.keep_unfinished = a.Has("keep-unfinished");
  try {
    if (!a.Get("min-reward").empty()) options.filters.min_reward = std::stod(a.Get("min-reward"));
    options.filters.max_identical_calls = std::stoi(a.Get("max-identical-calls"));
    options.filters.loop_repeats = std::stoi(a.Get("loop-repeats"));
    options.filters.max_turns = std::stoi(a.Get("max-turns"));
    options.filters.max_tokens = std::stol(a.Get("max-tokens"));
  } catch (const std::exception&) {
    return RftUsage("a numeric flag is not a number");
  }
  if (options.filters.max_identical_calls < 2 || options.filters.loop_repeats < 2) {
    return RftUsage("--max-identical-calls and --loop-repeats must be at least 2");
  }
  fs::path out = a.Get("out");
  Result<RftReport> report = RunRft(options, out);
  if (!report.ok()) {
    std::cerr << "cuda-agent rft: " << report.status().message() << "\n";
    return report.status().code() == StatusCode::kInternal ? kExitInternal : kExitTaskError;
  }
  for (const std::string& problem : report->problems) {
    std::cerr << "cuda-agent rft: bad input, trajectory skipped: " << problem << "\n";
  }
  if (a.Has("parquet")) {
    Status converted =
        RunPythonStep({"cuda_agent_verl.parquet", "sft", (out / "sft.jsonl").string(),
                       (out / "sft.parquet").string()});
    if (!converted.ok()) {
      std::cerr << "cuda-agent rft: " << converted.message() << "\n";
      return kExitInternal;
    }
  }
  if (a.Has("json")) {
    std::cout << report->ToJson().dump(2) << "\n";
  } else {
    std::cout << "rft: " << report->trajectories << " trajectories, " << report->kept << " kept";
    for (const auto& [name, count] : report->removed) {
      if (count > 0) std::cout << ", " << name << " " << count;
    }
    // Every file written, one a line.
    std::cout << "\n  " << (out / "sft.jsonl").string() << "\n  " << (out / "report.json").string()
              << "\n";
    if (a.Has("parquet")) std::cout << "  " << (out / "sft.parquet").string() << "\n";
  }
  return kExitVerdict;
}

}  // namespace cuda_agent
