#!/usr/bin/env bash
# Session 18, call 3 (four GPUs of one host): workers with the poison refilled in place (on, the default)
# against afresh before every check (CUDA_AGENT_POISON_REFILL=0), arms on / off alternating, three each (relu_scale's
# cuda_correct copies, 4 consumers per GPU, 8 per GPU in flight).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c3; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv > $R/env.txt; nproc >> $R/env.txt
for arm in on1 off1 on2 off2 on3 off3; do
  mkdir -p "$R/$arm"
  case $arm in off*) export CUDA_AGENT_POISON_REFILL=0;; *) unset CUDA_AGENT_POISON_REFILL;; esac
  ORDER="0,1,2,3"
  echo "== $arm $(date -u +%T)"
  OUT="$R/$arm" DISTGPU_ORDER="$ORDER" DISTGPU_PER_GPU=24 timeout 150 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
  (cd $R && tar czf "$OUT0/call3.tgz" .)
done
echo "== end $(date -u +%T)"
