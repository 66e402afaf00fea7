#!/usr/bin/env bash
# Session 18, call 4 (four GPUs of one host): where the host's CPU goes while its workers judge —
# dist-gpu (refill on, the default) on GPU 0, then all four twice, then GPU 0 again, with the host's
# busy cores and core-seconds per judgement over each measured run (bench/cpu_meter.py).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT0="${OUT:-/tmp/out}"; mkdir -p "$OUT0"; R=/tmp/c4; mkdir -p $R
export PATH="/usr/local/cuda/bin:$PATH"
{ nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv; nproc; lscpu | grep -E "Model name|Socket|Thread|NUMA node\(s\)"; } > $R/env.txt
echo "== dist-gpu $(date -u +%T)"
OUT="$R" DISTGPU_ORDER="0 0,1,2,3 0,1,2,3 0" DISTGPU_PER_GPU=24 timeout 420 bash bench/gpu_session.sh dist-gpu 2>&1 | grep "^run"
(cd $R && tar czf "$OUT0/call4.tgz" .)
echo "== end $(date -u +%T)"
