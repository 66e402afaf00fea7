#!/usr/bin/env bash
# Session 15, call 6 (one GPU): why kept references did not help one GPU in call 5 — waves of 4
# concurrent `cuda-agent judge` (distinct relu_scale cuda_correct copies, one shared cache), arms
# kept/off alternating, 4 waves each (the first of each arm a warm-up); every JudgeResult kept.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"
export PATH="/usr/local/cuda/bin:$PATH"
BIN=$PWD/dist/bin/cuda-agent; export CUDA_AGENT_CACHE_DIR=/tmp/c6-cache; R=/tmp/c6; mkdir -p $R
base=examples/relu_scale/candidates/cuda_correct
for round in 1 2; do
  for arm in kept off; do
    if [ $arm = kept ]; then K=1; else K=0; fi
    for wave in 1 2 3; do
      pids=()
      for k in 1 2 3 4; do
        c=$R/cand-$arm-$round-$wave-$k; rm -rf $c; mkdir -p $c; cp -r $base/. $c/
        echo "// probe $arm $round $wave $k $RANDOM" >> $c/kernels/relu_scale.cu
        CUDA_AGENT_KEEP_REFERENCE=$K $BIN judge --task examples/relu_scale/model.py --candidate $c \
          --device cuda --json > $R/$arm-$round-$wave-$k.json 2>$R/$arm-$round-$wave-$k.err &
        pids+=($!)
      done
      s=$(date +%s.%N); wait "${pids[@]}"; e=$(date +%s.%N)
      echo "$arm round $round wave $wave: $(python3 -c "print(round($e-$s,2))") s"
    done
  done
done | tee $OUT0/waves.txt
(cd $R && tar czf $OUT0/call6.tgz *.json *.err)
