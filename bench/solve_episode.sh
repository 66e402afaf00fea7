#!/usr/bin/env bash
# solve_episode.sh — the scripted relu_scale episode on a GPU machine: `cuda-agent solve` plays
# examples/relu_scale/episodes/cuda_scripted.jsonl (the kernel written with a compile error, fixed,
# verified with a wrong result, fixed, verified, profiled), then the final judgement; prints the
# reward and the episode's tool observations. Results under $OUT/episode (result.json,
# trajectory.jsonl, workspace/).
#
#   bash bench/solve_episode.sh            # CUDA, dist/bin/cuda-agent
#   DEVICE=cpu bash bench/solve_episode.sh # the CPU twin (cpu_scripted.jsonl)
#
# Exit status: 0 when the episode ran and its reward is at least 1, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/cuda-agent-out}"
DEVICE="${DEVICE:-cuda}"
export CUDA_AGENT_HOME="$PWD"
export CUDA_AGENT_CACHE_DIR="${CUDA_AGENT_CACHE_DIR:-/tmp/cuda-agent-cache}"
BIN="${CUDA_AGENT_BIN:-$PWD/dist/bin/cuda-agent}"
[ -x "$BIN" ] || BIN="$PWD/build/cuda-agent"
EPISODE="$OUT/episode"
mkdir -p "$OUT"
rm -rf "$EPISODE"

"$BIN" solve examples/relu_scale/model.py --device "$DEVICE" --out "$EPISODE" \
  --model "replay:$PWD/examples/relu_scale/episodes/${DEVICE}_scripted.jsonl" 2> "$OUT/episode.stderr.txt"
STATUS=$?
cat "$OUT/episode.stderr.txt"
echo "solve exit status: $STATUS"

python3 - "$EPISODE" <<'PY'
import json, sys
from pathlib import Path
episode = Path(sys.argv[1])
for line in (episode / "trajectory.jsonl").read_text().splitlines():
    record = json.loads(line)
    if record["type"] == "observation":
        mark = "ERROR" if record["is_error"] else "ok"
        print(f"--- turn {record['turn']} {record['tool']} ({mark}, {record['seconds']:.1f} s)")
        print("\n".join(record["text"].splitlines()[:12]))
result = json.loads((episode / "result.json").read_text())
judge = result.get("judge") or {}
print(f"stop: {result['stop_reason']}, turns: {result.get('turns')}, wall: {result.get('wall_s', 0):.0f} s")
print(f"best in loop: {result.get('best_in_loop')}")
print(f"final judgement: {judge.get('reason')}")
print(f"reward: {result.get('reward')}")
sys.exit(0 if isinstance(result.get("reward"), (int, float)) and result["reward"] >= 1 else 1)
PY
