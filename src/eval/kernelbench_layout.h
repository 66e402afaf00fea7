// kernelbench_layout.h — the folders KernelBench's own scripts and its public leaderboard write,
// read into (level, problem, sample) → file. Nothing is run or parsed beyond names and the
// leaderboard's JSON; every file that cannot be mapped is kept with the reason (never silently
// dropped).
//
//   run       scripts/generate_samples.py: <run>/level_{L}_problem_{P}_sample_{S}_kernel.py (P is
//             the problem's number, the prefix of its file name: 1-based), with its companions
//             level_..._prompt.txt, generation_config.yaml, eval_results.json,
//             pass_at_k_results.json
//   single    scripts/generate_and_eval_single_sample.py:
//   <logdir>/generated_kernel_level_{L}_problem_{P}.py
//             (sample 0), with prompt_level_{L}_problem_{P}.txt
//   leaderboard  anneouyang/KernelBenchLeaderboard: docs/assets/raw_data.json ([{level, problem_id
//             (0-based: 18 of level 1 is 19_ReLU), display_name, file}]) and
//             docs/assets/solutions/<file>.py; DIR may be the repository, docs/assets or
//             solutions/. A sample is a model (display_name).
//
//   Result<KernelBenchLayout> l = ScanKernelBenchDir("runs/my_run");
#pragma once

#include <string>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

struct KernelBenchFile {
  fs::path path;
  int level = 0;
  int problem = 0;     // KernelBench's problem number (the task file's prefix)
  std::string sample;  // "0", "3", or a leaderboard model
  // The problem as the source saw it, where it ships one (the leaderboard's
  // docs/assets/problems/l{L}_p{P}.py); empty otherwise.
  fs::path problem_source;
};

struct UnusedFile {
  fs::path path;
  std::string reason;
};

struct KernelBenchLayout {
  std::string layout;                  // "run", "single", "leaderboard", or "run+single"
  std::vector<KernelBenchFile> files;  // sorted by level, problem, then sample (ids numerically)
  std::vector<UnusedFile> unused;      // files in the folder that name no (level, problem, sample)
  int companions = 0;                  // KernelBench's own files beside them (prompts, eval JSON)
};

// ScanKernelBenchDir reads `dir`'s names (and the leaderboard's raw_data.json). NotFound when `dir`
// is not a folder; InvalidArgument when raw_data.json cannot be read. A folder without any
// solution file is a layout with no files (the caller explains).
Result<KernelBenchLayout> ScanKernelBenchDir(const fs::path& dir);

// KernelBenchProblemOf: the (level, problem number) of a KernelBench task ("level1/19_ReLU" at
// level 1 → {1, 19}); {0, 0} when the task has no level or its name no number prefix.
std::pair<int, int> KernelBenchProblemOf(int level, const std::string& task_name);

// ModelClassText is a program's `class Model` block without docstrings, comments and whitespace:
// two programs whose texts are equal define the same Model (the inputs may differ: KernelBench
// changed every problem's sizes since Dec 2024, and replaced 11 of the leaderboard's problems).
// Empty when the source has no `class Model`.
std::string ModelClassText(const std::string& source);

// SampleLess orders sample labels: numbers numerically, then names alphabetically.
bool SampleLess(const std::string& a, const std::string& b);

}  // namespace cuda_agent
