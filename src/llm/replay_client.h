// replay_client.h — `replay:<file>`: an LlmClient that plays a recorded script instead of asking a
// model (tests, demos, the scripted episodes of docs/agent.md). The script is JSONL, one assistant
// turn per line: {"content": "...", "tool_calls": [{"name": "Bash", "arguments": {...}}]}
// ("arguments" may also be a string, sent as is, to script malformed calls; "id" is optional).
// A line {"error": "message"} makes that turn's Chat fail (kInternal), as a provider whose retries
// are spent would. Blank lines and lines starting with "//" are skipped. When the script runs out,
// Chat answers kNotFound ("replay script exhausted after N turns").
#pragma once

#include <memory>
#include <string>

#include "llm/llm_client.h"

namespace cuda_agent {

// MakeReplayClient reads the whole script up front; kInvalidArgument names the bad line.
Result<std::unique_ptr<LlmClient>> MakeReplayClient(const std::string& path);

// ParseReplayScript parses script text (`what` names it in errors) into the replies it will play;
// a reply with a non-empty `stop_reason` of "error" carries the scripted error in message.content.
Result<std::vector<ChatResponse>> ParseReplayScript(const std::string& text,
                                                    const std::string& what);

}  // namespace cuda_agent
