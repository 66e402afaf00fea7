// llm_composer.h — `cuda-agent synth --composer llm:<model spec>` (docs/synth.md, "LLM composer"):
// a language model writes each fused program. For candidate k the op count is drawn from the mix
// (restricted to --max-ops) and that many distinct ops from the catalog's composable ops, by a
// generator seeded with (--seed, k); the model is asked, in one user message without tools, for a
// KernelBench-form program applying them in order. Its ```python block becomes row k of
// DIR/llm_candidates.jsonl ({"code", "ops", "name"}; an answer without one becomes
// {"compose_error", "ops", "name"}, which the job records as dropped at stage "compose"), and the
// harness `synth` job filters that file (candidates_path), skipping candidates already decided.
//
//   Result<Json> summary = RunLlmComposer(opt, out, spec, mix, max_candidates, run_job);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "synth/synth.h"

namespace cuda_agent {

// The catalog's usable ops (the rule of synth/catalog.py's `usable`: float32, finite, not the
// identity, no warning, not stochastic): the torch ops programs chain, and the transformers ops,
// each a task of its own ("transformers ops stay single", as published).
struct CatalogOps {
  std::vector<Json> torch;
  std::vector<Json> transformers;
};

// ComposableOps reads DIR/catalog.json.
Result<CatalogOps> ComposableOps(const fs::path& catalog_path);

// SampleOps draws candidate `index`'s category from `mix` (op counts <= max_ops, or
// kTransformersMixKey: one transformers op; a category without ops to draw from is skipped) and
// that many distinct ops, in order; the same (seed, index) always gives the same ops.
std::vector<Json> SampleOps(const CatalogOps& ops, const std::map<int, double>& mix, int max_ops,
                            int64_t seed, int64_t index);

// ComposerPrompt is the one user message asking for a program applying `ops` in order.
std::string ComposerPrompt(const std::vector<Json>& ops, Device device, double min_ms,
                           double max_ms);

// ExtractPython returns the first ```python (or ```py) fenced block of an answer; nullopt when
// none.
std::optional<std::string> ExtractPython(const std::string& answer);

// RunLlmComposer runs the loop above until --count are kept or max_candidates rows exist, and
// returns the last summary. `spec` is the job spec the random composer would get; `run_job` runs
// the synth job on a spec and returns its result (restarting it after crashes). An LLM error after
// its retries ends the run (kInternal) once the rows already written are filtered; a bad model spec
// is kInvalidArgument.
Result<Json> RunLlmComposer(const SynthOptions& opt, const fs::path& out, Json spec,
                            const std::map<int, double>& mix, int max_candidates,
                            const std::function<Result<Json>(const Json&)>& run_job);

}  // namespace cuda_agent
