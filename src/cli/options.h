// options.h — one option table for every subcommand. Each flag `--some-flag` is also read from the
// environment variable CUDA_AGENT_SOME_FLAG when it is not on the command line.
//
//   static const std::vector<OptionSpec> kSpecs = {{"device", true, "cuda|cpu", "cuda"}};
//   Result<ParsedArgs> a = ParseArgs(kSpecs, argv_tail);
//   std::string device = a->Get("device");
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace cuda_agent {

struct OptionSpec {
  std::string name;         // without the leading dashes
  bool takes_value = true;  // false: a switch
  std::string help;
  std::string default_value;  // for switches: "" (off)
};

class ParsedArgs {
 public:
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend Result<ParsedArgs> ParseArgs(const std::vector<OptionSpec>&,
                                      const std::vector<std::string>&);
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> defaults_;
  std::vector<std::string> positional_;
};

// ParseArgs accepts "--name value", "--name=value" and switches; "--" ends the options.
Result<ParsedArgs> ParseArgs(const std::vector<OptionSpec>& specs,
                             const std::vector<std::string>& args);

// AsksForHelp: a --help or -h among the options, that is before a "--" (what follows "--" belongs
// to a command being run, as in `cuda-agent sandbox run -- echo --help`).
bool AsksForHelp(const std::vector<std::string>& args);

// EnvName returns CUDA_AGENT_<NAME> for a flag name.
std::string EnvName(const std::string& flag);

// FormatHelp renders the option table.
std::string FormatHelp(const std::vector<OptionSpec>& specs);

// ParseInt / ParseDouble with a message naming the flag.
Result<int> ParseIntFlag(const ParsedArgs& args, const std::string& name);
// ParseDoubleFlag accepts a positive number, or also 0 when `allow_zero` (a flag where 0 means
// "off").
Result<double> ParseDoubleFlag(const ParsedArgs& args, const std::string& name,
                               bool allow_zero = false);

}  // namespace cuda_agent
