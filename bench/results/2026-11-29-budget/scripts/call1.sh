#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fifth), GPU call 1 (a fresh machine; dist/ and .gpu/ carried): what the
# sampled checks cost with the final harness (fingerprints in few kernels, the cheaper F block) —
# throughput at 8 concurrent, checks on and off alternating, three pairs after two warm-up passes (the
# second re-measures the baselines the first judged against the stored seeds), each judgement's jobs
# and phases kept; then the step on and off with the time left.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT0/r/env.txt"
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> "$OUT0/r/env.txt"
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="on= off=CUDA_AGENT_SAMPLED_CHECKS=0" THROUGHPUT_RUNS=3 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=440 THROUGHPUT_WARMUP=2
OUT="$OUT0/r" timeout 450 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^warmup|^==" | cut -c1-200
echo "== step-ab $(date -u +%T)"
STEP_AB_WARMUP=0 STEP_AB_ROUNDS=2 OTHER_ENV=CUDA_AGENT_SAMPLED_CHECKS=0 OUT="$OUT0/r" \
  timeout $((585 - SECONDS)) bash bench/gpu_session.sh step-ab 2>&1 | tail -5
tar -C "$OUT0" -czf "$OUT0/call1.tgz" r && echo "== end $(date -u +%T)"
