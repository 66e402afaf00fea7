#!/usr/bin/env bash
# Session 16, call 3 (four GPUs of one host): the run-time column of the hack matrix for every CUDA
# case afresh with one candidate process (static rules skipped, 4 at a time, GPU 0), then workers on
# GPUs 0-3 with the profile job's CUDA context made at its start (CUDA_AGENT_PROFILE_CONTEXT_EARLY=1)
# or at its first allocation (the default), arms default / early; every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c3; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
echo "== matrix $(date -u +%T)"
OUT=$R CUDA_VISIBLE_DEVICES=0 MATRIX_TIMEOUT=290 MATRIX_BUDGET=230 bash bench/gpu_session.sh matrix 2>&1 | tail -12
for arm in default early; do
  mkdir -p "$R/$arm"
  if [ "$arm" = early ]; then export CUDA_AGENT_PROFILE_CONTEXT_EARLY=1; else unset CUDA_AGENT_PROFILE_CONTEXT_EARLY; fi
  echo "== $arm $(date -u +%T)"
  OUT="$R/$arm" DISTGPU_ORDER="0,1,2,3" DISTGPU_PER_GPU=16 timeout 150 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
done
(cd $R && tar czf "$OUT0/call3.tgz" .)
