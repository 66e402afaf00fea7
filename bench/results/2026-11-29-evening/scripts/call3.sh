#!/usr/bin/env bash
# GPU call 3: --lease-gather 4,1 against none, with the default checks (call 1 found +12.6%/+0.1%
# without checks and +5.5%/+0.5% at --sampled-min 75: within the spread). Throughput at 8
# concurrent, arms alternating, three runs after two warm-up passes.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; rm -rf "$OUT0/r"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="m30= m30g=CUDA_AGENT_LEASE_GATHER=4,1" \
  THROUGHPUT_RUNS=3 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=330 THROUGHPUT_WARMUP=2
OUT="$OUT0/r" timeout 340 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^==|^warmup" | cut -c1-260
echo "== end $(date -u +%T)"
