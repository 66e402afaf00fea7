#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fourth), GPU call 1 (a fresh machine; dist/ and .gpu/ carried): where the
# fingerprinted sets' step cost goes on the heavy GEMM tasks (each case's stage times and job phases,
# checks on and off, alternating), then the whole hack corpus and the GPU harness tests on main (b3dd1d5).
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0/r"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export CUDA_AGENT_CACHE_DIR=/tmp/cuda-agent-cache PYTHONUNBUFFERED=1 CUDA_AGENT_BASELINE_MAX_AGE=0
BIN=$CUDA_AGENT_BIN
for f in bench/results/baselines/*.jsonl; do
  [ -f "$f" ] && "$BIN" baselines import "$f" --baseline-store "$CUDA_AGENT_CACHE_DIR/store.sqlite" >/dev/null
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT0/r/env.txt"
ONLY=examples/relu_scale,level2/76_Gemm_Add_ReLU,level2/86_Matmul_Divide_GELU,level2/40_Matmul_Scaling_ResidualAdd
echo "== warmup $(date -u +%T)"
python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all --out /tmp/lat/warm --phases warmup --only $ONLY 2>&1 | tail -4
for i in 1 2; do
  for arm in off on; do
    env=(); [ $arm = off ] && env=(CUDA_AGENT_SAMPLED_CHECKS=0)
    env "${env[@]}" timeout 100 python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all \
      --out /tmp/lat/${arm}_$i --phases ours --repeats 1 --only $ONLY > /dev/null 2>&1
    cp /tmp/lat/${arm}_$i/ours.jsonl "$OUT0/r/ours_${arm}_$i.jsonl"
    python3 - "$OUT0/r/ours_${arm}_$i.jsonl" $arm <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    st = {k: round(v, 2) for k, v in r["stage_seconds"].items()}
    jobs = [(j.get("name"), round(j.get("start_s", 0), 2), round(j.get("end_s", 0) or 0, 2),
             {k: round(v, 3) for k, v in (j.get("phase_seconds") or {}).items() if v > 0.01}) for j in r.get("jobs") or []]
    print(sys.argv[2], r["case"], round(r["wall_s"], 2), st)
    for j in jobs: print("   ", j)
PY
  done
done
echo "== corpus $(date -u +%T)"
OUT="$OUT0/r" timeout 330 bash bench/gpu_session.sh corpus 2>&1 | tail -12
tar -C "$OUT0" -czf "$OUT0/call1.tgz" r && echo "== end $(date -u +%T)"
