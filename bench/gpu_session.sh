#!/usr/bin/env bash
# gpu_session.sh — everything one GPU lease should run, in one command, results under $OUT.
#
#   bash bench/gpu_session.sh judge      # GPU judge scenarios, a smoke judgement, the workspace's own commands
#   bash bench/gpu_session.sh baselines L1,L2  # eager/compile baselines for the chosen tasks
#   bash bench/gpu_session.sh corpus     # the hack corpus and CUDA judge cases (4 at a time), GPU harness tests
#   bash bench/gpu_session.sh matrix     # the defence-in-depth matrix's GPU cells (docs/hacks.md): every CUDA
#                                        # case judged with the static rules skipped, 4 at a time, ≤ 300 s
#   bash bench/gpu_session.sh taskcheck  # cuda-agent tasks check over .gpu/kernelbench_all (all 250 tasks)
#   bash bench/gpu_session.sh bench      # baselines for all of .gpu/kernelbench_all, then `cuda-agent bench`
#                                        # over bench/candidates/kernelbench.py's candidates (resumable)
#   bash bench/gpu_session.sh latency PHASES  # bench/judge_latency.py (issue 5) with those phases
#   bash bench/gpu_session.sh throughput # issue 22's throughput at 8 concurrent: judge_latency's warmup, then
#                                        # THROUGHPUT_RUNS (default 2) throughput phases of THROUGHPUT_JOBS
#                                        # (32) judgements each, with the device's lease time line
#                                        # (bench/lease_timeline.py); resumable on a warm machine;
#                                        # THROUGHPUT_ARMS compares binaries or switches run by run;
#                                        # each run's JudgeResults in throughput_records.tar.gz
#   bash bench/gpu_session.sh step-ab    # the step of another build (OTHER_BIN, OTHER_ENV) and this one, alternately
#   bash bench/gpu_session.sh rl         # the GRPO demonstration (docs/toy_rl.md): `serve` on the GPU,
#                                        # python -m cuda_agent_rl against it, then every arm judged
#   bash bench/gpu_session.sh dist-gpu   # Redis workers on 1, 2, … GPUs of this host (queue bench, relu_scale)
#   bash bench/gpu_session.sh dist-probe # waves of concurrent judgements on GPU 0, then on every GPU: the
#                                        # JudgeResults' job phases, to see which grow with more GPUs busy
#   bash bench/gpu_session.sh host-line  # what of a profile job waits in the host's line (bench/host_line.py:
#                                        # 1 process, 4 on every GPU, 16 on GPU 0; the timed jobs' 2 queues
#                                        # and the driver's 8), then bench/stream_queues.py on GPU 0
#   bash bench/gpu_session.sh flaky      # HACKS B14: P(accept) of bench/flaky's candidates with and without
#                                        # the sampled checks (bench/flaky/flaky_accept.py)
#   bash bench/gpu_session.sh serve-overhead  # serve's overhead per tool call (bench/server_overhead.py), one
#                                        # client process per core up to 32
#   bash bench/gpu_session.sh ncu        # `cuda-agent profile --ncu` on the examples' cuda_correct
#                                        # candidates (JSON, text, raw CSV) + tests/ncu (issue 22), ≤ 180 s
#   bash bench/gpu_session.sh serve      # issue 19's row: 8 concurrent sessions through serve vs
#                                        # `bench --jobs 8`, same candidates (bench/server_throughput.py)
#   bash bench/gpu_session.sh kb-agreement  # KernelBench's own evaluator and ours side by side on 52
#                                        # real-world solutions (bench/kernelbench/agreement.py run), ≤ 9 min
#                                        # KB_RESUME=DIR KB_REJUDGE=disagreed,kind:state_dict: only
#                                        # those judged again by us, every other verdict kept (≤ 240 s)
#   bash bench/gpu_session.sh kb-realworld  # 48 honest real-world solutions through the whole judge
#                                        # (issue 46.1; agreement.py realworld), ≤ 9 min
#   bash bench/gpu_session.sh kb-bench   # `cuda-agent bench --solver kernelbench:.gpu/kb/bench/run --policy
#                                        # kernelbench` on 16 light problems of the staged sample, ≤ 240 s
#                                        # (all three need .gpu/kb: agreement.py stage, run here beforehand)
#   bash bench/gpu_session.sh dist       # the Redis queue on this host's CPUs: overhead, then 1/2/4/8
#                                        # CPU workers (bench/dist_scaling.py) with the carried redis-server
#
# Expects dist/bin/cuda-agent (scripts/bundle.sh; serve needs dist/bin's HTTP plug-in, dist needs
# dist/redis/) and, for baselines, .gpu/kernelbench (a copy of
# the chosen KernelBench tasks: ../shared does not travel to the GPU machine). pytest-xdist, when
# wanted, comes as .gpu/pylib (pip install --target; the GPU machine has no network).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/cuda-agent-out}"
mkdir -p "$OUT"
export CUDA_AGENT_HOME="${CUDA_AGENT_HOME:-$PWD}"  # another harness (python/, templates/): set it
export CUDA_AGENT_BIN="${CUDA_AGENT_BIN:-$PWD/dist/bin/cuda-agent}"  # another binary: set it
export CUDA_AGENT_CACHE_DIR="/tmp/cuda-agent-cache"
export PYTHONUNBUFFERED=1
BIN="$CUDA_AGENT_BIN"

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  nvcc --version | tail -1
  g++ --version | head -1
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# split_assignments TEXT NAME: "VAR=value,VAR=value" into the array NAME, split only at a comma that
# starts the next VAR= (a value may hold commas: CUDA_AGENT_LEASE_GATHER=4,1).
split_assignments() {
  mapfile -t "$2" < <(printf '%s' "$1" | sed -E 's/,([A-Za-z_][A-Za-z0-9_]*=)/\n\1/g')
}

