#!/usr/bin/env bash
# Session 17, call 3 (four GPUs of one host): two streams' concurrency with 1, 2, 8 hardware queues
# (stream_queues.py, GPU 0); workers with the timed jobs' contexts at 2 queues (the change's default),
# 8 (the driver's, CUDA_AGENT_TIMED_QUEUES=0, main) and 1, arms q2 / q8 / q1 / q2 (relu_scale's
# cuda_correct copies, 4 consumers per GPU, 8 per GPU in flight); the GPU harness tests of the
# stream-order fences under fewer queues. Every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c3; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
PY=/opt/torch/.venv/bin/python3
nvidia-smi -L > $R/env.txt; nproc >> $R/env.txt
echo "== streams $(date -u +%T)"
CUDA_VISIBLE_DEVICES=0 timeout 90 $PY bench/stream_queues.py --queues 1 2 8 --json $R/stream_queues.json 2>&1 | tail -4
for arm in q2 q8 q1 q2b; do
  mkdir -p "$R/$arm"
  case $arm in q8) export CUDA_AGENT_TIMED_QUEUES=0;; q1) export CUDA_AGENT_TIMED_QUEUES=1;; *) unset CUDA_AGENT_TIMED_QUEUES;; esac
  ORDER="0,1,2,3"; case $arm in q2|q8) ORDER="0,1,2,3 0";; esac
  echo "== $arm $(date -u +%T)"
  OUT="$R/$arm" DISTGPU_ORDER="$ORDER" DISTGPU_PER_GPU=16 timeout 150 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
done
unset CUDA_AGENT_TIMED_QUEUES
echo "== harness tests $(date -u +%T)"
(cd python && CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$PWD/../.gpu/pylib:$PWD" timeout 150 $PY -m pytest -q -p no:cacheprovider \
  tests/test_gpu.py -k "fewer_hardware_queues or hides or side_stream" 2>&1 | tail -8) | tee $R/harness.txt
(cd $R && tar czf "$OUT0/call3.tgz" .)
