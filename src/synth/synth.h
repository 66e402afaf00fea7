// synth.h — `cuda-agent synth`: fresh fused-op training tasks (docs/synth.md). The op catalog, the
// random composer and the filters run in one sandboxed job (`synth`,
// python/cuda_agent_synth/job.py, run by RunHarnessJob outside the judging harness) that writes
// DIR/decisions.jsonl as it goes; this side resolves the decontamination suite, builds the spec,
// restarts the job when it dies on a candidate (the job then records that candidate as dropped at
// stage "crash") and returns DIR/summary.json. With `composer` = "llm:<model spec>" a model writes
// each program instead (synth/llm_composer.h) and the job filters what it wrote.
//
//   SynthOptions opt;
//   opt.out_dir = "data/synth"; opt.count = 100; opt.device = Device::kCpu;
//   Result<Json> summary = RunSynth(env, opt);
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/json.h"
#include "common/status.h"
#include "harness/client.h"
#include "harness/toolchain.h"
#include "sandbox/sandbox.h"

namespace cuda_agent {

struct SynthOptions {
  fs::path out_dir;
  int count = 100;
  int max_ops = 5;
  int64_t seed = 0;
  Device device = Device::kCuda;
  std::string composer = "random";  // random | llm:<model spec> (llm/llm_client.h)
  std::map<int, double> mix;        // op count -> weight (kTransformersMixKey: single transformers
                                    // ops); empty: the published mix
  fs::path decontaminate;           // suite whose tasks no kept task may resemble; empty: none
  fs::path candidates;              // JSONL of {"code", "ops"} filtered instead of composing
  double min_ms = -1, max_ms = -1;  // eager runtime window; < 0: the device's default
  std::string compile_check = "auto";  // on | off | auto (on for cuda)
  double contamination_threshold = 0.9;
  double dedup_threshold = 0.95;
  int max_candidates = 0;  // 0: 20 × count
  double candidate_timeout_s = 300;
  double time_limit_s = 0;  // stop after this long (resumable); 0: none
  int workers = 0;          // candidates filtered at once; 0: 1 on cpu, min(CPUs - 2, 12) on cuda
  std::string policy = "strict";     // the judge's precision policy for every comparison
  fs::path cache_dir;                // toolchain cache and work folder; empty: DefaultCacheDir()
  const Sandbox* sandbox = nullptr;  // null: Sandbox::Default()
};

// The mix key of single transformers ops ("t" in --mix): as published, a transformers op is a task
// of its own, never composed with others.
constexpr int kTransformersMixKey = 0;

// PaperMix is the published mix of Ops-6K: torch programs of 1..5 ops 3.4, 83.8, 7.6, 2.8, 1.2 %
// and single transformers ops 1.2 %.
std::map<int, double> PaperMix();

// ParseMix reads "1:3.4,2:83.8,...,t:1.2" (counts 1..5 or t, non-negative weights, at least one
// positive).
Result<std::map<int, double>> ParseMix(const std::string& text);

// RuntimeWindow returns the default eager window in ms: [1, 100] on cuda, [0.1, 100] on the CPU.
std::pair<double, double> RuntimeWindow(Device device);

// RunSynth composes and filters candidates until `count` are kept or `max_candidates` were tried
// and returns the summary (summary.json). Errors: kInvalidArgument for unusable options or an out
// folder holding another configuration; otherwise the job's failure.
Result<Json> RunSynth(const HarnessEnv& env, const SynthOptions& options);

}  // namespace cuda_agent
