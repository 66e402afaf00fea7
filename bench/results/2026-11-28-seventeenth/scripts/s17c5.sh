#!/usr/bin/env bash
# Session 17, call 5 (one H100): bench throughput at 8 concurrent with the 14 cases, the timed jobs at
# 2 hardware queues (default) and 8 (CUDA_AGENT_TIMED_QUEUES=0), arms alternating; every judgement
# re-times eager, so the records also compare the baselines' times under both.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c5; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
nvidia-smi -L > $R/env.txt
OUT=$R THROUGHPUT_TIMEOUT=430 THROUGHPUT_RUNS=2 THROUGHPUT_JOBS=24 THROUGHPUT_ARMS="q2= q8=CUDA_AGENT_TIMED_QUEUES=0" \
  bash bench/gpu_session.sh throughput 2>&1 | grep "^throughput\|==" | tail -12
(cd $R && tar czf "$OUT0/call5.tgz" .)
