#!/usr/bin/env bash
# Session 17, call 6 (one H100): stream_queues.py with the given (current) stream and a candidate's own
# non-blocking stream (made first, as in a profile job), 1, 2, 4, 8 queues.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
nvidia-smi -L > "$OUT0/env.txt"
timeout 100 /opt/torch/.venv/bin/python3 bench/stream_queues.py --queues 1 2 4 8 --json "$OUT0/stream_queues.json" 2>&1 | tail -6
