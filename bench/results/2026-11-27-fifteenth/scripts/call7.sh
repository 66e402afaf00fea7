#!/usr/bin/env bash
# Session 15, call 7 (one GPU, after the fix of the exit wait): workers on the one GPU with kept reference jobs on, off, on
# (relu_scale's cuda_correct copies, 4 consumers, 8 in flight, 16 measured); every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
for arm in kept off kept2; do
  mkdir -p "/tmp/c7/$arm"
  if [ "$arm" != off ]; then unset CUDA_AGENT_KEEP_REFERENCE; else export CUDA_AGENT_KEEP_REFERENCE=0; fi
  echo "== $arm $(date -u +%T)"
  OUT="/tmp/c7/$arm" DISTGPU_ORDER="0" DISTGPU_PER_GPU=16 timeout 100 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
done
(cd /tmp/c7 && tar czf "$OUT0/call7.tgz" .)
