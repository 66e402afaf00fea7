#!/usr/bin/env bash
# trl_gpu.sh — the TRL GRPO run of issue 48 on one GPU (docs/training.md), results under $OUT.
#
#   bash scripts/bundle.sh && bash scripts/trl_wheels.sh     # on the development machine
#   bash bench/trl_gpu.sh                                      # on the GPU machine (≈ 8 min)
#
# Starts `cuda-agent serve --device cuda`, the OpenEnv adapter in front of it (reward schedule
# `speedup`, as docs/toy_rl.md's loop), then TRL's GRPOTrainer (python -m cuda_agent_rl.trl_run),
# then, same tasks and step budget, our own GRPO loop (python -m cuda_agent_rl) for comparison.
# Missing Python packages come from .gpu/wheels (scripts/trl_wheels.sh): only those whose module
# does not import are installed, with --no-index --no-deps --target .gpu/pylib.
# The recipe (docs/training.md, "Why the first GPU run collapsed"): the prompt ends on a fixed word,
# TRL samples only distinct slot words (generation_kwargs), a malformed answer scores -1 as a wrong
# kernel, lr 3e-3, 200 steps of 2 prompts x 8 generations; trl_run's defaults but for the step count.
# Knobs: TRL_STEPS (200), TRL_GROUP (8), TRL_LR (0.003), TRL_EXTRA (more trl_run flags, e.g.
# "--free-decoding --format-shaping" for the first run's recipe), TRL_MINUTES (4: training stops
# then, the greedy answers after and the summary are still made), TRL_TIMEOUT (420 s, a hard stop),
# TOY_TIMEOUT (120 s), JUDGE_WORKERS (8).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/cuda-agent-out}"
mkdir -p "$OUT"
BIN="${CUDA_AGENT_BIN:-$PWD/dist/bin/cuda-agent}"
export CUDA_AGENT_CACHE_DIR="${CUDA_AGENT_CACHE_DIR:-/tmp/cuda-agent-cache}"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$PWD/dist/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PYLIB="$PWD/.gpu/pylib"
export PYTHONPATH="$PWD/python:$PYLIB${PYTHONPATH:+:$PYTHONPATH}"

# module → wheel name prefix (a wheel is installed only when its module does not import)
missing=()
for pair in trl:trl openenv:openenv_core datasets:datasets dill:dill multiprocess:multiprocess xxhash:xxhash \
            pyarrow:pyarrow pandas:pandas dateutil:python_dateutil six:six fastapi:fastapi starlette:starlette \
            uvicorn:uvicorn h11:h11 click:click websockets:websockets pydantic:pydantic pydantic_core:pydantic_core \
            annotated_types:annotated_types typing_inspection:typing_inspection annotated_doc:annotated_doc \
            anyio:anyio sniffio:sniffio fastmcp:fastmcp fastmcp:fastmcp_slim mcp:mcp mcp.types:mcp_types httpx:httpx \
            httpcore:httpcore sse_starlette:sse_starlette multipart:python_multipart pydantic_settings:pydantic_settings \
            dotenv:python_dotenv key_value:py_key_value_aio beartype:beartype platformdirs:platformdirs \
            opentelemetry:opentelemetry_api rich:rich email_validator:email_validator dns:dnspython jwt:pyjwt \
            cryptography:cryptography cffi:cffi pycparser:pycparser exceptiongroup:exceptiongroup \
            truststore:truststore watchfiles:watchfiles httpx2:httpx2 httpcore2:httpcore2 jsonschema:jsonschema \
            jsonschema_specifications:jsonschema_specifications referencing:referencing rpds:rpds_py \
            tomli:tomli tomli_w:tomli_w cachetools:cachetools orjson:orjson trio:trio outcome:outcome \
            sortedcontainers:sortedcontainers; do
  mod="${pair%%:*}"; wheel="${pair##*:}"
  python3 -c "import $mod" >/dev/null 2>&1 || missing+=("$wheel")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing from .gpu/wheels: ${missing[*]}"
  files=()
  for w in "${missing[@]}"; do
    f=$(ls .gpu/wheels/"$w"-[0-9]*.whl 2>/dev/null | head -1)
    [ -n "$f" ] && files+=("$f") || echo "trl_gpu.sh: no wheel for $w in .gpu/wheels (scripts/trl_wheels.sh)" >&2
  done
  [ ${#files[@]} -gt 0 ] && python3 -m pip install -q --no-index --no-deps --target "$PYLIB" "${files[@]}"
fi
python3 -c "import trl, openenv, datasets, uvicorn, fastapi; from trl import GRPOTrainer; \
from cuda_agent_openenv.server.app import build_app; print('imports ok: trl', trl.__version__)" || {
  echo "trl_gpu.sh: the imports above failed; carry the missing wheels in .gpu/wheels" >&2; exit 3; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/trl_gpu.txt" 2>&1
"$BIN" serve --port 8393 --device cuda --state-dir /tmp/trl-serve --judge-workers "${JUDGE_WORKERS:-8}" \
  --queue-per-device 256 > "$OUT/trl_serve.log" 2>&1 &
SERVE_PID=$!
python3 -m cuda_agent_openenv.server --serve-url http://127.0.0.1:8393 --port 8394 --device cuda \
  --reward-schedule speedup > "$OUT/trl_adapter.log" 2>&1 &
ADAPTER_PID=$!
python3 - <<'PY'
import time, urllib.request
for url in ("http://127.0.0.1:8393/v1/health", "http://127.0.0.1:8394/health"):
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=1).read(); break
        except OSError:
            time.sleep(0.2)
PY
timeout "${TRL_TIMEOUT:-420}" python3 -m cuda_agent_rl.trl_run --max-minutes "${TRL_MINUTES:-4}" --env http://127.0.0.1:8394 --device cuda \
  --steps "${TRL_STEPS:-200}" --group "${TRL_GROUP:-8}" --prompts-per-step 2 --lr "${TRL_LR:-0.003}" ${TRL_EXTRA:-} \
  --train-tasks relu_scale,swish --heldout-tasks softsign --out "$OUT/trl" 2>&1 | grep -v -i warn | tail -40
# Our own loop, same tasks and step budget, for the comparison (docs/toy_rl.md).
timeout "${TOY_TIMEOUT:-120}" python3 -m cuda_agent_rl --server http://127.0.0.1:8393 --device cuda \
  --steps "${TRL_STEPS:-200}" --group "${TRL_GROUP:-8}" --tasks relu_scale,swish --concurrency "${JUDGE_WORKERS:-8}" \
  --out "$OUT/toy" 2>&1 | tail -15
kill -TERM "$ADAPTER_PID" "$SERVE_PID"; wait "$SERVE_PID"
# One archive of both runs' records (the device tool brings back only a few files per call).
tar -C "$OUT" -czf "$OUT/trl_records.tgz" trl toy 2>/dev/null
