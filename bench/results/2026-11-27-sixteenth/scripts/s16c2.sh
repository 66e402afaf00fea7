#!/usr/bin/env bash
# Session 16, call 2 (the machine of call 1, GPU 0 unless said): the hack corpus + CUDA judge cases
# and the GPU harness tests with one candidate process (the default); the run-time matrix cell of
# the new case (a2_device_work_while_waiting_cu, static rules skipped); one task's step judged
# again and again (relu_scale's cuda_correct, its kernel edited each time), one process off and on
# alternately; then dist-probe (waves of 4 judgements per GPU on GPU 0, then on all four) with one
# process. Every record in one archive.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c2; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD/.gpu/pylib:${PYTHONPATH:-}"
echo "== corpus $(date -u +%T)"
OUT=$R CORPUS_TIMEOUT=300 CUDA_VISIBLE_DEVICES=0 bash bench/gpu_session.sh corpus 2>&1 | tail -6
echo "== matrix $(date -u +%T)"
OUT=$R CUDA_VISIBLE_DEVICES=0 MATRIX_TIMEOUT=120 MATRIX_BUDGET=60 bash bench/gpu_session.sh matrix 2>&1 | grep -i "a2_device\|caught\|missed" | tail -5
echo "== step $(date -u +%T)"
BIN=dist/bin/cuda-agent; C=/tmp/step-cands; mkdir -p $C /tmp/step
for i in $(seq 1 7); do
  for arm in off one; do
    c=$C/$arm-$i; rm -rf $c; cp -r examples/relu_scale/candidates/cuda_correct $c
    echo "// edit $arm $i $RANDOM" >> $c/kernels/relu_scale.cu
    if [ $arm = off ]; then K=0; else K=1; fi
    CUDA_VISIBLE_DEVICES=0 CUDA_AGENT_ONE_CANDIDATE_PROCESS=$K CUDA_AGENT_CACHE_DIR=/tmp/step-cache $BIN judge \
      --task examples/relu_scale/model.py --candidate $c --device cuda --json > /tmp/step/$arm-$i.json 2>/dev/null
  done
done
python3 - <<'PY' | tee "$R/step.txt"
import json, statistics
for arm in ("off", "one"):
    rows = []
    for i in range(1, 8):
        r = json.load(open(f"/tmp/step/{arm}-{i}.json"))
        s = r["stage_seconds"]
        rows.append((s["total"], s.get("verify"), s.get("profile_candidate"), r["reward"]))
    print(arm, "total p50 (first left out)", round(statistics.median(t for t, *_ in rows[1:]), 3),
          "rows", [(round(t, 2), round(v or 0, 2), round(p or 0, 2), w) for t, v, p, w in rows])
PY
cp /tmp/step/*.json $R/ 2>/dev/null
echo "== probe $(date -u +%T)"
OUT=$R timeout 150 bash bench/gpu_session.sh dist-probe 2>&1 | grep "^set"
(cd $R && tar czf "$OUT0/call2.tgz" .)
