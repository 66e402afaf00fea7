#!/usr/bin/env bash
# Session 15, call 5 (one GPU): workers on the one GPU with kept reference jobs off, on, off
# (relu_scale's cuda_correct copies, 4 consumers, 8 in flight, 24 measured); every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
for arm in off kept off2; do
  mkdir -p "/tmp/c5/$arm"
  if [ "$arm" = kept ]; then unset CUDA_AGENT_KEEP_REFERENCE; else export CUDA_AGENT_KEEP_REFERENCE=0; fi
  echo "== $arm $(date -u +%T)"
  OUT="/tmp/c5/$arm" DISTGPU_ORDER="0" DISTGPU_PER_GPU=24 timeout 150 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
done
(cd /tmp/c5 && tar czf "$OUT0/call5.tgz" .)
