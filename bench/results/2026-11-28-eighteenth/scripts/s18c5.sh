#!/usr/bin/env bash
# Session 18, call 5 (four GPUs of one host): every measured judgement's whole result on GPU 0 alone and
# on all four (dist-gpu, refill on), to read which of a judgement's waits grow with the GPUs in use.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c5; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
echo "== dist-gpu $(date -u +%T)"
OUT="$R" DISTGPU_ORDER="0 0,1,2,3" DISTGPU_PER_GPU=16 timeout 300 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
(cd $R && tar czf "$OUT0/call5.tgz" .)
echo "== end $(date -u +%T)"
