#!/usr/bin/env bash
# Session 2026-11-29 (twenty-second), GPU call D (one H200, warm after call C; as call C): the TRL run again
# with seed 1 and the records archived (call C's summary.json and steps.jsonl did not come back), then
# our own loop; each run's records in trl_records.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
rm -rf .gpu/pylib
OUT="${OUT:-/tmp/out}" TRL_EXTRA="--seed 1" bash bench/trl_gpu.sh 2>&1 | grep -v "^{'loss'" | tail -40
