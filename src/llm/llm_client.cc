// llm_client.cc — MakeLlmClient: the spec string picks the provider.
#include "llm/llm_client.h"

#include "llm/anthropic_client.h"
#include "llm/openai_client.h"
#include "llm/replay_client.h"

namespace cuda_agent {
namespace {

constexpr const char* kSpecExamples =
    "e.g. openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B, anthropic:claude-sonnet-4-5 or "
    "replay:script.jsonl";

Status BadSpec(const std::string& spec, const std::string& why) {
  return InvalidArgument("bad model spec '" + spec + "': " + why + " (" + kSpecExamples + ")");
}

}  // namespace

Result<std::unique_ptr<LlmClient>> MakeLlmClient(const std::string& spec,
                                                 const LlmOptions& options) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos) return BadSpec(spec, "no provider prefix");
  std::string provider = spec.substr(0, colon);
  std::string rest = spec.substr(colon + 1);
  if (provider == "openai") {
    size_t hash = rest.find('#');
    if (hash == std::string::npos) return BadSpec(spec, "openai needs <base-url>#<model>");
    std::string base_url = rest.substr(0, hash);
    std::string model = rest.substr(hash + 1);
    if (base_url.rfind("http://", 0) != 0 && base_url.rfind("https://", 0) != 0) {
      return BadSpec(spec, "the base URL must start with http:// or https://");
    }
    if (base_url.size() <=
        std::string(base_url.rfind("https://", 0) == 0 ? "https://" : "http://").size()) {
      return BadSpec(spec, "the base URL names no host");
    }
    if (model.empty()) return BadSpec(spec, "the model name after '#' is empty");
    return MakeOpenAiClient(base_url, model, options);
  }
  if (provider == "anthropic") {
    if (rest.empty()) return BadSpec(spec, "the model name is empty");
    return MakeAnthropicClient(rest, options);
  }
  if (provider == "replay") {
    if (rest.empty()) return BadSpec(spec, "the script file is empty");
    return MakeReplayClient(rest);
  }
  return BadSpec(spec, "unknown provider '" + provider + "' (openai, anthropic or replay)");
}

}  // namespace cuda_agent
