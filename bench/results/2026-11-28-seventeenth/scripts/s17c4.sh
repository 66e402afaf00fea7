#!/usr/bin/env bash
# Session 17, call 4 (GPU 0): with the timed jobs at two hardware queues (the change's default), the
# hack corpus + CUDA judge cases and the run-time hack matrix for every CUDA case afresh.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c4; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
rm -f .gpu/hack_matrix_gpu.json
echo "== corpus $(date -u +%T)"
OUT=$R CORPUS_TIMEOUT=280 CUDA_VISIBLE_DEVICES=0 bash bench/gpu_session.sh corpus 2>&1 | tail -4
echo "== matrix $(date -u +%T)"
OUT=$R CUDA_VISIBLE_DEVICES=0 MATRIX_TIMEOUT=240 MATRIX_BUDGET=200 bash bench/gpu_session.sh matrix 2>&1 | tail -6
(cd $R && tar czf "$OUT0/call4.tgz" .)
