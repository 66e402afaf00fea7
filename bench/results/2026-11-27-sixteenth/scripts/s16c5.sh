#!/usr/bin/env bash
# Session 16, call 5 (one GPU): the hack corpus + CUDA judge cases and the GPU harness tests with the
# code as committed (the review's changes after calls 1-4), one candidate process (the default).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c5; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
OUT=$R CORPUS_TIMEOUT=300 bash bench/gpu_session.sh corpus 2>&1 | tail -4
(cd $R && tar czf "$OUT0/call5.tgz" corpus.txt corpus.xml harness_gpu.txt env.txt 2>/dev/null)
