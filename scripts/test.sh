#!/usr/bin/env bash
# test.sh — the whole fast test suite: C++ unit tests (ctest/GoogleTest), the harness's tests and
# the declarative judge scenarios (pytest). GPU scenarios are skipped where torch sees no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${CUDA_AGENT_PYTHON:-python3}"
# A private cache so a test run never reuses objects from another tree.
export CUDA_AGENT_CACHE_DIR="${CUDA_AGENT_CACHE_DIR:-$PWD/build/test-cache}"
# The test modules that keep a cache of their own (judge cases, ncu, bench) share this one instead: each
# cache builds the torch-extension precompiled header and the examples' objects again (minutes on 2 CPUs).
export CUDA_AGENT_TEST_CACHE_DIR="${CUDA_AGENT_TEST_CACHE_DIR:-$CUDA_AGENT_CACHE_DIR}"

# Two fingerprinted input sets per judgement instead of the default 128 (flaky kernels, docs/hacks.md
# B14): the profile's first two when the judgement times its candidate, else two sampled ones. On 2
# CPUs each costs a KernelBench-sized input set, a forward and its checksums (eight cost the suite
# minutes). Every judgement still runs the path; the tests of the checks name their own count.
export CUDA_AGENT_SAMPLED_CHECKS="${CUDA_AGENT_SAMPLED_CHECKS:-2}"

echo "== C++ unit tests"
ctest --test-dir build --output-on-failure -j 2

# Test processes at once (pytest-xdist): 2 on CI's 2 CPUs, where one process leaves a CPU idle while
# it waits for a judgement's child processes (docs/decisions/ci.md). A whole file goes to one process
# (--dist loadfile): module fixtures are set up once and a file's tests keep their order.
# CUDA_AGENT_TEST_JOBS=1 runs them in this process, one after another.
JOBS="${CUDA_AGENT_TEST_JOBS:-2}"
PARALLEL=()
if [ "$JOBS" -gt 1 ]; then PARALLEL=(-n "$JOBS" --dist loadfile); fi

echo "== Python harness tests, judge scenarios, the hack corpus, the benchmark runner and the LLM clients"
"$PYTHON" -m pytest python/tests tests/judge tests/build tests/hacks tests/sandbox tests/bench tests/synth tests/llm tests/agent tests/server tests/queue tests/rft tests/train tests/openenv tests/verifiers_env tests/ncu -q -p no:cacheprovider --durations=25 "${PARALLEL[@]}" "$@"
