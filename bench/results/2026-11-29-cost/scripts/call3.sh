#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fourth), GPU call 3 (a fresh machine; dist/ and .gpu/ carried): after the leaner
# chunk sums (the reference's: one product, two segmented reductions, the |w| sums kept with the weights;
# the candidate's: one product and one sum per slice) and the cheaper F block — the set's cost again, then
# throughput at 8 concurrent with the checks on and off (arms alternating), then the step on and off.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
echo "== set cost $(date -u +%T)"
python3 bench/flaky/set_cost.py examples/relu_scale/model.py .gpu/kernelbench_all/level2/76_Gemm_Add_ReLU.py \
  .gpu/kernelbench_all/level2/40_Matmul_Scaling_ResidualAdd.py .gpu/kernelbench_all/level1/88_MinGPTNewGelu.py \
  --sets 64 --repeats 3 --out "$OUT0/r/set_cost.json" 2>&1 | cut -c1-400
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="on= off=CUDA_AGENT_SAMPLED_CHECKS=0" THROUGHPUT_RUNS=2 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=330 THROUGHPUT_WARMUP=1
OUT="$OUT0/r" timeout 340 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^warmup|^==" | cut -c1-200
echo "== step-ab $(date -u +%T)"
STEP_AB_WARMUP=0 STEP_AB_ROUNDS=1 OTHER_ENV=CUDA_AGENT_SAMPLED_CHECKS=0 OUT="$OUT0/r" \
  timeout $((585 - SECONDS)) bash bench/gpu_session.sh step-ab 2>&1 | tail -3
tar -C "$OUT0" -czf "$OUT0/call3.tgz" r && echo "== end $(date -u +%T)"
