#!/usr/bin/env bash
# GPU call 4 (the warm machine of call 3): the step with --lease-gather 4,1 against off, one round
# (14 cases one at a time: a timing alone on the device is granted at once, so no change is expected).
# Run from the repository root (the device tool's working directory).
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent \
  CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
mkdir -p "$OUT/r"
CUDA_AGENT_LEASE_GATHER=4,1 STEP_AB_WARMUP=0 STEP_AB_ROUNDS=1 OTHER_ENV=CUDA_AGENT_LEASE_GATHER=off OUT="$OUT/r" \
  timeout 280 bash bench/gpu_session.sh step-ab 2>&1 | tail -3
