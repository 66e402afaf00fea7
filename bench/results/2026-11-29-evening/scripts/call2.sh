#!/usr/bin/env bash
# GPU call 2: the hack corpus's CUDA and legitimate cases (incl. b14_racy_row_sum_cu and the copy_
# cases added since the last GPU corpus run) on the GPU, 4 at a time.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH"
echo "== corpus $(date -u +%T)"
CORPUS_FILTER="_cu or cuda or legit or copy_into" CORPUS_TIMEOUT=320 OUT="$OUT0/r" \
  bash bench/gpu_session.sh corpus 2>&1 | grep -vE "^\s*$" | tail -60
echo "== end $(date -u +%T)"
