// replay_client.h — `replay:<file>`: an LlmClient that plays a recorded script instead of asking a
// model (tests, demos, the scripted episodes of docs/agent.md). The script is JSONL, one assistant
// turn per line: {"content": "...", "tool_calls": [{"name": "Bash", "arguments": {...}}]}
// ("arguments" may also be a string, sent as is, to script malformed calls). When the script runs
// out, Chat answers kNotFound ("replay script exhausted after N turns").
#pragma once

#include <memory>
#include <string>

#include "llm/llm_client.h"

namespace cuda_agent {

// MakeReplayClient reads the whole script up front; kInvalidArgument names the bad line.
Result<std::unique_ptr<LlmClient>> MakeReplayClient(const std::string& path);

}  // namespace cuda_agent
