#!/usr/bin/env bash
# Session 2026-11-29 (twenty-second), GPU call A (one H200; dist/ and .gpu/ carried: .gpu/kb staged by
# `agreement.py stage`, .gpu/kb-results-3 = the previous session's agreement call 3): issue 47 and 46.
#  1. the agreement re-judged on our side for the disagreements and the state_dict refusals (weights by
#     position now keep ModelNew's extra entries), every other verdict of call 3 kept;
#  2. `cuda-agent bench --solver kernelbench:` on a KernelBench run folder of 16 public solutions;
#  3. beside it, the two debatable refusals of the real-world run (a `.contiguous()` copy; a closed form
#     against a rounding-noise reference) judged again under strict, and the new corpus cases.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH" CUDA_AGENT_HOME=$PWD CUDA_AGENT_BIN=$PWD/dist/bin/cuda-agent
export PYTHONPATH="$PWD/.gpu/pylib" PYTHONUNBUFFERED=1
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; } > "$OUT0/env.txt" 2>&1
echo "== agreement re-judge $(date -u +%T)"
OUT=$OUT0 KB_RESUME=.gpu/kb-results-3 KB_REJUDGE=disagreed,kind:state_dict KB_JOBS=4 KB_DEADLINE=150 KB_TIMEOUT=200 \
  bash bench/gpu_session.sh kb-agreement 2>&1 | tail -25
echo "== kb-bench $(date -u +%T)"
OUT=$OUT0 bash bench/gpu_session.sh kb-bench 2>&1 | tail -45
echo "== real-world two, corpus cases $(date -u +%T)"
for s in level1/18_Matmul_with_transposed_both:lb-l1-p18-gpt-o1-8944af level2/23_Conv3d_GroupNorm_Mean:kb-23_Conv3d_GroupNorm_-_kernelbench; do
  timeout 200 "$CUDA_AGENT_BIN" judge --policy strict --baselines eager --device cuda --json \
    --task ".gpu/kb/tasks/${s%%:*}.py" --candidate ".gpu/kb/solutions/${s##*:}.py" > "$OUT0/rw-${s##*:}.json" 2>"$OUT0/rw-${s##*:}.err" &
done
CUDA_AGENT_TEST_CACHE_DIR=/tmp/cuda-agent-test-cache timeout 200 python3 -m pytest tests/hacks/test_hack_corpus.py -q \
  -p no:cacheprovider -n 3 -k "contiguous_copy or half_copy or legit_extension_alias or legit_zeros" -rA 2>&1 | grep -E "PASSED|FAILED|ERROR|passed|failed" | tail -12
wait
for f in "$OUT0"/rw-*.json; do python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(sys.argv[1].rsplit('/',1)[1], r.get('correct'), r.get('reward'), r.get('stage'), r.get('error_kind'), (r.get('reason') or '')[:300])" "$f" \
  || tail -3 "${f%.json}.err"; done
echo "== end $(date -u +%T)"
