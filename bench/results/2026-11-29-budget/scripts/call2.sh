#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fifth), GPU call 2 (a fresh machine; dist/ and .gpu/ carried): call 1 found
# the final harness's checks within the budget (throughput −1 to −2%, step +2%), so what raising
# --sampled-min from 30 to 75 costs — the fewest fingerprinted sets for which one input in 32 wrong is
# accepted ≤ 8% by the formula ((31/32)^(75+5)) — throughput at 8 concurrent, arms min 30, min 75 and
# off alternating, two runs after two warm-up passes; then P(accept) of the GEMM task's one-in-32
# flaky candidate at min 75 (20 judgements, 4 at a time); then the step at min 75 and off.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; rm -rf "$OUT0/r"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
BIN=$CUDA_AGENT_BIN
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT0/r/env.txt"
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="m30= m75=CUDA_AGENT_SAMPLED_MIN=75 off=CUDA_AGENT_SAMPLED_CHECKS=0" THROUGHPUT_RUNS=2 \
  THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=400 THROUGHPUT_WARMUP=2
OUT="$OUT0/r" timeout 410 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^==" | cut -c1-200
echo "== gemm 1-in-32, --sampled-min 75 $(date -u +%T)"
python3 bench/flaky/gemm_skip.py /tmp/flaky --one-in 32 >/dev/null
timeout 130 python3 bench/flaky/flaky_accept.py --binary $BIN --runs 20 --jobs 4 --out "$OUT0/r/flaky_gemm_min75.json" \
  .gpu/kernelbench_all/level2/76_Gemm_Add_ReLU.py:/tmp/flaky/gemm_skip_1in32 -- --sampled-min 75 > /dev/null 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['candidates']
for c,v in d.items(): print(c.split('/')[-1], v['accepted'], '/', v['judged'], v['refusals'], v['fingerprinted_sets'], v['median_seconds'])" "$OUT0/r/flaky_gemm_min75.json"
echo "== step-ab $(date -u +%T)"
CUDA_AGENT_SAMPLED_MIN=75 STEP_AB_WARMUP=0 STEP_AB_ROUNDS=1 OTHER_ENV=CUDA_AGENT_SAMPLED_CHECKS=0 OUT="$OUT0/r" \
  timeout $((585 - SECONDS)) bash bench/gpu_session.sh step-ab 2>&1 | tail -3
tar -C "$OUT0" -czf "$OUT0/call2.tgz" r && echo "== end $(date -u +%T)"
