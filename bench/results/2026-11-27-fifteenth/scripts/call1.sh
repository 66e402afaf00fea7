#!/usr/bin/env bash
# Session 15, call 1 (four GPUs of one host): issue 20's rows with kept reference jobs off, then on:
# workers on GPUs 0-3, then on GPU 0 alone (relu_scale's cuda_correct copies, 4 consumers per GPU,
# 8 per GPU in flight). Same binary; CUDA_AGENT_KEEP_REFERENCE=0 switches kept references off.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi -L > "$OUT0/gpus.txt"
for arm in off kept; do
  mkdir -p "$OUT0/$arm"
  if [ "$arm" = off ]; then export CUDA_AGENT_KEEP_REFERENCE=0; else unset CUDA_AGENT_KEEP_REFERENCE; fi
  echo "== $arm $(date -u +%T)"
  OUT="$OUT0/$arm" DISTGPU_ORDER="0,1,2,3 0" DISTGPU_PER_GPU=16 timeout 285 bash bench/gpu_session.sh dist-gpu 2>&1 | grep -v "^ " | tail -6
  ls /tmp/distgpu-cache/kept 2>/dev/null | wc -l
done
nvidia-smi --query-gpu=index,memory.used --format=csv > "$OUT0/gpu_memory_after.txt"
