#!/usr/bin/env bash
# fuzz.sh [SECONDS] — builds the libFuzzer targets of tests/fuzz (clang++, ASan + UBSan, in
# build-fuzz/) and runs each for SECONDS (default 30) from its seed corpus in
# tests/fuzz/corpus/<target>/. A crash, leak, UB report or hang stops with a non-zero exit and the
# path of the reproducer; replay one with: build-fuzz/fuzz/fuzz_<target> <reproducer>.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-30}"
BUILD=build-fuzz
TARGETS=(cpp_lexer sse static_rules)

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# Debug with -O1: asserts (and Result::value()'s check) stay on, and the code is fast enough to fuzz.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DCUDA_AGENT_FUZZ=ON -DCUDA_AGENT_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j "${FUZZ_BUILD_JOBS:-2}" --target "${TARGETS[@]/#/fuzz_}"

status=0
for target in "${TARGETS[@]}"; do
  # New inputs go to the working corpus under build-fuzz/; the seed corpus in the tree is only read.
  work="$BUILD/corpus/$target"
  artifacts="$BUILD/artifacts/$target"
  rm -rf "$artifacts"
  mkdir -p "$work" "$artifacts"
  echo "== fuzz_$target for ${SECONDS_EACH}s"
  start=$(date +%s)
  if ! "$BUILD/fuzz/fuzz_$target" "$work" "tests/fuzz/corpus/$target" \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" >"$BUILD/fuzz_$target.log" 2>&1; then
    status=1
    tail -n 40 "$BUILD/fuzz_$target.log"
    for reproducer in "$artifacts"/*; do
      [ -e "$reproducer" ] && echo "fuzz_$target FAILED: reproducer $reproducer"
    done
  fi
  grep -E "^stat::number_of_executed_units|^Done" "$BUILD/fuzz_$target.log" || true
  echo "   $(($(date +%s) - start))s, corpus $(find "$work" -type f | wc -l) inputs"
done
exit $status
