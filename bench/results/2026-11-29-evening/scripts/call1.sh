#!/usr/bin/env bash
# GPU call 1 (session 2026-11-29 evening): does gathering timings (--lease-gather K,T) win back what
# the sampled checks' longer shared holds cost? Throughput at 8 concurrent, arms alternating:
# off (no sampled checks, no gather: the issue's "before"), m75 (--sampled-min 75), m75g (m75 and
# --lease-gather 4,1), offg (no checks, gather 4,1), two runs after two warm-up passes.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; rm -rf "$OUT0/r"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
echo "== throughput $(date -u +%T)"
export THROUGHPUT_ARMS="off=CUDA_AGENT_SAMPLED_CHECKS=0 m75=CUDA_AGENT_SAMPLED_MIN=75 m75g=CUDA_AGENT_SAMPLED_MIN=75,CUDA_AGENT_LEASE_GATHER=4,1 offg=CUDA_AGENT_SAMPLED_CHECKS=0,CUDA_AGENT_LEASE_GATHER=4,1" \
  THROUGHPUT_RUNS=2 THROUGHPUT_JOBS=24 THROUGHPUT_TIMEOUT=540 THROUGHPUT_WARMUP=2
OUT="$OUT0/r" timeout 550 bash bench/gpu_session.sh throughput 2>&1 | grep -E "^throughput|^==|^warmup" | cut -c1-200
echo "== end $(date -u +%T)"
