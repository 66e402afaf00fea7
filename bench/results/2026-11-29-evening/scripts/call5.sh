#!/usr/bin/env bash
# GPU call 5: the issue's budget as "before and after" with the new defaults: before = no sampled
# checks and no gathering (the harness before issue 46's checks), after = the defaults (fingerprinted
# sets, --sampled-min 30, --lease-gather 4,1). Throughput at 8 concurrent, arms alternating, three
# runs after two warm-up passes.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; rm -rf "$OUT0/r"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="before=CUDA_AGENT_SAMPLED_CHECKS=0,CUDA_AGENT_LEASE_GATHER=off after=" \
  THROUGHPUT_RUNS=3 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=380 THROUGHPUT_WARMUP=2
OUT="$OUT0/r" timeout 390 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^==|^warmup" | cut -c1-330
rm -f "$OUT0"/r/warmup_*.jsonl "$OUT0"/r/baselines_store.jsonl
echo "== end $(date -u +%T)"
