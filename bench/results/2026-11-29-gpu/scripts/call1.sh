#!/usr/bin/env bash
# Session 2026-11-29, GPU call 1 (run from the repository root with dist/ and build/kb-agreement
# carried): the option table's judgements on CUDA (the bundled example, strict, a few options set),
# then KernelBench's own evaluator beside ours on 50 real-world solutions under --policy kernelbench
# (bench/kernelbench/agreement.py through bench/gpu_session.sh kb-agreement).
set -uo pipefail
OUT="${OUT:-/tmp/cuda-agent-out}"
BIN="$PWD/dist/bin/cuda-agent"
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache
T=examples/relu_scale/model.py
C=examples/relu_scale/candidates
for c in cuda_correct; do
  timeout 120 "$BIN" judge --task "$T" --candidate "$C/$c" --json --baselines eager > "$OUT/strict_$c.json" 2> "$OUT/strict_$c.err"
  timeout 120 "$BIN" judge --task "$T" --candidate "$C/$c" --json --baselines eager --timed-queues 8 \
    --profile-standby off --keep-reference off > "$OUT/options_$c.json" 2> "$OUT/options_$c.err"
done
python3 - "$OUT" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*_cuda_*.json")):
    try:
        r = json.loads(f.read_text())
        print(f.name, r.get("reward"), r.get("stage"), r.get("error_kind"), (r.get("reason") or "")[:160])
    except Exception as e:
        print(f.name, "unreadable", e)
PY
KB_POLICY=kernelbench KB_DEADLINE=360 OUT="$OUT" bash bench/gpu_session.sh kb-agreement
