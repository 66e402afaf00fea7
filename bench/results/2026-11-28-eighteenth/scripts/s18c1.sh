#!/usr/bin/env bash
# Session 18, call 1 (four GPUs of one host): the poison refilled in place between checks.
# GPU tests of the poisoning; host_line.py (1 process, 4 on each GPU) with the refill and without;
# the hack corpus + CUDA judge cases and the run-time matrix afresh on GPU 0 (refill on, the default).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c1; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
PY=/opt/torch/.venv/bin/python3
nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv > $R/env.txt; nproc >> $R/env.txt
echo "== poison tests $(date -u +%T)"
(cd python && CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$PWD/../.gpu/pylib:$PWD" timeout 120 $PY -m pytest -q -p no:cacheprovider \
  tests/test_integrity.py tests/test_candidate_guards.py -rs 2>&1 | tail -8) | tee $R/poison_tests.txt
echo "== host line $(date -u +%T)"
timeout 150 $PY bench/host_line.py --layouts 1 4,4,4,4 --repeats 2 \
  --variants CUDA_DEVICE_MAX_CONNECTIONS=2 CUDA_DEVICE_MAX_CONNECTIONS=2,CUDA_AGENT_POISON_REFILL=0 \
  --json $R/host_line.json 2>&1 | tail -10
(cd $R && tar czf "$OUT0/call1.tgz" .)
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
rm -f .gpu/hack_matrix_gpu.json
echo "== corpus $(date -u +%T)"
OUT=$R CORPUS_TIMEOUT=250 CUDA_VISIBLE_DEVICES=0 bash bench/gpu_session.sh corpus 2>&1 | tail -4
(cd $R && tar czf "$OUT0/call1.tgz" .)
echo "== matrix $(date -u +%T)"
OUT=$R CUDA_VISIBLE_DEVICES=0 MATRIX_TIMEOUT=120 MATRIX_BUDGET=90 bash bench/gpu_session.sh matrix 2>&1 | tail -6
(cd $R && tar czf "$OUT0/call1.tgz" .)
echo "== end $(date -u +%T)"
