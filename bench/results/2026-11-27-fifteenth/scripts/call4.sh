#!/usr/bin/env bash
# Session 15, call 4 (one GPU): the hack corpus + CUDA judge cases and the GPU harness tests with kept
# reference jobs (on by default); then one task's step judged again and again (an agent's loop:
# relu_scale's cuda_correct, its kernel edited each time), kept off and on alternately.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
CORPUS_TIMEOUT=330 bash bench/gpu_session.sh corpus 2>&1 | tail -8
ls /tmp/cuda-agent-test-cache/kept 2>/dev/null | wc -l
BIN=dist/bin/cuda-agent; C=/tmp/step-cands; mkdir -p $C /tmp/step
for i in $(seq 1 8); do
  for arm in off kept; do
    c=$C/$arm-$i; rm -rf $c; cp -r examples/relu_scale/candidates/cuda_correct $c
    echo "// edit $arm $i $RANDOM" >> $c/kernels/relu_scale.cu
    if [ $arm = off ]; then K=0; else K=1; fi
    CUDA_AGENT_KEEP_REFERENCE=$K CUDA_AGENT_CACHE_DIR=/tmp/step-cache $BIN judge --task examples/relu_scale/model.py \
      --candidate $c --device cuda --json > /tmp/step/$arm-$i.json 2>/dev/null
  done
done
python3 - <<'PY' | tee "$OUT/step.txt"
import json, glob, statistics
for arm in ("off", "kept"):
    rows = []
    for i in range(1, 9):
        r = json.load(open(f"/tmp/step/{arm}-{i}.json"))
        ref = [j for j in r["jobs"] if j["name"] == "reference"][0]
        rows.append((r["stage_seconds"]["total"], r["stage_seconds"].get("reference"), ref.get("kept_round"), r["reward"]))
    print(arm, "total p50", round(statistics.median(t for t, *_ in rows[1:]), 3), "rows", [(round(t, 2), round(s or 0, 2), k, w) for t, s, k, w in rows])
PY
