#!/usr/bin/env bash
# trl_wheels.sh — the wheels the TRL run (bench/trl_gpu.sh, docs/training.md) needs on a GPU machine
# without internet: Python 3.12, x86_64, with torch, transformers, peft and accelerate installed.
# Downloads each pinned package WITHOUT dependencies into .gpu/wheels (cp312 manylinux builds where
# a package is not pure Python) and prints which are pure Python and their sizes. bench/trl_gpu.sh
# installs, with --no-index --no-deps --target .gpu/pylib, only those whose module does not import.
#
#   bash scripts/trl_wheels.sh              # all of WHEELS below
#   WHEELS="trl==1.16.0 openenv-core==0.3.0" bash scripts/trl_wheels.sh   # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.gpu/wheels
mkdir -p "$OUT"
# What `python -m cuda_agent_rl.trl_run` and `python -m cuda_agent_openenv.server` import beyond torch,
# transformers, peft and accelerate (and their own dependencies): TRL, OpenEnv and what their imports
# pull (datasets for TRL; fastapi/uvicorn/websockets/fastmcp for OpenEnv's server and client).
WHEELS="${WHEELS:-trl==1.16.0 openenv-core==0.3.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 xxhash==4.1.0
  pyarrow==26.0.1 pandas==3.1.1 python-dateutil==2.9.0.post0 six==1.17.0 fastapi==0.165.0 starlette==1.10.0
  uvicorn==0.54.0 h11==0.16.0 click==8.5.1 websockets==17.4 pydantic==2.13.4 pydantic_core==2.46.4
  annotated-types==0.7.0 typing-inspection==0.4.2 annotated-doc==0.0.7 anyio==4.16.0 sniffio==1.3.1
  fastmcp==4.2.3 fastmcp-slim==4.2.3 mcp==2.3.0 mcp-types==2.3.0 httpx==0.28.1 httpcore==1.0.9
  sse-starlette==3.7.0 python-multipart==0.0.34 pydantic-settings==2.14.1 python-dotenv==1.2.2
  py-key-value-aio==0.5.0 beartype==0.23.1 platformdirs==4.14.8 opentelemetry-api==1.45.2 rich==15.0.0
  email-validator==2.4.0 dnspython==2.9.2 PyJWT==2.15.1 cryptography==48.0.0 cffi==2.0.0 pycparser==2.23
  exceptiongroup==1.3.2 truststore==0.10.5 watchfiles==1.3.0 httpx2==2.16.2 httpcore2==2.16.2
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 tomli==2.5.0
  tomli-w==1.2.0 cachetools==8.0.2 orjson==3.13.0 trio==0.22.2 outcome==1.3.0.post0 sortedcontainers==2.4.0}"
for spec in $WHEELS; do
  pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 \
    --abi none --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d "$OUT" "$spec" 2>&1 | grep -v -i warning || true
done
echo "wheel  pure-python  size"
for w in "$OUT"/*.whl; do
  case "$w" in *-py3-none-any.whl|*-py2.py3-none-any.whl) pure=yes ;; *) pure="no (cp312 binary)" ;; esac
  printf '%s  %s  %s\n' "$(basename "$w")" "$pure" "$(du -h "$w" | cut -f1)"
done
du -sh "$OUT"
