#!/usr/bin/env bash
# Session 16, call 4 (one GPU): throughput at 8 concurrent over the 14 cases of bench/judge_latency.py
# (its warm-up first), arms one (the default) and off (CUDA_AGENT_ONE_CANDIDATE_PROCESS=0) in turn,
# THROUGHPUT_RUNS runs; every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c4; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi -L
OUT=$R THROUGHPUT_TIMEOUT=500 THROUGHPUT_RUNS=2 THROUGHPUT_JOBS=24 \
  THROUGHPUT_ARMS="one= off=CUDA_AGENT_ONE_CANDIDATE_PROCESS=0" bash bench/gpu_session.sh throughput 2>&1 | tail -12
(cd $R && tar czf "$OUT0/call4.tgz" .)
