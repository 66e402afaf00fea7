#!/usr/bin/env bash
# Session 17, call 2 (four GPUs): host_line.py with 2 and 4 hardware queues (16 processes on four
# GPUs), and stream_queues.py (two streams' concurrency with 1, 2, 4, 8 queues) on GPU 0.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
PY=/opt/torch/.venv/bin/python3
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT0/env.txt" 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 120 $PY bench/stream_queues.py --queues 1 2 4 8 --json "$OUT0/stream_queues.json" 2>&1 | tail -8
CUDA_VISIBLE_DEVICES=0 timeout 120 $PY bench/stream_queues.py --queues 1 2 8 --kernels 50 --spin-us 20 --json "$OUT0/stream_queues_short.json" 2>&1 | tail -8
timeout 400 $PY bench/host_line.py --layouts 4,4,4,4 --variants CUDA_DEVICE_MAX_CONNECTIONS=2 CUDA_DEVICE_MAX_CONNECTIONS=4 - \
  --repeats 2 --json "$OUT0/host_line.json" 2>&1 | tail -20
