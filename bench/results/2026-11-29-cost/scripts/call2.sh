#!/usr/bin/env bash
# Session 2026-11-29 (twenty-fourth), GPU call 2 (a fresh machine): what one fingerprinted set costs, piece
# by piece, on four tasks, before the leaner chunk sums (bench/flaky/set_cost.py; main at b3dd1d5).
cd "$(dirname "$0")/../../../.."
mkdir -p "$OUT"
python3 bench/flaky/set_cost.py examples/relu_scale/model.py .gpu/kernelbench_all/level2/76_Gemm_Add_ReLU.py \
  .gpu/kernelbench_all/level2/40_Matmul_Scaling_ResidualAdd.py .gpu/kernelbench_all/level1/88_MinGPTNewGelu.py \
  --sets 64 --repeats 3 --out "$OUT/set_cost.json"
