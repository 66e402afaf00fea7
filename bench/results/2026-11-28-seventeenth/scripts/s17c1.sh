#!/usr/bin/env bash
# Session 17, call 1 (four GPUs): host_line.py — each profile-job step behind a barrier, 1 process,
# 16 on four GPUs, 16 on one; the driver's queues and one queue.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
PY=/opt/torch/.venv/bin/python3
nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv > "$OUT0/env.txt" 2>&1
nproc >> "$OUT0/env.txt"
timeout 500 $PY bench/host_line.py --layouts 1 4,4,4,4 16 --variants - CUDA_DEVICE_MAX_CONNECTIONS=1 \
  --repeats 2 --json "$OUT0/host_line.json" 2>&1 | tail -40
