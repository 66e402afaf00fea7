// judge_options.h — every setting of a judgement, and the one table that declares each of them
// once: its flag, its key in a job's JSON, its default, its help line and whether it travels with
// a job to another host. The command line (cli/commands.cc JudgeSpecs), the environment mirrors
// (CUDA_AGENT_<FLAG>, read by the command line's parser only), the judge gateway's flags
// (judge_args.h), a job's JSON (queue/job.h) and docs/cli.md all come from this table; no stage
// reads the process environment (issue 49).
//
//   JudgeOptions opt;
//   Status s = SetJudgeOption(opt, "sampled-checks", "64");   // validated as the flag would be
//   std::string text = JudgeOptionText(opt, "timed-queues");  // "2"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/device.h"
#include "common/fs.h"
#include "common/status.h"
#include "gpu/lease.h"
#include "judge/judge_result.h"
#include "judge/precision.h"
#include "sandbox/sandbox.h"

namespace cuda_agent {

// Standby profile jobs (harness/standby.h): on for CUDA by default, where a profile job's start
// costs seconds, off on the CPU.
enum class StandbyMode { kAuto, kOn, kOff };

struct JudgeOptions {
  Device device = Device::kCuda;
  Stage until = Stage::kDone;  // kBuild, kVerify or kProfile/kDone
  bool eager_baseline = true;
  bool compile_baseline = true;
  int checks = 5;  // verification input sets
  // Fingerprinted input sets beyond the full checks (HACKS B14, flaky kernels): each output
  // compared by weighted chunk sums (python/cuda_agent_harness/sampled_checks.py). The timed
  // calls' sets come first (the candidate computes nothing more for them), then fresh sampled
  // sets: at most sampled_checks in all, at least sampled_min, more while the reference's own
  // fingerprinted forwards take under sampled_checks_seconds. 0: none.
  int sampled_checks = 128;
  int sampled_min = 30;
  double sampled_checks_seconds = 0.1;
  int warmup = 5;
  int iters = 20;
  double candidate_timeout_s = 180;  // each job that runs candidate code
  double trusted_timeout_s = 900;    // reference and baselines (torch.compile can be slow)
  double build_timeout_s = 600;      // each compiler invocation
  int build_jobs = 0;
  fs::path cache_dir;       // objects, toolchain, work folders
  bool keep_work = false;   // keep the job folder (its path is in the result)
  fs::path export_library;  // when set, a successful build's cuda_extension.so is copied here
  PrecisionPolicy policy = MakePrecisionPolicy("strict").value();  // judge/precision.h
  std::string reward_schedule = "paper";
  // CUDA: after verification, check 1 runs once more under compute-sanitizer with this tool
  // (memcheck, racecheck, initcheck, synccheck); any error it reports fails the candidate (HACKS
  // B12).
  std::string sanitizer;
  // Eager/compile timings kept per task × device × torch × policy × warmup/iters (store/); empty:
  // <cache_dir>/store.sqlite. Stored baselines are used unless older than baseline_max_age_hours or
  // the device drifted: its calibration (timing.calibrate, taken in the candidate's profile) moved
  // by more than baseline_drift (relative) from the one stored with them.
  fs::path baseline_store;
  bool use_baseline_store = true;
  double baseline_drift = 0.10;
  double baseline_max_age_hours = 24;  // 0: no age limit
  // The hardware queues (CUDA_DEVICE_MAX_CONNECTIONS) of a timed job's CUDA context: 0 is the
  // driver's default (eight); two make the context about half as costly to create and keep a queue
  // for each of two streams a candidate runs side by side (docs/decisions/host-scaling.md).
  int timed_queues = 2;
  StandbyMode standby = StandbyMode::kAuto;
  // Kept references (harness/kept_jobs.h): a candidate's served reference process waits in the
  // fork server for the next judgement of its task, up to keep_reference_idle_s, at most
  // keep_reference_max of them per device (each holds ≈ 0.6 GB of its GPU, 1–2 GB of host memory).
  bool keep_reference = true;
  double keep_reference_idle_s = 120;
  int keep_reference_max = 8;
  // The clang++ that compiles torch-style binding files (builder/binding_compiler.h): "auto" (the
  // newest on PATH), "off" (g++ only) or a path.
  std::string binding_clang = "auto";
  // How timings that find the device busy gather into batches (gpu/lease.h): 4 timings or 1 s
  // (why: docs/decisions/leases.md).
  LeaseGather lease_gather{4, 1.0};
  // Containment of every job that runs task or candidate code, and of the compilers.
  const Sandbox* sandbox = nullptr;  // null: Sandbox::Default()
  uint64_t job_memory_bytes = 0;     // cgroup memory limit per job; 0: 3/4 of the machine's memory
  uint64_t job_max_pids = 4096;      // processes and threads per job
  // Test only: skip the static rules (the C++/CUDA scan of kernels/ and model_new.py's AST rules;
  // the protected-file hashes and model_new.py's presence, syntax and ModelNew class are still
  // checked), so that the hack corpus shows what the run-time checks catch on their own
  // (docs/hacks.md, "Defence in depth"). Only `cuda-agent judge --test-skip-static` sets it, and
  // only with CUDA_AGENT_TESTING=1 in the environment; no option table, JSON form or
  // JudgeOptionArgs carries it, and Judge::Run refuses it without that variable. Such a
  // judgement has no reward (JudgeResult::static_skipped).
  bool test_skip_static = false;
};

// How an option is written in a job's JSON (and whether its flag takes a value).
enum class OptionKind {
  kInt,     // a JSON integer
  kNumber,  // a JSON number
  kText,    // a JSON string
  kOnOff,   // a JSON boolean; on the command line on|off (also 1|0, true|false)
  kSwitch,  // a flag without a value (never travels)
};

struct JudgeOptionField {
  const char* flag;  // without the dashes; its environment mirror is CUDA_AGENT_<FLAG>
  const char* key;   // in a job's JSON ("" when it never travels)
  OptionKind kind;
  const char* help;
  // Travelling options go with a job to the worker that judges it (queue/job.h); the others are the
  // judging host's own (its cache, its compilers, how many CPUs it builds with).
  bool travels() const { return *key != '\0'; }
};

// JudgeOptionTable lists every option in the order docs/cli.md gives them.
const std::vector<JudgeOptionField>& JudgeOptionTable();

// SetJudgeOption parses `text` for the option `flag` and sets it; an error names the flag and what
// it accepts. JudgeOptionText renders an option so that SetJudgeOption reads it back; the text of
// a default-constructed JudgeOptions is the option's default.
Status SetJudgeOption(JudgeOptions& options, const std::string& flag, const std::string& text);
std::string JudgeOptionText(const JudgeOptions& options, const std::string& flag);

// StandbyWanted: whether standby profile jobs are on for these options.
bool StandbyWanted(const JudgeOptions& options);

}  // namespace cuda_agent
