#!/usr/bin/env bash
# Session 16, call 6 (four GPUs of one host): an experiment, not a change — the candidate's profile
# job (now the judgement's one CUDA process) with fewer hardware queues: CUDA_DEVICE_MAX_CONNECTIONS
# 8 (the driver's default, main), 1 and 4 through a switch built for this call only
# (CUDA_AGENT_PROFILE_QUEUES); workers on GPUs 0-3, relu_scale copies; every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c6; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
for arm in q8 q1 q4; do
  mkdir -p "$R/$arm"
  if [ "$arm" = q8 ]; then unset CUDA_AGENT_PROFILE_QUEUES; else export CUDA_AGENT_PROFILE_QUEUES="${arm#q}"; fi
  echo "== $arm $(date -u +%T)"
  OUT="$R/$arm" DISTGPU_ORDER="0,1,2,3" DISTGPU_PER_GPU=16 timeout 130 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
done
(cd $R && tar czf "$OUT0/call6.tgz" .)
