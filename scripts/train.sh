#!/usr/bin/env bash
# train.sh — runs one of the four training stages with verl (docs/training.md):
#
#   bash scripts/train.sh 1 [hydra overrides...]   # single-turn PPO warm-up (stage1_single_turn_ppo)
#   bash scripts/train.sh 2 [...]                  # rejection fine-tuning (stage2_rft, SFT)
#   bash scripts/train.sh 3 [...]                  # value pretraining (stage3_value_pretrain)
#   bash scripts/train.sh 4 [...]                  # multi-turn agentic PPO (stage4_agentic_ppo)
#
# The model paths and data files come from CUDA_AGENT_* variables (the configs name them); the
# environment server must already run at CUDA_AGENT_SERVER_URL for stages 1, 3 and 4. On a Ray
# cluster, start this on the head node. CUDA_AGENT_DRY_RUN=1 prints the composed config instead.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE="${1:-}"
shift || true
case "$STAGE" in
  1) CONFIG=stage1_single_turn_ppo; ENTRY=verl.trainer.main_ppo ;;
  2) CONFIG=stage2_rft; ENTRY=verl.trainer.sft_trainer ;;
  3) CONFIG=stage3_value_pretrain; ENTRY=verl.trainer.main_ppo ;;
  4) CONFIG=stage4_agentic_ppo; ENTRY=verl.trainer.main_ppo ;;
  *) echo "usage: scripts/train.sh 1|2|3|4 [hydra overrides...]" >&2; exit 2 ;;
esac
PYTHON="${CUDA_AGENT_PYTHON:-python3}"
export CUDA_AGENT_HOME="${CUDA_AGENT_HOME:-$PWD}"
# The plug-in (agent loop, reward function, SFT dataset) is imported by verl's workers.
export PYTHONPATH="$CUDA_AGENT_HOME/python${PYTHONPATH:+:$PYTHONPATH}"
EXTRA=()
if [ -n "${CUDA_AGENT_DRY_RUN:-}" ]; then EXTRA=(--cfg job --resolve); fi
exec "$PYTHON" -m "$ENTRY" --config-path="$CUDA_AGENT_HOME/configs/train" --config-name="$CONFIG" "${EXTRA[@]}" "$@"
