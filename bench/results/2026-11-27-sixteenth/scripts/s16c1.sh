#!/usr/bin/env bash
# Session 16, call 1 (four GPUs of one host): workers on GPUs 0-3, then on GPU 0 alone, with the
# candidate's checks in its profile job (one process, the default) and in a `candidate` job of their
# own (CUDA_AGENT_ONE_CANDIDATE_PROCESS=0), arms one / off / one (relu_scale's cuda_correct copies,
# 4 consumers per GPU, 8 per GPU in flight); every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
run=0
for arm in one off one2; do
  run=$((run + 1)); mkdir -p "/tmp/c1/$arm"
  if [ "$arm" = off ]; then export CUDA_AGENT_ONE_CANDIDATE_PROCESS=0; else unset CUDA_AGENT_ONE_CANDIDATE_PROCESS; fi
  echo "== $arm $(date -u +%T)"
  OUT="/tmp/c1/$arm" DISTGPU_ORDER="0,1,2,3 0" DISTGPU_PER_GPU=16 timeout 190 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
done
(cd /tmp/c1 && tar czf "$OUT0/call1.tgz" .)
