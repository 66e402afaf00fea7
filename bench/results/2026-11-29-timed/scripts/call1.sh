#!/usr/bin/env bash
# Session 2026-11-29 (twenty-third), GPU call 1 (one H200; dist/ and .gpu/ carried): the timed calls'
# fingerprints (issue 46) — P(accept) of three flaky candidates with the new defaults (two on relu_scale,
# one on a 1024×8192×8192 GEMM task), then their cost: throughput at 8 concurrent with the checks on
# and off (arms alternating), then the step of the 14 cases on and off.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
BIN=$CUDA_AGENT_BIN
for f in bench/results/baselines/*.jsonl; do
  [ -f "$f" ] && "$BIN" baselines import "$f" --baseline-store "$CUDA_AGENT_CACHE_DIR/store.sqlite" >/dev/null
done
echo "== flaky $(date -u +%T)"
python3 bench/flaky/gemm_skip.py /tmp/flaky --one-in 32 >/dev/null
timeout 170 python3 bench/flaky/flaky_accept.py --binary $BIN --runs 20 --jobs 4 --out "$OUT0/r/flaky_on.json" \
  examples/relu_scale/model.py:tests/hacks/b14_flaky_skip_cu examples/relu_scale/model.py:bench/flaky/candidates/skip_1in32 \
  .gpu/kernelbench_all/level2/76_Gemm_Add_ReLU.py:/tmp/flaky/gemm_skip_1in32 > /dev/null 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['candidates']
for c,v in d.items(): print(c.split('/')[-1], v['accepted'], '/', v['judged'], v['refusals'], v['fingerprinted_sets'], v['median_seconds'])" "$OUT0/r/flaky_on.json"
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="on= off=CUDA_AGENT_SAMPLED_CHECKS=0" THROUGHPUT_RUNS=2 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=250
OUT="$OUT0/r" timeout 260 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^warmup|^==" | cut -c1-200
echo "== step-ab $(date -u +%T)"
STEP_AB_WARMUP=0 STEP_AB_ROUNDS=1 OTHER_ENV=CUDA_AGENT_SAMPLED_CHECKS=0 OUT="$OUT0/r" \
  timeout $((580 - SECONDS)) bash bench/gpu_session.sh step-ab 2>&1 | tail -3
tar -C "$OUT0" -czf "$OUT0/call1.tgz" r && echo "== end $(date -u +%T)"
