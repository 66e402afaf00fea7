#!/usr/bin/env bash
# lint.sh — the lint of CI: (a) clang-format --dry-run --Werror over our sources (src/ and the
# fuzz targets; never the candidate kernels under tests/ and examples/, which are test data),
# (b) clang-tidy with the checks of .clang-tidy over src/, from build/compile_commands.json
# (configure build/ first: cmake -S . -B build), (c) one type per name among the headers,
# (d) ruff over the Python packages (python/) and (e) mypy over them, strict on the judging harness
# (both configured in pyproject.toml; scripts/setup.sh installs the pinned versions).
# Exits non-zero on any finding.
#
#   scripts/lint.sh            # all five
#   scripts/lint.sh format     # formatting only (no build folder needed)
#   scripts/lint.sh tidy [RE]  # clang-tidy only, on the files matching the regex RE
#   scripts/lint.sh odr        # one type per name among src/'s headers (no build folder needed)
#   scripts/lint.sh ruff       # ruff check (no build folder needed; < 1 s)
#   scripts/lint.sh types      # mypy (no build folder needed; ~40 s of CPU cold, a few s with its cache)
#
# The one-type-per-name check: two headers that define a type of one name in namespace cuda_agent
# (llm's and server's HttpResponse, until 2026-11-27) break the one-definition rule. Each object
# emits the inline functions it uses (the implicit constructor, say) and the linker keeps one copy
# per name, so every caller gets the kept one: inlined away at -O2, a crash at -O0. The check reads
# the headers' namespace-scope definitions (a declaration split over lines is not seen), so it holds
# at every optimisation level.
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

if [ "$what" = all ] || [ "$what" = odr ]; then
  echo "== one type per name"
  # Every header's types at namespace scope (column 0: our headers do not indent namespaces); a name
  # defined twice is two types to the compiler and one to the linker.
  found=$( (git ls-files 'src/*.h'; git ls-files --others --exclude-standard 'src/*.h') |
    xargs -r grep -HE '^(struct|class|union|enum class|enum) [A-Za-z_][A-Za-z0-9_]*( final)?( *:[^;{]*)? *\{' |
    sed -E 's/^([^:]+):(enum class|enum|struct|class|union) ([A-Za-z0-9_]+).*/\3 \1/' |
    awk '{ files[$1] = files[$1] " " $2; count[$1]++ }
         END { for (t in count) if (count[t] > 1) print t " is defined in more than one header:" files[t] }' |
    sort)
  if [ -n "$found" ]; then
    echo "$found"
    echo "one type per name: rename one of them (the one-definition rule; docs/decisions/ci.md)"
    status=1
  fi
fi

PYTHON="${CUDA_AGENT_PYTHON:-python3}"
if [ "$what" = all ] || [ "$what" = ruff ]; then
  echo "== ruff"
  # The rule set and the files are pyproject.toml's ([tool.ruff]); lint only, never `ruff format`.
  if ! "$PYTHON" -m ruff check --no-cache python; then
    echo "ruff: fix the findings above (a deliberate exception gets a '# noqa: CODE - why' comment)"
    status=1
  fi
fi

if [ "$what" = all ] || [ "$what" = types ]; then
  echo "== mypy"
  start=$(date +%s)
  # pyproject.toml's [tool.mypy]: strict on python/cuda_agent_harness, every function body checked
  # elsewhere. The cache (build/mypy-cache) makes a second run take seconds.
  mkdir -p "$BUILD"
  if ! "$PYTHON" -m mypy --cache-dir "$BUILD/mypy-cache"; then
    echo "mypy: fix the findings above"
    status=1
  fi
  echo "mypy: $(($(date +%s) - start)) s"
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
exit $status
