#!/usr/bin/env bash
# Session 2026-11-29 (twenty-third), GPU call 4 (a fresh machine; dist/ and .gpu/pylib carried): the
# cases the timed calls' fingerprints and the stream-order anchor touch — the A1/A2 stream and
# deferred-work hacks, A5/A6 call counters, B12/B14, the legitimate own stream — and the harness's GPU
# tests of the fences and spot checks, 4 at a time.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache CUDA_AGENT_TEST_CACHE_DIR=/tmp/cuda-agent-test-cache
export PYTHONPATH="$PWD/.gpu/pylib:$PWD/python" PYTHONUNBUFFERED=1
echo "== corpus subset $(date -u +%T)"
timeout 200 python3 -m pytest tests/hacks tests/judge -q -p no:cacheprovider -n 4 \
  -k "a1_ or a2_ or a5_ or a6_ or b12 or b14 or own_stream or relu_scale_cuda_correct or linear_gelu_cuda_correct" \
  -rA > "$OUT0/corpus.txt" 2>&1
tail -3 "$OUT0/corpus.txt"; grep -E "^(PASSED|FAILED|ERROR)" "$OUT0/corpus.txt" | sed 's/tests.hacks.test_hack_corpus.py::test_hack_case//' | head -30
echo "== harness GPU tests $(date -u +%T)"
timeout $((280 - SECONDS)) python3 -m pytest python/tests/test_gpu.py -q -p no:cacheprovider \
  -k "side_stream or fences or spot_checks or profile_on_cuda or pipeline" > "$OUT0/gpu_tests.txt" 2>&1
tail -3 "$OUT0/gpu_tests.txt"
echo "== end $(date -u +%T)"
