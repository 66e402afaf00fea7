#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fourth), GPU call 4 (a fresh machine; dist/ and .gpu/ carried): the final harness
# (fingerprints in few kernels: one product and one segmented sum per slice of 16 M elements, the
# reference's |w x| sums and slice norms beside them, NaN read from the sums on the host) — the set's cost
# again; the flaky, sampled-check and stream cases of the corpus with the GPU harness tests; then the
# honest real-world solutions through the whole judge (strict), cut at a deadline.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
echo "== set cost $(date -u +%T)"
python3 bench/flaky/set_cost.py examples/relu_scale/model.py .gpu/kernelbench_all/level2/76_Gemm_Add_ReLU.py \
  .gpu/kernelbench_all/level2/40_Matmul_Scaling_ResidualAdd.py .gpu/kernelbench_all/level1/88_MinGPTNewGelu.py \
  --sets 64 --repeats 3 --out "$OUT0/r/set_cost.json" 2>&1 | cut -c1-330
echo "== corpus subset $(date -u +%T)"
CORPUS_FILTER="b14 or sampled or own_stream or a1_ or a2_ or b12" CORPUS_TIMEOUT=200 OUT="$OUT0/r" \
  timeout 300 bash bench/gpu_session.sh corpus 2>&1 | grep -E "passed|failed|FAILED|ERROR" | tail -8
echo "== kb-realworld $(date -u +%T)"
KB_DEADLINE=$((520 - SECONDS)) KB_TIMEOUT=$((560 - SECONDS)) OUT="$OUT0/r" bash bench/gpu_session.sh kb-realworld 2>&1 | tail -8
tar -C "$OUT0" -czf "$OUT0/call4.tgz" r && echo "== end $(date -u +%T)"
