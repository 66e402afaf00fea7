#!/usr/bin/env bash
# Session 15, call 3 (four GPUs of one host, the machine of call 2): workers on GPUs 0-3 with kept
# reference jobs off, then on, then off again (relu_scale's cuda_correct copies, 4 consumers per GPU,
# 8 per GPU in flight); every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
run=0
for arm in off kept off2; do
  run=$((run + 1)); mkdir -p "/tmp/c3/$arm"
  if [ "$arm" = kept ]; then unset CUDA_AGENT_KEEP_REFERENCE; else export CUDA_AGENT_KEEP_REFERENCE=0; fi
  echo "== $arm $(date -u +%T)"
  OUT="/tmp/c3/$arm" DISTGPU_ORDER="0,1,2,3" DISTGPU_PER_GPU=16 timeout 170 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
  ls /tmp/distgpu-cache/kept 2>/dev/null | wc -l
done
(cd /tmp/c3 && tar czf "$OUT0/call3.tgz" .)
