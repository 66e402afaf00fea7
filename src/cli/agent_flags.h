// agent_flags.h — the agent's flags (turns, context, sampling, the model client's retries), read
// the same way by `solve` and by `bench --solver agent:MODEL` (docs/agent.md, docs/cli.md).
//
//   std::vector<OptionSpec> specs = {{"model", true, "...", ""}};
//   specs.insert(specs.end(), AgentSpecs().begin(), AgentSpecs().end());
//   Result<ParsedArgs> a = ParseArgs(specs, args);
//   EpisodeSpec episode;
//   Status s = AgentOptionsFromArgs(a.value(), &episode);
#pragma once

#include <vector>

#include "agent/episode.h"
#include "cli/options.h"

namespace cuda_agent {

// AgentSpecs: --max-turns, --context-tokens, --max-output-tokens, --temperature, --llm-timeout,
// --llm-connect-timeout, --llm-stall-timeout, --llm-max-attempts, --llm-backoff,
// --llm-backoff-max, --no-stream.
const std::vector<OptionSpec>& AgentSpecs();

// AgentOptionsFromArgs sets the episode's limits, temperature and LLM options from parsed agent
// flags; an error names the bad flag.
Status AgentOptionsFromArgs(const ParsedArgs& args, EpisodeSpec* episode);

}  // namespace cuda_agent
