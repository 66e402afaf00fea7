// precision.h — the precision policies (HACKS B6, B11): how outputs are compared and which
// floating-point backend flags each process runs with. Chosen per judgement, recorded in every
// JudgeResult (`policy`). docs/precision.md explains the numbers.
//
//   paper      as published: atol = rtol = 1e-2 for every dtype, torch's default flags, nvcc
//              --use_fast_math. Exists to reproduce published numbers; every report labels it.
//   strict     (default) IEEE builds (no --use_fast_math); TF32 off in every process; tolerance per
//              dtype scaled to the output's RMS plus a relative-norm bound; fp32 tasks whose
//              candidate uses reduced-precision tensor-core instructions (SASS) or cuBLAS/cuDNN
//              TF32/half kernels are rejected.
//   tf32-fair  like strict for the reference and the candidate, but the baselines run with TF32 on,
//              and fp32 outputs get a tolerance that TF32 meets (the candidate may use TF32 too).
//   kernelbench  KernelBench's rules (issue 47): torch's eager operators may do part of the work
//              in ModelNew (hybrid solutions), KernelBench's fixed tolerance (allclose, atol = rtol
//              = 1e-4 for fp32, 1e-2 for fp16/bf16); no compilers, backend switches or fallbacks,
//              and every timed call must still run one of the candidate's own kernels. TF32 off,
//              reduced precision refused in fp32 tasks and IEEE builds as under strict; every
//              run-time defence kept. docs/policies.md.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/json.h"
#include "common/status.h"

namespace cuda_agent {

struct DtypeLimits {
  double atol = 0;  // absolute; a factor of the expected RMS when the policy is scaled
  double rtol = 0;
  std::optional<double> rnorm;  // bound on ||actual - expected|| / ||expected||
};

// BackendFlags are set in a harness process before any task or candidate code runs. Unpinned: the
// process keeps torch's defaults (the published harness).
struct BackendFlags {
  bool pinned = false;
  bool allow_tf32 = false;  // torch.backends.cuda.matmul and cudnn
  std::string float32_matmul_precision = "highest";
  Json ToJson() const;  // null when unpinned
};

// PolicyRules: what the policy lets the candidate's code do, beyond precision. It travels in the
// static, candidate and profile jobs' specs as "policy_rules" (ToJson); the C++ scan, the Python
// rules, the run-time op guard and the kernel audit read it.
struct PolicyRules {
  // torch's eager operators may compute part of the result (in model_new.py and through ATen in
  // the extension's C++): the torch-compute rules and the op guard's compute refusal are off,
  // the kernelbench rules (no compilers, backend switches, fallbacks; an own kernel in every
  // call) are on.
  bool torch_compute = false;
  // The reference weights may load into ModelNew by position where their names differ: the
  // unmatched state_dict entries of both, paired in registration order, of the same count, shapes
  // and dtypes (KernelBench builds both models under one seed and moves no weights).
  bool weights_by_position = false;
  Json ToJson() const;
};

struct PrecisionPolicy {
  std::string name = "strict";
  bool scaled = true;                         // atol relative to the output's RMS
  std::map<std::string, DtypeLimits> limits;  // by dtype name; "default" always present
  BackendFlags reference, candidate, baselines;
  bool reject_reduced_precision_in_fp32 = true;  // tensor-core SASS, TF32/half library kernels
  bool fast_math = false;                        // build with nvcc --use_fast_math (paper only)
  PolicyRules rules;

  // Tolerance is the compare job's spec ({"mode", "limits"}).
  Json Tolerance() const;
  // ToJson is what the JudgeResult records.
  Json ToJson() const;
};

// kPolicyNames lists every policy, for messages: "paper, strict, tf32-fair, kernelbench".
inline constexpr const char* kPolicyNames = "paper, strict, tf32-fair, kernelbench";

// MakePrecisionPolicy returns the named policy: paper, strict, tf32-fair or kernelbench.
Result<PrecisionPolicy> MakePrecisionPolicy(const std::string& name);

}  // namespace cuda_agent
