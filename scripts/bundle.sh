#!/usr/bin/env bash
# bundle.sh — packs what the GPU machine needs next to the working tree: the binary built here
# (it runs on glibc ≥ 2.36 and needs only libstdc++, present there) in dist/bin/.
# On the GPU machine: CUDA_AGENT_HOME=$PWD dist/bin/cuda-agent judge ...
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j "$(nproc)" >/dev/null
mkdir -p dist/bin
cp build/cuda-agent dist/bin/cuda-agent
strip dist/bin/cuda-agent
echo "dist/bin/cuda-agent: $(du -h dist/bin/cuda-agent | cut -f1); needs:"
ldd dist/bin/cuda-agent | awk '{print "  " $1}'
