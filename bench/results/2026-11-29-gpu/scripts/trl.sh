#!/usr/bin/env bash
# Session 2026-11-29, GPU calls 2-3 (dist/ carried, .gpu/wheels from scripts/trl_wheels.sh in the tree):
# TRL's GRPOTrainer through the OpenEnv adapter and serve --device cuda (bench/trl_gpu.sh), then our
# own GRPO loop on the same tasks. trl-80: the defaults with TRL_MINUTES=4; trl-400: the second line.
rm -rf .gpu/pylib; OUT=$OUT TRL_MINUTES=4 bash bench/trl_gpu.sh
rm -rf .gpu/pylib; OUT=$OUT TRL_MINUTES=5 TRL_TIMEOUT=360 TRL_STEPS=400 TRL_LR=0.03 TOY_TIMEOUT=100 bash bench/trl_gpu.sh