# seed_baselines: the committed KernelBench baselines seed the judge's store (a drifted device
# re-measures them; keys hold the GPU model and the precision policy, so a seed serves only its
# kind). export_baselines: the store as it is now, to $OUT/baselines_store.jsonl — committed as
# bench/results/baselines/<date>-<gpu>.jsonl, it spares a later session's fresh machine the warm-up's
# measurements (minutes of device time).
seed_baselines() {
  mkdir -p "$CUDA_AGENT_CACHE_DIR"
  for f in bench/results/baselines/*.jsonl; do
    [ -f "$f" ] && "$BIN" baselines import "$f" --baseline-store "$CUDA_AGENT_CACHE_DIR/store.sqlite" >/dev/null
  done
}
export_baselines() {
  "$BIN" baselines export --baseline-store "$CUDA_AGENT_CACHE_DIR/store.sqlite" --out "$OUT/baselines_store.jsonl"
}

[ -d .gpu/pylib ] && export PYTHONPATH="$PWD/.gpu/pylib${PYTHONPATH:+:$PYTHONPATH}"

case "${1:-judge}" in
  corpus)
    echo "== cuobjdump of a built extension (for the SASS parser's fixture)"
    "$BIN" build --device cuda --candidate examples/relu_scale/candidates/cuda_correct --out /tmp/ext.so \
      > "$OUT/build.txt" 2>&1
    command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump
    { cuobjdump -sass /tmp/ext.so || /usr/local/cuda/bin/cuobjdump -sass /tmp/ext.so; } 2>&1 | head -c 20000 > "$OUT/sass_sample.txt"
    echo "== GPU harness tests"
    timeout 200 python3 -m pytest python/tests/test_gpu.py -q -p no:cacheprovider 2>&1 | tee "$OUT/harness_gpu.txt" | tail -4
    echo "== hack corpus + CUDA judge cases, 4 at a time"
    export CUDA_AGENT_TEST_CACHE_DIR=/tmp/cuda-agent-test-cache
    timeout "${CORPUS_TIMEOUT:-400}" python3 -m pytest tests/hacks tests/judge -q -p no:cacheprovider -n 4 \
      -k "${CORPUS_FILTER:-_cu or cuda or legit}" --junitxml="$OUT/corpus.xml" -rA 2>&1 | tee "$OUT/corpus.txt" | tail -40
    ;;
  matrix)
    # The run-time column of docs/hacks.md's matrix for the CUDA cases: each judged once with the static
    # rules switched off (the test-only `judge --test-skip-static`, honoured with CUDA_AGENT_TESTING=1,
    # which matrix.py sets for those judgements only), MATRIX_JOBS (4) judge processes at a time. The JSON
    # is rewritten after every case: no case starts after MATRIX_BUDGET seconds (200; those left are
    # "not-run"), and a second lease resumes from .gpu/hack_matrix_gpu.json when one was carried back.
    # Here: cp .../hack_matrix_gpu.json tests/hacks/matrix/gpu.json; python3 tests/hacks/matrix.py doc
    export CUDA_AGENT_TEST_CACHE_DIR=/tmp/cuda-agent-test-cache
    if [ -f .gpu/hack_matrix_gpu.json ] && [ ! -f "$OUT/hack_matrix_gpu.json" ]; then
      cp .gpu/hack_matrix_gpu.json "$OUT/hack_matrix_gpu.json"
    fi
    timeout "${MATRIX_TIMEOUT:-290}" python3 tests/hacks/matrix.py run --only runtime --case-device cuda \
      --jobs "${MATRIX_JOBS:-4}" --time-budget "${MATRIX_BUDGET:-200}" --resume --binary "$BIN" \
      --cache-dir "$CUDA_AGENT_TEST_CACHE_DIR" --out "$OUT/hack_matrix_gpu.json" 2>&1 | tee "$OUT/matrix.txt" | tail -40
    python3 - "$OUT/hack_matrix_gpu.json" <<'PY'
import collections, json, sys
cases = json.load(open(sys.argv[1]))["cases"]
count = collections.Counter(e["runtime"]["result"] for e in cases.values())
print("runtime cells:", dict(count))
for name, e in sorted(cases.items()):
    if e["runtime"]["result"] in ("missed", "refused", "error", "not-run"):
        print(f"  {name}: {e['runtime']['result']} {e['runtime'].get('reason', '')[:150]}")
PY
    ;;
  taskcheck)
    # --progress: a second lease resumes where this one stopped (same seed).
    timeout "${TASKCHECK_TIMEOUT:-500}" "$BIN" tasks check .gpu/kernelbench_all --device cuda --policy all \
      --task-timeout 120 --progress "${TASKCHECK_PROGRESS:-$OUT/task_check.jsonl}" \
      --out "$OUT/task_check.md" --json > "$OUT/task_check.json" 2> "$OUT/task_check.err"
    echo "exit $?"; tail -5 "$OUT/task_check.err"; head -40 "$OUT/task_check.md"
    ;;
  judge)
    echo "== smoke: relu_scale/cuda_correct"
    "$BIN" judge --task examples/relu_scale/model.py --candidate examples/relu_scale/candidates/cuda_correct \
      --device cuda --keep-work 2>&1 | tee "$OUT/smoke.txt"
    echo "== judge scenarios (tests/judge, CUDA cases)"
    timeout 300 python3 -m pytest tests/judge -q -p no:cacheprovider -k cuda --durations=0 2>&1 \
      | tee "$OUT/judge_cases.txt" | tail -25
    echo "== workspace flow: published-layout candidate through utils/"
    rm -rf /tmp/ws && "$BIN" workspace init --task examples/relu_scale/model.py --device cuda /tmp/ws
    cp -r examples/relu_scale/candidates/cuda_published_layout/* /tmp/ws/
    (cd /tmp/ws && bash utils/compile.sh && python3 -m utils.verification && python3 -m utils.profiling) \
      2>&1 | tee "$OUT/workspace_flow.txt"
    ;;
  sandbox)
    "$BIN" sandbox info | tee "$OUT/sandbox_info.txt"
    echo "== abuse probes"
    timeout 120 python3 -m pytest tests/sandbox -q -p no:cacheprovider 2>&1 | tee "$OUT/probes.txt" | tail -3
    echo "== start-up cost"
    python3 bench/sandbox_startup.py --repeats 10 --torch --gpu --out "$OUT/sandbox_startup.json"
    CASE="--task examples/relu_scale/model.py --device cuda --json"
    echo "== a never-ending kernel, then the next job on the same GPU"
    "$BIN" judge $CASE --candidate examples/relu_scale/candidates/cuda_hang --timeout 30 > "$OUT/hang.json"
    "$BIN" judge $CASE --candidate examples/relu_scale/candidates/cuda_correct > "$OUT/after_hang.json"
    echo "== a job that takes all GPU memory, then the next job"
    "$BIN" sandbox run --gpu --json --timeout 120 --memory 0 --read-only "$PWD" --cwd "$PWD" \
      -- python3 tests/sandbox/gpu_memory_hog.py > "$OUT/hog.json"
    "$BIN" judge $CASE --candidate examples/relu_scale/candidates/cuda_correct > "$OUT/after_hog.json"
    python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
for name in ("hang", "after_hang", "after_hog"):
    r = json.load(open(os.path.join(out, name + ".json")))
    print(f"{name:11s} reward={r['reward']} stage={r['stage']} sandbox={r['env']['sandbox']} "
          f"total={r['stage_seconds'].get('total', 0):.1f}s reason={r['reason'][:120]}")
h = json.load(open(os.path.join(out, "hog.json")))
print(f"hog         isolation={h['isolation']} ended={h['ended']} stdout={h['stdout'].strip()[:100]} "
      f"host_uid_dropped={h['host_uid_dropped']}")
PY
    echo "== judge scenarios (CUDA) under the sandbox"
    timeout 280 python3 -m pytest tests/judge -q -p no:cacheprovider -k cuda 2>&1 | tail -4
    ;;
  bench)
    # (1) eager and torch.compile baselines of every task of .gpu/kernelbench_all, (2) unless BENCH_SKIP
    # is set, the candidates of bench/candidates/kernelbench.py judged as a benchmark, reports in
    # $OUT/bench-reports.tar.gz (the folder $OUT/bench, packed: a device call returns at most 8
    # files). Everything resumes: results live in one SQLite store, $BENCH_STORE (default
    # $OUT/bench-store.sqlite), which starts as .gpu/bench-store.sqlite when one was carried back from an
    # earlier lease (copy $OUT/bench-store.sqlite there), plus the committed bench/results/baselines/*.jsonl.
    # One command has 10 minutes: BENCH_BUDGET seconds (default 540) are shared by both steps.
    STORE="${BENCH_STORE:-$OUT/bench-store.sqlite}"
    LEVELS="${BENCH_LEVELS:-1,2,3}"
    JOBS="${BENCH_JOBS:-4}"
    BUDGET="${BENCH_BUDGET:-540}"
    start=$SECONDS
    if [ ! -f "$STORE" ] && [ -f .gpu/bench-store.sqlite ]; then cp .gpu/bench-store.sqlite "$STORE"; fi
    for f in bench/results/baselines/*.jsonl; do
      [ -f "$f" ] && "$BIN" baselines import "$f" --baseline-store "$STORE"
    done
    timeout "$((BUDGET - 90))" "$BIN" baselines .gpu/kernelbench_all --device cuda --levels "$LEVELS" \
      --baseline-store "$STORE" --jobs "$JOBS" > "$OUT/baselines.txt" 2> "$OUT/baselines.err"
    echo "baselines exit $? (124: out of time; run this mode again to resume)"
    tail -30 "$OUT/baselines.txt"
    "$BIN" baselines export --baseline-store "$STORE" --out "$OUT/baselines.jsonl"
    if [ -z "${BENCH_SKIP:-}" ]; then
      python3 bench/candidates/kernelbench.py /tmp/kernelbench-candidates > /dev/null
      left=$((BUDGET - (SECONDS - start))); [ "$left" -lt 60 ] && left=60
      timeout "$left" "$BIN" bench .gpu/kernelbench_all --solver solutions:/tmp/kernelbench-candidates \
        --device cuda --levels "$LEVELS" --store "$STORE" --baseline-store "$STORE" --baseline-max-age 0 \
        --jobs "$JOBS" --out "$OUT/bench" > "$OUT/bench.txt" 2> "$OUT/bench.err"
      echo "bench exit $?"; cat "$OUT/bench.txt"; tail -5 "$OUT/bench.err"
      [ -f "$OUT/bench/report.md" ] && head -30 "$OUT/bench/report.md"
      # One archive: a device call brings back at most 8 files.
      [ -d "$OUT/bench" ] && tar -C "$OUT" -czf "$OUT/bench-reports.tar.gz" bench && rm -rf "$OUT/bench"
    else
      echo "BENCH_SKIP: bench step skipped"
    fi
    ;;
  latency)
    # Records go to $LATENCY_DIR (default: under $OUT), so consecutive leases of one warm machine
    # resume; the summary is copied to $OUT.
    LATENCY_DIR="${LATENCY_DIR:-/tmp/judge-latency}"
    mkdir -p "$LATENCY_DIR"
    seed_baselines
    timeout "${LATENCY_TIMEOUT:-540}" python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all \
      --out "$LATENCY_DIR" --phases "${2:-warmup,ours,rebuild,cv,report}" ${LATENCY_ARGS:-} 2>&1 | tee -a "$OUT/latency.log"
    python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all --out "$LATENCY_DIR" --phases report >/dev/null
    tar -C "$LATENCY_DIR" -czf "$OUT/latency.tar.gz" --exclude='*.so' . && cp "$LATENCY_DIR/summary.md" "$OUT/" 2>/dev/null
    ls "$CUDA_AGENT_CACHE_DIR" 2>/dev/null; ls /tmp/cuda-agent-*/ 2>/dev/null | head
    export_baselines
    ;;
  step-ab)
    # The step of two builds, alternately (the other, this one, the other, this one: STEP_AB_ROUNDS
    # rounds), one repeat of the 14 cases each, every run primed with one unmeasured step so that
    # it starts with a standby profile job of its own key. The other: OTHER_BIN (a binary) and/or
    # OTHER_ENV ("VAR=v,VAR=v": e.g. CUDA_AGENT_HOME=DIR, another harness). STEP_AB_WARMUP=0: a
    # machine already warmed by an earlier mode of the same call.
    OTHER_ENV="${OTHER_ENV:-}"
    [ -n "${OTHER_BIN:-}" ] && OTHER_ENV="CUDA_AGENT_BIN=$OTHER_BIN${OTHER_ENV:+,$OTHER_ENV}"
    [ -n "$OTHER_ENV" ] || { echo "step-ab: set OTHER_BIN (e.g. .gpu/dist-head/bin/cuda-agent) or OTHER_ENV" >&2; exit 2; }
    split_assignments "$OTHER_ENV" other_env
    seed_baselines
    if [ "${STEP_AB_WARMUP:-1}" != 0 ]; then
      python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all --out /tmp/step-ab/warm \
        --phases warmup 2>&1 | tail -2
    fi
    i=0
    for _ in $(seq "${STEP_AB_ROUNDS:-2}"); do
      for arm in other this; do
        i=$((i + 1)); assignments=("CUDA_AGENT_BIN=$BIN"); [ $arm = other ] && assignments=("${other_env[@]}")
        rm -rf /tmp/step-ab/prime "/tmp/step-ab/${arm}_$i"  # no records of an earlier call resumed
        env "${assignments[@]}" python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all \
          --out /tmp/step-ab/prime --phases ours --repeats 1 --only examples/relu_scale > /dev/null 2>&1
        env "${assignments[@]}" timeout 150 python3 bench/judge_latency.py --device cuda \
          --suite .gpu/kernelbench_all --out "/tmp/step-ab/${arm}_$i" --phases ours --repeats 1 > /dev/null 2>&1
        cp "/tmp/step-ab/${arm}_$i/ours.jsonl" "$OUT/ours_${arm}_$i.jsonl"
        python3 -c "import json,statistics as s,sys; w=[json.loads(l)['wall_s'] for l in open(sys.argv[1])]; \
print(sys.argv[1], len(w), 'steps, p50 %.2f s' % s.median(w))" "$OUT/ours_${arm}_$i.jsonl"
      done
    done
    ;;
  throughput)
    LATENCY_DIR="${LATENCY_DIR:-/tmp/judge-latency}"
    mkdir -p "$LATENCY_DIR"
    seed_baselines
    deadline=$((SECONDS + ${THROUGHPUT_TIMEOUT:-560}))
    # THROUGHPUT_WARMUP: passes over the 14 cases before the measured runs (0: a warm machine's later
    # call). A second pass re-measures the baselines the first judged against the stored seeds before
    # the device's level was known (docs/decisions/baseline-drift.md), which a measured run would do.
    for w in $(seq "${THROUGHPUT_WARMUP:-1}"); do
      timeout $((deadline - SECONDS)) python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all \
        --out "$LATENCY_DIR/warm_$w" --phases warmup 2>&1 | tail -3 | tee -a "$OUT/throughput.log"
      cp "$LATENCY_DIR/warm_$w/warmup.jsonl" "$OUT/warmup_$w.jsonl" 2>/dev/null
    done
    # THROUGHPUT_ARMS: "label=VAR=value,VAR=value label2= ..." — each run goes through the arms in
    # turn (the arm's variables set for its judgements: another binary, a switch), so that arms are
    # compared within one lease; the default is one arm with nothing changed; e.g. "main=
    # nogather=CUDA_AGENT_LEASE_GATHER=off home=CUDA_AGENT_HOME=/path/to/other/harness". THROUGHPUT_PRIME=N
    # runs N unmeasured judgements of the arm before each measured run.
    for i in $(seq "${THROUGHPUT_RUNS:-2}"); do
      for arm in ${THROUGHPUT_ARMS:-run=}; do
        label="${arm%%=*}"
        split_assignments "${arm#*=}" assignments
        dir="$LATENCY_DIR/${label}_$i"
        # A fresh folder: judge_latency.py resumes from the records it finds, so a second call on a
        # warm machine would report the first call's run as its own.
        rm -rf "$dir" && mkdir -p "$dir"
        echo "== throughput $label run $i: ${assignments[*]}" | tee -a "$OUT/throughput.log"
        if [ "${THROUGHPUT_PRIME:-0}" -gt 0 ]; then
          # Unmeasured judgements first, so that every arm starts with the standby profile jobs of
          # its own key waiting (an arm after another binary's would otherwise start with none).
          rm -rf "$LATENCY_DIR/prime" && mkdir -p "$LATENCY_DIR/prime"
          timeout $((deadline - SECONDS)) env "${assignments[@]}" python3 bench/judge_latency.py --device cuda \
            --suite .gpu/kernelbench_all --out "$LATENCY_DIR/prime" --phases throughput --concurrency 8 \
            --throughput-jobs "$THROUGHPUT_PRIME" > /dev/null 2>&1
        fi
        timeout $((deadline - SECONDS)) env "${assignments[@]}" python3 bench/judge_latency.py --device cuda \
          --suite .gpu/kernelbench_all --out "$dir" --phases throughput --concurrency 8 \
          --throughput-jobs "${THROUGHPUT_JOBS:-32}" 2>&1 | grep '^throughput' | tee -a "$OUT/throughput.log"
        cp "$dir/throughput_judgements.jsonl" "$OUT/judgements_${label}_$i.jsonl" 2>/dev/null
      done
    done
    export_baselines
    # At most 8 files come back from the GPU machine: the runs' and warm-ups' records in one archive
    # (four arms of two runs were 13 files, and five did not come back).
    (cd "$OUT" && shopt -s nullglob && records=(judgements_*.jsonl warmup_*.jsonl)
     if [ ${#records[@]} -gt 0 ] && tar -czf throughput_records.tar.gz "${records[@]}"; then rm -f "${records[@]}"; fi)
    ;;
  rl)
    # `serve` needs its HTTP plug-in and cpp-httplib next to the binary (scripts/bundle.sh).
    export LD_LIBRARY_PATH="$PWD/dist/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    PORT="${RL_PORT:-8391}"
    "$BIN" serve --port "$PORT" --state-dir /tmp/rl-serve --judge-workers "${RL_JUDGE_WORKERS:-8}" \
      --queue-per-device 256 > "$OUT/rl_serve.log" 2>&1 &
    SERVE_PID=$!
    python3 - "$PORT" > "$OUT/rl_health.json" <<'PY'
import sys, time, urllib.request
for _ in range(300):
    try:
        print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/health", timeout=1).read().decode()); break
    except OSError:
        time.sleep(0.2)
PY
    PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" timeout "${RL_TIMEOUT:-480}" python3 -m cuda_agent_rl \
      --server "http://127.0.0.1:$PORT" --device cuda --steps "${RL_STEPS:-300}" --group 8 \
      --concurrency "${RL_JUDGE_WORKERS:-8}" --max-minutes "${RL_MAX_MINUTES:-6}" --sweep --out "$OUT/rl" \
      2>&1 | tee "$OUT/rl.log" | tail -60
    kill -TERM "$SERVE_PID"; wait "$SERVE_PID"
    ;;
  ncu)
    # Issue 22 (docs/ncu.md): the report of each example's cuda_correct candidate as text (stdout),
    # JSON (--json-out) and ncu's raw CSV (--raw-out), the three at once (their builds overlap; the
    # ncu runs take the exclusive lease one after the other), then tests/ncu on the warm cache. A
    # device call brings back 8 files: everything is packed into ncu.tar.gz, the relu_scale report
    # and raw CSV (the parser's real fixture) are copied beside it.
    start=$SECONDS
    NCU_DIR="$OUT/ncu"
    mkdir -p "$NCU_DIR" "$CUDA_AGENT_CACHE_DIR"
    export CUDA_AGENT_TEST_CACHE_DIR="$CUDA_AGENT_CACHE_DIR"
    {
      echo "== ncu"; command -v ncu || ls -l /usr/local/cuda/bin/ncu
      { ncu --version || /usr/local/cuda/bin/ncu --version; } 2>&1 | tail -2
      echo "== driver: RmProfilingAdminOnly (1: counters for administrators only)"
      grep -i profiling /proc/driver/nvidia/params 2>&1
      id; "$BIN" sandbox info
    } > "$NCU_DIR/diag.txt" 2>&1
    cat "$NCU_DIR/diag.txt"
    pids=()
    for ex in relu_scale linear_gelu rowwise_softmax; do
      ( timeout "${NCU_PROFILE_TIMEOUT:-110}" "$BIN" profile --ncu --device cuda --task "examples/$ex/model.py" \
          --candidate "examples/$ex/candidates/cuda_correct" --json-out "$NCU_DIR/$ex.json" \
          --raw-out "$NCU_DIR/$ex.raw.csv" > "$NCU_DIR/$ex.txt" 2> "$NCU_DIR/$ex.err"
        echo "$ex: exit $?" >> "$NCU_DIR/exits.txt" ) &
      pids+=($!)
    done
    wait "${pids[@]}"
    cat "$NCU_DIR/exits.txt"
    for ex in relu_scale linear_gelu rowwise_softmax; do echo "== $ex"; cat "$NCU_DIR/$ex.txt"; tail -3 "$NCU_DIR/$ex.err"; done
    # Counters refused inside the sandbox: is it the sandbox (uid 65534, no capabilities) or the
    # machine? The same trusted example once without the sandbox tells.
    if grep -q '"status": "not_permitted"' "$NCU_DIR/relu_scale.json" 2>/dev/null; then
      CUDA_AGENT_SANDBOX=none timeout 60 "$BIN" profile --ncu --device cuda --task examples/relu_scale/model.py \
        --candidate examples/relu_scale/candidates/cuda_correct --raw-out "$NCU_DIR/relu_scale.nosandbox.raw.csv" \
        > "$NCU_DIR/relu_scale.nosandbox.txt" 2>&1
      echo "== without the sandbox (exit $?)"; cat "$NCU_DIR/relu_scale.nosandbox.txt"
    fi
    left=$((175 - (SECONDS - start))); [ "$left" -lt 30 ] && left=30
    echo "== tests/ncu ($left s)"
    timeout "$left" python3 -m pytest tests/ncu -q -p no:cacheprovider -rA 2>&1 | tee "$OUT/ncu_tests.txt" | tail -15
    cp "$NCU_DIR/relu_scale.txt" "$NCU_DIR/relu_scale.raw.csv" "$OUT/" 2>/dev/null
    tar -C "$OUT" -czf "$OUT/ncu.tar.gz" ncu && rm -rf "$NCU_DIR"
    echo "ncu mode: $((SECONDS - start)) s"
    ;;
  serve)
    # 16 distinct candidates (copies of relu_scale, linear_gelu, rowwise_softmax with cuda_correct)
    # per run, through serve with 8 session clients and through bench --jobs 8, twice each, order
    # alternating; without baselines (both paths alike). About 4 × 16 judgements at 8 at once plus a
    # warm-up: ≤ 240 s on an H100 at ~8 s a judgement. The JSON is written after every run.
    timeout "${SERVE_TIMEOUT:-240}" python3 bench/server_throughput.py --binary "$BIN" --device cuda \
      --threads "${SERVE_THREADS:-8}" --count "${SERVE_COUNT:-16}" --repeats "${SERVE_REPEATS:-2}" \
      --mode "${SERVE_MODE:-session}" --out "$OUT/server-throughput" 2>&1 | tee "$OUT/server_throughput.txt"
    echo "server_throughput exit ${PIPESTATUS[0]} (124: out of time; the runs so far are in the JSON)"
    ;;
  dist)
    # Debian's redis-server carried in dist/redis/ (scripts/bundle.sh): the GPU machine has none.
    export CUDA_AGENT_REDIS_SERVER="${CUDA_AGENT_REDIS_SERVER:-$PWD/dist/redis/redis-server}"
    "$CUDA_AGENT_REDIS_SERVER" --version || { echo "no runnable redis-server at $CUDA_AGENT_REDIS_SERVER"; exit 1; }
    # One repeat of 1, 2, 4, 8 CPU workers over the 16 cores (max(4, 4N) judgements each, 2N in
    # flight), after 500 no-op jobs for the queue's overhead: ≤ 300 s. Records in $OUT/dist.
    timeout "${DIST_TIMEOUT:-300}" python3 bench/dist_scaling.py --binary "$BIN" --cores "$(nproc)" \
      --workers "${DIST_WORKERS:-1,2,4,8}" --repeats "${DIST_REPEATS:-1}" --jobs "${DIST_JOBS:-4}" \
      --noop-jobs 500 --out "$OUT/dist" 2>&1 | tee "$OUT/dist_scaling.txt"
    echo "dist_scaling exit ${PIPESTATUS[0]} (124: out of time; the runs so far are in $OUT/dist)"
    ;;
  flaky)
    # HACKS B14: P(accept) of the flaky candidates with the sampled checks (the default) and without
    # them (--sampled-checks 0), FLAKY_RUNS judgements each, 4 at a time (bench/flaky/flaky_accept.py).
    seed_baselines
    RUNS="${FLAKY_RUNS:-24}"
    SKIP8=examples/relu_scale/model.py:tests/hacks/b14_flaky_skip_cu
    SKIP32=examples/relu_scale/model.py:bench/flaky/candidates/skip_1in32
    RACY=tests/hacks/tasks/wide_row_sum.py:tests/hacks/b14_racy_row_sum_cu
    UNINIT=examples/relu_scale/model.py:tests/hacks/b14_uninit_accumulate_cu
    "$BIN" judge --task examples/relu_scale/model.py --candidate examples/relu_scale/candidates/cuda_correct \
      --json --baselines eager > "$OUT/flaky_correct.json" 2>&1
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('correct candidate:', r['correct'], \
r['reward'], r['verify'].get('sampled_checks'))" "$OUT/flaky_correct.json"
    timeout "${FLAKY_TIMEOUT:-420}" python3 bench/flaky/flaky_accept.py --binary "$BIN" --runs "$RUNS" --jobs 4 \
      --out "$OUT/flaky_on.json" "$SKIP8" "$SKIP32" "$RACY" "$UNINIT" | tail -60
    timeout "${FLAKY_TIMEOUT:-300}" python3 bench/flaky/flaky_accept.py --binary "$BIN" --runs "$RUNS" --jobs 4 \
      --out "$OUT/flaky_off.json" "$SKIP8" "$SKIP32" "$RACY" -- --sampled-checks 0 | tail -40
    ;;
  serve-overhead)
    # One client process per core up to 32: 8 Python processes cap the clients near 25,000 calls/s.
    CLIENTS=$(( $(nproc) < 32 ? $(nproc) : 32 ))
    echo "== serve's overhead per call (bench/server_overhead.py), $(nproc) cores, $CLIENTS client processes"
    timeout 240 python3 bench/server_overhead.py --bin "$BIN" --repeat 3 --processes "$CLIENTS" \
      --json "$OUT/server_overhead.json" 2>&1 | tail -30
    ;;
  dist-gpu)
    # Judged per hour against GPUs on one host (issue 20's GPU rows): one `cuda-agent worker --device
    # cuda --gpus G --consumers DISTGPU_CONSUMERS` (4 per GPU) for G = 0, then 0,1, ... up to every GPU;
    # `queue bench` submits DISTGPU_PER_GPU (24) × GPUs distinct copies of relu_scale's cuda_correct (each
    # one compiled), 2 × consumers per GPU in flight, after a warm-up of as many jobs at once (every
    # consumer's caches, standby profile jobs and each GPU's own baselines). One shared cache folder, as
    # on a host. bench/worker_stages.py reads the workers' logs: median stage times per GPU;
    # bench/cpu_meter.py the host's CPU over the measured run (busy cores, core-seconds per judgement);
    # results_N.jsonl every measured judgement's whole result (stage and job times).
    export CUDA_AGENT_REDIS_SERVER="${CUDA_AGENT_REDIS_SERVER:-$PWD/dist/redis/redis-server}"
    RPORT=6391; URL="redis://127.0.0.1:$RPORT/0"
    "$CUDA_AGENT_REDIS_SERVER" --port "$RPORT" --save '' --appendonly no > "$OUT/redis.log" 2>&1 &
    REDIS_PID=$!; sleep 1
    NGPU=$(nvidia-smi -L | wc -l); SET=""
    TASK=(--task examples/relu_scale/model.py --candidate examples/relu_scale/candidates/cuda_correct --device cuda)
    GPUSETS=""
    for g in $(seq 0 $((NGPU - 1))); do SET="${SET:+$SET,}$g"; GPUSETS="$GPUSETS $SET"; done
    # DISTGPU_ORDER (e.g. "0 0,1 0"): the GPU sets in the order run; a set run twice is measured twice.
    RUN=0
    for SET in ${DISTGPU_ORDER:-$GPUSETS}; do
      N=$(echo "$SET" | tr ',' '\n' | wc -l); RUN=$((RUN + 1))
      C="${DISTGPU_CONSUMERS:-4}"
      "$BIN" worker --redis "$URL" --device cuda --gpus "$SET" --consumers "$C" --cache-dir /tmp/distgpu-cache \
        > "$OUT/worker_$RUN.log" 2>&1 &
      WPID=$!
      "$BIN" queue bench --redis "$URL" "${TASK[@]}" --count $((2 * C * N)) --concurrency $((2 * C * N)) \
        --json > "$OUT/distgpu_warmup_$RUN.json" 2>&1
      MARK=$(wc -l < "$OUT/worker_$RUN.log")  # the worker's own lines after this are the measured run's
      COUNT=$(("${DISTGPU_PER_GPU:-24}" * N))
      python3 bench/cpu_meter.py snap "$OUT/cpu_before.json"  # the host's CPU over the measured run
      "$BIN" queue bench --redis "$URL" "${TASK[@]}" --count "$COUNT" \
        --concurrency $((2 * C * N)) --results "$OUT/results_$RUN.jsonl" \
        --json > "$OUT/distgpu_$RUN.json" 2>> "$OUT/distgpu.err"
      python3 bench/cpu_meter.py snap "$OUT/cpu_after.json"
      python3 bench/cpu_meter.py diff "$OUT/cpu_before.json" "$OUT/cpu_after.json" --jobs "$COUNT" \
        > "$OUT/cpu_$RUN.json"
      python3 -c "import json,sys; r=json.load(open(sys.argv[1])); c=json.load(open(sys.argv[4])); print('run', sys.argv[3], 'GPUs', sys.argv[2], ':', round(r['jobs_per_hour']), 'judged/h, p50', round(r['latency_ms']['p50']/1000,1), 's, outcomes', r.get('outcomes'), '; CPU', c['mean_busy_cores'], 'of', c['cpus'], 'cores busy,', c['core_s_per_job'], 'core-s per judgement (system', c['core_s']['system'], ')')" "$OUT/distgpu_$RUN.json" "$SET" "$RUN" "$OUT/cpu_$RUN.json"
      kill -TERM "$WPID"; wait "$WPID"
      tail -n +$((MARK + 1)) "$OUT/worker_$RUN.log" > "$OUT/worker_${RUN}_measured.log"
      python3 bench/worker_stages.py "$OUT/worker_${RUN}_measured.log" --json "$OUT/stages_$RUN.json"
    done
    kill "$REDIS_PID"
    # few files come back from the GPU machine: the logs and per-run records in one archive
    (cd "$OUT" && tar -czf distgpu.tar.gz worker_*.log stages_*.json distgpu_*.json cpu_*.json results_*.jsonl \
      redis.log distgpu.err && rm -f worker_*.log stages_*.json distgpu_warmup_*.json cpu_before.json \
      cpu_after.json results_*.jsonl)
    ;;
  dist-probe)
    # Where a judgement's time goes when several GPUs of one host judge at once (issue 20): waves of
    # PROBE_PER_GPU (4) concurrent `cuda-agent judge` processes per GPU (distinct copies of relu_scale's
    # cuda_correct, one shared cache folder as the workers have), on GPU 0 alone, then on every GPU;
    # PROBE_WAVES (3) waves each, the first a warm-up. The JudgeResults (jobs with their phases) go to
    # one JSONL per set; `top` is sampled in the middle of the last wave on every GPU.
    NGPU=$(nvidia-smi -L | wc -l); ALL=$(seq -s, 0 $((NGPU - 1)))
    K="${PROBE_PER_GPU:-4}"; export CUDA_AGENT_CACHE_DIR=/tmp/probe-cache
    base=examples/relu_scale/candidates/cuda_correct
    for SET in 0 "$ALL"; do
      for wave in $(seq 1 "${PROBE_WAVES:-3}"); do
        pids=()
        for g in ${SET//,/ }; do
          for k in $(seq 1 "$K"); do
            c=/tmp/probe-cands/$SET-$wave-$g-$k; rm -rf "$c"; mkdir -p "$c"; cp -r "$base"/. "$c"/
            echo "// probe $SET $wave $g $k $RANDOM" >> "$c/kernels/relu_scale.cu"
            CUDA_VISIBLE_DEVICES=$g "$BIN" judge --task examples/relu_scale/model.py --candidate "$c" \
              --device cuda --json > "/tmp/probe-cands/$SET-$wave-$g-$k.json" 2>/dev/null &
            pids+=($!)
          done
        done
        [ "$SET" = "$ALL" ] && [ "$wave" = "${PROBE_WAVES:-3}" ] && (sleep 4; top -b -n 1 | head -45 > "$OUT/top.txt") &
        wait "${pids[@]}"
        python3 - "$SET" "$wave" /tmp/probe-cands/"$SET-$wave"-*.json >> "$OUT/probe_${SET//,/_}.jsonl" <<'PY'
import json, sys
for path in sys.argv[3:]:
    try:
        r = json.load(open(path))
    except Exception as exc:  # noqa: BLE001
        r = {"error": str(exc)}
    r.pop("build", None); r.pop("timing", None)
    print(json.dumps({"set": sys.argv[1], "wave": int(sys.argv[2]), "file": path, **r}))
PY
        echo "set $SET wave $wave: $(python3 -c "import json,sys,statistics;rs=[json.loads(l) for l in open(sys.argv[1]) if json.loads(l)['wave']==int(sys.argv[2])];print(len(rs),'judged, total p50',round(statistics.median(r['stage_seconds']['total'] for r in rs),2),'s')" "$OUT/probe_${SET//,/_}.jsonl" "$wave")"
      done
    done
    ;;
  host-line)
    # Issue 20: each CUDA step of a profile job behind a barrier; the step's span / processes is one
    # process's share of the host's one line of driver work (docs/benchmarks.md, docs/decisions/host-scaling.md).
    NGPU=$(nvidia-smi -L | wc -l); PER=$(printf '4,%.0s' $(seq 1 "$NGPU")); PER=${PER%,}
    timeout 480 python3 bench/host_line.py --layouts 1 "$PER" 16 --variants CUDA_DEVICE_MAX_CONNECTIONS=2 - \
      --repeats 2 --json "$OUT/host_line.json"
    CUDA_VISIBLE_DEVICES=0 timeout 90 python3 bench/stream_queues.py --queues 1 2 8 --json "$OUT/stream_queues.json"
    ;;
  kb-agreement|kb-realworld)
    # Issue 47.4 / 46.1, each ONE call (bench/kernelbench/agreement.py; its docstring says how): the
    # staging .gpu/kb (made here by `python3 bench/kernelbench/agreement.py stage --out .gpu/kb`)
    # travels with the working tree, dist/ is carried. Nothing starts after KB_DEADLINE s (460), all is
    # killed 30 s later; every result is appended to JSONL as it comes, the table rewritten, so a cut-off
    # run still has one. KB_RESUME=DIR: keep the verdicts of an earlier call's results (carried back into
    # the tree, e.g. .gpu/kb-results-1); with KB_REJUDGE=SPEC (kb-agreement) ours judges only those again
    # (ids and rules, comma-separated: disagreed, kind:KIND, unjudged; agreement.py rejudge_ids) and
    # KernelBench's side only what the earlier call lacks of them. Few files come back: the results
    # folder as one archive, plus its table and summary. KB_DRY_RUN=1: the CPU plumbing test
    # (agreement.py --dry-run).
    seed_baselines
    mkdir -p /tmp/kb-agreement-work
    df -h /tmp | tail -1
    if [ "$1" = kb-agreement ]; then
      STEP=run; NAME=kb-agreement; TABLE=table.md
      EXTRA=(--compile-jobs "${KB_COMPILE_JOBS:-8}" --policy "${KB_POLICY:-kernelbench}")
      [ -n "${KB_REJUDGE:-}" ] && EXTRA+=(--rejudge "$KB_REJUDGE")
    else
      STEP=realworld; NAME=kb-realworld; TABLE=realworld.md; EXTRA=(--policy "${KB_RW_POLICY:-strict}")
    fi
    timeout -k 5 "${KB_TIMEOUT:-530}" python3 bench/kernelbench/agreement.py "$STEP" --prepared .gpu/kb \
      --out "$OUT/$NAME" --binary "$BIN" --jobs "${KB_JOBS:-3}" --deadline-s "${KB_DEADLINE:-460}" \
      ${KB_RESUME:+--resume "$KB_RESUME"} ${KB_DRY_RUN:+--dry-run} "${EXTRA[@]}" > "$OUT/$NAME.log" 2>&1
    echo "exit $? (124: the outer timeout)"; tail -15 "$OUT/$NAME.log"
    if [ "$1" = kb-agreement ]; then
      python3 bench/kernelbench/agreement.py report --results "$OUT/$NAME" > /dev/null
    else
      python3 bench/kernelbench/agreement.py report-realworld --results "$OUT/$NAME" > /dev/null
    fi
    cp "$OUT/$NAME/$TABLE" "$OUT/$NAME-$TABLE"; cp "$OUT/$NAME/summary.json" "$OUT/$NAME-summary.json"
    mv "$OUT/$NAME.log" "$OUT/$NAME/"
    tar -C "$OUT" -czf "$OUT/$NAME.tgz" "$NAME" && rm -rf "${OUT:?}/$NAME"
    head -20 "$OUT/$NAME-$TABLE"
    df -h /tmp | tail -1
    ;;
  kb-bench)
    # Issue 47's Done-when: `cuda-agent bench --solver kernelbench:DIR` on a public sample, ONE call of
    # ≤ 240 s. DIR is .gpu/kb/bench/run, a KernelBench run folder (scripts/generate_samples.py's names,
    # level_L_problem_P_sample_0_kernel.py) written by `agreement.py stage` (or `stage-bench`) from the
    # staged honest and hybrid solutions: the 16 lightest problems, one solution each, their tasks in
    # .gpu/kb/bench/suite (BENCH.json maps each file to its solution). Judged under --policy kernelbench
    # with the eager baseline only (torch.compile's would take minutes), KB_BENCH_JOBS (6) at once; the
    # bench is killed at KB_BENCH_TIMEOUT s (180) and its report then made from what the store holds
    # (a task cut off is reported as not judged). KB_DRY_RUN=1: the same on the CPU (--device cpu: every
    # CUDA build fails there; the plumbing only).
    seed_baselines
    DEV=cuda; [ -n "${KB_DRY_RUN:-}" ] && DEV=cpu
    [ -d .gpu/kb/bench/run ] || python3 bench/kernelbench/agreement.py stage-bench --prepared .gpu/kb
    R="$OUT/kb-bench"; mkdir -p "$R"; cp .gpu/kb/bench/BENCH.json "$R/"
    KB_BENCH_ARGS=(.gpu/kb/bench/suite --solver kernelbench:.gpu/kb/bench/run --policy kernelbench
      --device "$DEV" --baselines eager --store "$R/store.sqlite" --out "$R")
    start=$SECONDS
    timeout -k 5 "${KB_BENCH_TIMEOUT:-180}" "$BIN" bench "${KB_BENCH_ARGS[@]}" --jobs "${KB_BENCH_JOBS:-6}" \
      > "$R/bench.txt" 2> "$R/bench.log"
    rc=$?
    echo "bench exit $rc after $((SECONDS - start)) s (124/137: cut at KB_BENCH_TIMEOUT, the report is the store's)"
    if [ "$rc" -ge 124 ] || [ ! -f "$R/report.md" ]; then
      "$BIN" bench "${KB_BENCH_ARGS[@]}" --report-only > "$R/report-only.txt" 2>> "$R/bench.log"
    fi
    cat "$R/bench.txt"; tail -5 "$R/bench.log"
    cp "$R/report.md" "$OUT/kb-bench-report.md"; cp "$R/report.json" "$OUT/kb-bench-report.json"
    tar -C "$OUT" -czf "$OUT/kb-bench.tgz" kb-bench && rm -rf "${OUT:?}/kb-bench"
    head -40 "$OUT/kb-bench-report.md"
    ;;
  baselines)
    shift
    "$BIN" baselines .gpu/kernelbench --device cuda --json --warmup 3 --iters 10 --select "${1:-}" \
      > "$OUT/baselines.jsonl"
    python3 - "$OUT/baselines.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "summary" in r and "task" not in r:
        print("cannot run:", r["summary"]["cannot_run"])
        continue
    print(f"{r['task']['name']:60s} ok={r['ok']} eager={r['eager_us']} compile={r['compile_us']} "
          f"compile_s={r['compile_seconds']} total_s={r['stage_seconds'].get('total', 0):.1f} {'' if r['ok'] else r['reason'][:150]}")
PY
    ;;
esac
