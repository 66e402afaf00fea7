#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fifth), GPU call 3 (a fresh machine; dist/ and .gpu/ carried): P(accept) of
# the flaky candidates on the final harness with the defaults, 20 judgements each, 4 at a time — one
# input in 8 skipped, a racy reduction (a plain read-modify-write where two blocks add to one element),
# an output accumulated into memory that is usually zero — then the honest real-world solutions through
# the whole judge (strict), 6 at once, cut at a deadline.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; rm -rf "$OUT0/r"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
BIN=$CUDA_AGENT_BIN
for f in bench/results/baselines/*.jsonl; do
  [ -f "$f" ] && "$BIN" baselines import "$f" --baseline-store "$CUDA_AGENT_CACHE_DIR/store.sqlite" >/dev/null
done
show() { python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['candidates']
for c,v in d.items(): print(c.split('/')[-1], v['accepted'], '/', v['judged'], v['refusals'], v['fingerprinted_sets'], v['median_seconds'])" "$1"; }
echo "== flaky, defaults $(date -u +%T)"
timeout 200 python3 bench/flaky/flaky_accept.py --binary $BIN --runs 20 --jobs 4 --out "$OUT0/r/flaky_defaults.json" \
  examples/relu_scale/model.py:tests/hacks/b14_flaky_skip_cu \
  bench/flaky/tasks/row_sum.py:bench/flaky/candidates/racy_row_sum \
  examples/relu_scale/model.py:tests/hacks/b14_uninit_accumulate_cu > "$OUT0/r/flaky.log" 2>&1
show "$OUT0/r/flaky_defaults.json"
echo "== kb-realworld $(date -u +%T)"
KB_JOBS=6 KB_DEADLINE=$((540 - SECONDS)) KB_TIMEOUT=$((575 - SECONDS)) OUT="$OUT0/r" bash bench/gpu_session.sh kb-realworld 2>&1 | tail -6
tar -C "$OUT0" -czf "$OUT0/call3.tgz" r && echo "== end $(date -u +%T)"
