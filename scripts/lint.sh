#!/usr/bin/env bash
# lint.sh — the C++ lint of CI: (a) clang-format --dry-run --Werror over our sources (src/ and the
# fuzz targets; never the candidate kernels under tests/ and examples/, which are test data),
# (b) clang-tidy with the checks of .clang-tidy over src/, from build/compile_commands.json
# (configure build/ first: cmake -S . -B build) and (c) the one-definition rule over build/'s
# objects. Exits non-zero on any finding.
#
#   scripts/lint.sh            # all three
#   scripts/lint.sh format     # formatting only (no build folder needed)
#   scripts/lint.sh tidy [RE]  # clang-tidy only, on the files matching the regex RE
#   scripts/lint.sh odr        # our inline functions in the objects: one size per name
#
# The ODR check: an inline function (a constructor, say) is emitted in every object that uses it
# and the linker keeps one copy. Two types of one name in namespace cuda_agent (llm's and server's
# HttpResponse, until 2026-11-27) make two different functions of one name, and every caller gets
# the kept one: inlined away at -O2, a crash at -O0. The check lists our weak symbols whose size
# differs between objects; it sees most in an unoptimised build (CI's Check), few after inlining.
#
# clang-tidy's default set is every source of src/ but the *_test.cc (their headers are checked
# through the sources that include them): about 175 s on two idle cores, the tests would add 90 s.
# LINT_TIDY_SINCE=REV narrows it to the sources changed since REV (tests included) and those that
# include a changed header — for CI, LINT_TIDY_SINCE=HEAD^1 checks what the last merge brought in.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
BUILD="${LINT_BUILD_DIR:-build}"
JOBS="${LINT_JOBS:-2}"
status=0

if [ "$what" = all ] || [ "$what" = format ]; then
  echo "== clang-format"
  mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/fuzz/*.cc' 'tests/fuzz/*.h'; \
    git ls-files --others --exclude-standard 'src/*.cc' 'src/*.h' 'tests/fuzz/*.cc' 'tests/fuzz/*.h')
  if ! clang-format --dry-run --Werror "${files[@]}"; then
    echo "clang-format: run clang-format -i on the files above"
    status=1
  fi
fi

if [ "$what" = all ] || [ "$what" = tidy ]; then
  echo "== clang-tidy"
  if [ ! -f "$BUILD/compile_commands.json" ]; then
    echo "no $BUILD/compile_commands.json: configure first (cmake -S . -B $BUILD -G Ninja)"
    exit 1
  fi
  start=$(date +%s)
  # run-clang-tidy runs one clang-tidy per file of the compilation database in parallel; -quiet
  # prints only findings. Its exit status is not reliable across versions, so the output decides.
  log="$BUILD/clang-tidy.log"  # every finding, for a closer look
  files="${2:-^$PWD/src/.*(?<!_test)\.cc\$}"
  if [ -z "${2:-}" ] && [ -n "${LINT_TIDY_SINCE:-}" ]; then
    if ! changed=$(git diff --name-only "$LINT_TIDY_SINCE" -- 'src/*.cc' 'src/*.h' 2>/dev/null); then
      echo "cannot diff against $LINT_TIDY_SINCE: checking the default set"
    else
      sources=()
      for f in $changed; do
        [ -e "$f" ] || continue
        case "$f" in
          *.cc) sources+=("$f") ;;
          *.h) mapfile -t -O "${#sources[@]}" sources < <(git grep -l "#include \"${f#src/}\"" -- 'src/*.cc') ;;
        esac
      done
      if [ ${#sources[@]} -eq 0 ]; then
        echo "no C++ source changed since $LINT_TIDY_SINCE"
        exit $status
      fi
      mapfile -t sources < <(printf '%s\n' "${sources[@]}" | sort -u)
      echo "${#sources[@]} sources changed since $LINT_TIDY_SINCE"
      files="^$PWD/($(printf '%s|' "${sources[@]}" | sed 's/[.]/\\./g; s/|$//'))\$"
    fi
  fi
  # The build's precompiled header (CUDA_AGENT_PCH) is g++'s: clang cannot read it. clang-tidy gets
  # the compile commands without it (each source then parses its headers itself, as it should).
  database="$BUILD/tidy"
  mkdir -p "$database"
  sed -E 's# -Winvalid-pch -include [^ ]*/cmake_pch\.hxx##g' "$BUILD/compile_commands.json" \
    >"$database/compile_commands.json"
  # run-clang-tidy (14) always asks for colours: strip them so the findings can be matched.
  run-clang-tidy -p "$database" -j "$JOBS" -quiet -header-filter="^$PWD/src/" "$files" 2>&1 |
    sed 's/\x1b\[[0-9;]*m//g' >"$log" || true
  if grep -E "(warning|error): .*\[[a-z0-9.,-]+\]$|^Error while processing" "$log" >/dev/null; then
    grep -E -A3 "(warning|error): |^Error while processing" "$log"
    status=1
  fi
  echo "clang-tidy: $(($(date +%s) - start)) s"
fi
if [ "$what" = all ] || [ "$what" = odr ]; then
  echo "== one-definition rule"
  # _ZN10cuda_agent: names in our namespace (an anonymous namespace's are local symbols, not W).
  # The two plug-ins (jail, http) are libraries of their own, linked apart and built with -fPIC.
  found=$(find "$BUILD/CMakeFiles" -name '*.o' -not -path '*/cuda_agent_jail.dir/*' \
      -not -path '*/cuda_agent_http.dir/*' -print0 2>/dev/null | xargs -0 -r nm -S --defined-only -A 2>/dev/null |
    awk '$(NF-1) == "W" && $NF ~ /^_ZN10cuda_agent/ {
           object = $1; sub(/:.*/, "", object)
           if (!($NF in size)) { size[$NF] = $(NF-2); first[$NF] = object }
           else if (size[$NF] != $(NF-2)) print $NF "\t" first[$NF] "\t" object }' |
    sort -u -t$'\t' -k1,1)
  if [ -n "$found" ]; then
    while IFS=$'\t' read -r symbol a b; do
      echo "$(echo "$symbol" | c++filt) differs between ${a#"$BUILD/CMakeFiles/"} and ${b#"$BUILD/CMakeFiles/"}"
    done <<<"$found" | sort -u
    echo "one-definition rule: two definitions of one name in namespace cuda_agent: rename one"
    status=1
  fi
fi

exit $status
