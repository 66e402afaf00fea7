#!/usr/bin/env bash
# bundle.sh — packs what the GPU machine needs next to the working tree: the binary built here
# (it runs on glibc ≥ 2.36 and needs only libstdc++, present there), the jail library the fork
# server loads, and bubblewrap, in dist/bin/.
# On the GPU machine: CUDA_AGENT_HOME=$PWD dist/bin/cuda-agent judge ...
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j "$(nproc)" >/dev/null
mkdir -p dist/bin
cp build/cuda-agent dist/bin/cuda-agent
strip dist/bin/cuda-agent
# The jail as a library, for the fork server's children (found next to the binary).
cp build/libcuda_agent_jail.so dist/bin/libcuda_agent_jail.so
strip dist/bin/libcuda_agent_jail.so
# bubblewrap for the sandbox: the GPU machine has none and no package manager; Debian's binary runs
# there (it needs libselinux, libcap and libpcre2, which Ubuntu ships). The judge looks next to itself.
if command -v bwrap >/dev/null 2>&1 && ! cmp -s "$(command -v bwrap)" dist/bin/bwrap; then
  cp "$(command -v bwrap)" dist/bin/bwrap
fi
echo "dist/bin/cuda-agent: $(du -h dist/bin/cuda-agent | cut -f1); needs:"
ldd dist/bin/cuda-agent | awk '{print "  " $1}'
