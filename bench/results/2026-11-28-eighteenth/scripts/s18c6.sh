#!/usr/bin/env bash
# Session 18, call 6 (four GPUs of one host): is the host saturated or short of judgements in flight?
# dist-gpu on all four GPUs with 8 consumers per GPU (16 in flight per GPU), 4 (8, as every earlier
# run), 8 again; refill on. Busy cores and every judgement's result recorded.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c6; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
for arm in c8 c4 c8b; do
  mkdir -p "$R/$arm"; C=4; case $arm in c8*) C=8;; esac
  echo "== $arm $(date -u +%T)"
  OUT="$R/$arm" DISTGPU_ORDER="0,1,2,3" DISTGPU_CONSUMERS=$C DISTGPU_PER_GPU=24 timeout 110 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
  (cd $R && tar czf "$OUT0/call6.tgz" .)
done
echo "== end $(date -u +%T)"
