#!/usr/bin/env bash
# Session 2026-11-29 (twenty-second), GPU call E (one H200; dist/ and .gpu/pylib carried): the whole hack
# corpus and the CUDA judge cases on the session's final binary (every merge of this session), 4 at a
# time; then P(accept) of the two skipping kernels with the default sampled checks, 20
# judgements each, 4 at a time.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache CUDA_AGENT_TEST_CACHE_DIR=/tmp/cuda-agent-test-cache
export PYTHONPATH="$PWD/.gpu/pylib:$PWD/python" PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } > "$OUT0/env.txt" 2>&1
echo "== corpus $(date -u +%T)"
timeout 330 python3 -m pytest tests/hacks tests/judge -q -p no:cacheprovider -n 4 -k "_cu or cuda or legit" \
  --junitxml="$OUT0/corpus.xml" -rA > "$OUT0/corpus.txt" 2>&1
tail -5 "$OUT0/corpus.txt"; grep -E "^(FAILED|ERROR)" "$OUT0/corpus.txt" | head -20
echo "== flaky $(date -u +%T)"
for f in bench/results/baselines/*.jsonl; do
  [ -f "$f" ] && "$CUDA_AGENT_BIN" baselines import "$f" --baseline-store "$CUDA_AGENT_CACHE_DIR/store.sqlite" >/dev/null
done
timeout 200 python3 bench/flaky/flaky_accept.py --binary "$CUDA_AGENT_BIN" --runs 20 --jobs 4 --out "$OUT0/flaky_on.json" \
  examples/relu_scale/model.py:tests/hacks/b14_flaky_skip_cu examples/relu_scale/model.py:bench/flaky/candidates/skip_1in32 \
  2>&1 | tail -30
echo "== end $(date -u +%T)"
