#!/usr/bin/env bash
# harness_ab.sh — the agent's step with this tree's harness (A) against another harness home (B: a
# copy of python/ and templates/ with one change undone), alternately, on the GPU machine:
# bench/judge_latency.py's `warmup` once per arm (B starts a fork server of its own), then `ours` on
# the bundled examples, ROUNDS rounds of A then B. Records under /tmp/harness-ab/{A,B}; the log and
# a tarball of the records go to $OUT. The JudgeResults' `jobs` (in the records) give each job's
# phases, so a change to one job shows there as well as in the step.
#
#   B=/tmp/home-b; mkdir -p $B && cp -r python templates $B/ && <undo the change in $B>
#   bash bench/harness_ab.sh $B 3
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/cuda-agent-out}"
mkdir -p "$OUT"
B_HOME="$1"
ROUNDS="${2:-3}"
export CUDA_AGENT_BIN="$PWD/dist/bin/cuda-agent" CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1
DIR=/tmp/harness-ab
CASES=examples/relu_scale,examples/linear_gelu,examples/rowwise_softmax
step() {  # HOME ARM PHASE REPEATS
  CUDA_AGENT_HOME="$1" python3 bench/judge_latency.py --device cuda --out "$DIR/$2" --phases "$3" \
    --repeats "$4" --only "$CASES" 2>&1 | tee -a "$OUT/harness_ab.log"
}
step "$PWD" A warmup 1
step "$B_HOME" B warmup 1
for r in $(seq 1 "$ROUNDS"); do
  step "$PWD" A ours "$r"
  step "$B_HOME" B ours "$r"
done
tar -C "$DIR" -czf "$OUT/harness_ab.tar.gz" --exclude='*.so' .
