#!/usr/bin/env bash
# Session 2026-11-29 (twenty-second), GPU call C (one H200; dist/ and .gpu/wheels carried, pyarrow and pandas
# left out: the machine has them): issue 48's TRL run with the new recipe (docs/training.md), TRL's
# GRPOTrainer through the OpenEnv adapter and serve --device cuda, then our own GRPO loop, same tasks,
# steps and group (bench/trl_gpu.sh's defaults: 200 steps, group 8, lr 0.003).
set -uo pipefail
cd "$(dirname "$0")/../../../.."
rm -rf .gpu/pylib
OUT="${OUT:-/tmp/out}" bash bench/trl_gpu.sh
