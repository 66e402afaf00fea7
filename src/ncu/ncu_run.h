// ncu_run.h — `cuda-agent profile --ncu`: hardware feedback on a candidate's own kernels. The
// candidate is built by the judge's own stages (snapshot, static checks, build, the extension's
// kernel list from builder/binary_inspector), then the harness's `ncu_target` job runs its forward
// under Nsight Compute in the sandbox — warm-up calls unprofiled, one call between
// cudaProfilerStart/Stop profiled (`ncu --profile-from-start off`), under the exclusive device
// lease (ncu locks the GPU's clocks) and a timeout — and ncu's raw CSV becomes an NcuReport
// (ncu/ncu_report.h). Only kernels whose function is in the candidate's extension are reported;
// torch's kernels in the same call are listed apart.
//
// Nothing here reaches a judgement: the report is its own output, ncu's times (locked clocks,
// replayed kernels) are never written to the baseline store or into a JudgeResult. The judge does
// not depend on this component (cmake/layers.cmake keeps it so).
//
//   NcuOptions opt;
//   opt.judge.device = Device::kCuda;
//   NcuReport r = ProfileWithNcu(env, task, candidate, folder, opt);
//   std::cout << NcuReportText(r);
#pragma once

#include <set>
#include <string>
#include <vector>

#include "harness/client.h"
#include "judge/judge.h"
#include "ncu/ncu_report.h"
#include "task/task.h"
#include "workspace/candidate.h"

namespace cuda_agent {

// The environment variable naming the ncu binary (it wins over PATH and the CUDA folders); the
// mirror of `profile --ncu-path`.
inline constexpr const char* kNcuPathEnv = "CUDA_AGENT_NCU_PATH";

struct NcuOptions {
  // Device, precision policy (the candidate's backend flags), cache folder, build timeout; the
  // candidate timeout bounds the whole ncu run.
  JudgeOptions judge;
  std::string ncu_path;   // empty: $CUDA_AGENT_NCU_PATH, PATH, NcuSearchHomes()/bin
  int warmup = 3;         // unprofiled forward calls before the profiled one
  int max_launches = 32;  // kernel launches profiled at most (each is replayed dozens of times)
  int seed = 1234;        // the weights' and inputs' seed (the report is reproducible)
  fs::path raw_csv_out;   // when set, ncu's raw CSV is copied there
};

// ProfileWithNcu never throws; every failure is an NcuReport whose status and message say what
// happened (ncu_report.h lists the statuses).
NcuReport ProfileWithNcu(const HarnessEnv& env, const Task& task, const Candidate& candidate,
                         const fs::path& folder, const NcuOptions& options);

// NcuTargetSpec: the `ncu_target` job's spec (docs/harness-protocol.md): the task, the candidate's
// snapshot and built extension, the seed and warm-up calls, and the judgement's precision policy —
// the candidate's backend flags and the policy's rules (`policy_rules`), so that ModelNew is loaded
// under the same rules as when it is judged.
Json NcuTargetSpec(const fs::path& task_file, const fs::path& candidate_dir,
                   const fs::path& extension_dir, const NcuOptions& options);

// FindNcu: `explicit_path` when given (it must be an executable file), else `ncu` on PATH, else
// <home>/bin/ncu for each of `cuda_homes`. NotFound names every place looked at.
Result<std::string> FindNcu(const std::string& explicit_path,
                            const std::vector<fs::path>& cuda_homes);

// NcuSearchHomes: the CUDA folders whose bin/ may hold ncu: $CUDA_HOME, $CUDA_PATH, the folder of
// nvcc on PATH, /usr/local/cuda.
std::vector<fs::path> NcuSearchHomes();

// NcuArgs: ncu's command line up to the profiled program: the sections and metrics the report
// reads, raw CSV in base units with mangled kernel names (matched against the extension's own),
// only what runs between cudaProfilerStart and cudaProfilerStop, at most `max_launches` launches,
// the output to `log_file`.
std::vector<std::string> NcuArgs(const std::string& ncu, const fs::path& log_file,
                                 int max_launches);

// NcuRun is what one ncu run left: the harness job under ncu and ncu's log (the CSV).
struct NcuRun {
  JobOutcome job;
  std::string log;
  double timeout_s = 0;
};

// InterpretNcuRun sets the report's status from one run: the launches (analysed against
// `own_keys`: mangled names and KernelKeys of the extension's kernels), or why there are none —
// counters not permitted (ERR_NVGPUCTRPERM, with the documented fix), the candidate failing,
// a timeout, ncu failing to replay a kernel, ncu's own error, no kernel of the candidate.
void InterpretNcuRun(const NcuRun& run, const std::set<std::string>& own_keys, NcuReport* report);

// The messages of the statuses that do not depend on a run.
std::string NcuNeedsGpuMessage(const std::string& device_detail);
std::string NcuMissingMessage(const std::string& looked_at);
std::string NcuNotPermittedMessage();

// NcuExitStatus: 0 a report, 1 the candidate could not be profiled (build, rules, crash, replay,
// no own kernel), 3 task error, 4 ncu unavailable here (no GPU, not installed, counters not
// permitted, ncu's own error) or internal failure.
int NcuExitStatus(const NcuReport& report);

}  // namespace cuda_agent
