#!/usr/bin/env bash
# setup.sh — installs what cuda-agent needs (Debian packages, Python packages) and builds
# build/cuda-agent. Idempotent: installs only what is missing, rebuilds only what changed.
#
#   bash scripts/setup.sh            # everything
#   SKIP_APT=1 bash scripts/setup.sh # no system packages (e.g. on a machine without apt)
#   CUDA_AGENT_BUILD_TYPE=Release bash scripts/setup.sh  # no debug info
#   CUDA_AGENT_BUILD_TYPE=Check bash scripts/setup.sh    # CI's: -O1, assertions on, no debug info
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

# System packages: compiler, build tools, the JSON and test libraries. bubblewrap is for the sandbox;
# chromium renders the bench report in a headless browser for its test (tests/bench). libcurl4-openssl-dev:
# curl headers for src/llm/http_client.cc (libcurl itself is loaded with dlopen at run time). clang:
# the fuzzers, and the compiler of torch-style binding files (src/builder/binding_compiler.h).
APT_PACKAGES=(g++ make cmake ninja-build nlohmann-json3-dev libsqlite3-dev libgtest-dev python3-dev bubblewrap
              libcurl4-openssl-dev libcpp-httplib-dev libhiredis-dev redis-server redis-tools
              chromium
              clang clang-format clang-tidy libclang-rt-14-dev)
if [ -z "${SKIP_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# Python packages. torch 2.13.0 is the CPU build on the development machines; on a GPU machine the
# installed CUDA build is kept (any torch that imports is left alone).
PYTHON="${CUDA_AGENT_PYTHON:-python3}"
if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  log "installing torch==2.13.0"
  "$PYTHON" -m pip install -q torch==2.13.0
fi
# pytest-xdist: the suite's two test processes (scripts/test.sh), pinned.
if [ "$("$PYTHON" -c "import importlib.metadata as m; print(m.version('pytest-xdist'))" 2>/dev/null)" != "3.8.0" ]; then
  log "installing pytest-xdist==3.8.0"
  "$PYTHON" -m pip install -q "pytest-xdist==3.8.0"
fi
for mod in pytest numpy pyarrow; do
  if ! "$PYTHON" -c "import $mod" >/dev/null 2>&1; then
    log "installing $mod"
    "$PYTHON" -m pip install -q "$mod"
  fi
done
# transformers: the synth catalog's transformers ops (optional for everything else). Pinned: its
# block classes' constructors change between versions.
if ! "$PYTHON" -c "import transformers" >/dev/null 2>&1; then
  log "installing transformers==5.23.0"
  "$PYTHON" -m pip install -q "transformers==5.23.0"
fi

# mcp: the official MCP SDK, the client the MCP tests talk to `cuda-agent mcp` and `/mcp` with
# (tests only). Pinned: its client's protocol negotiation changes between versions.
MCP_VERSION=2.3.0
if [ "$("$PYTHON" -c "import importlib.metadata as m; print(m.version('mcp'))" 2>/dev/null)" != "$MCP_VERSION" ]; then
  log "installing mcp==$MCP_VERSION"
  "$PYTHON" -m pip install -q "mcp==$MCP_VERSION"
fi
# verl 0.9.1, for the training plug-in (python/cuda_agent_verl) and its tests. Its full install pins
# torch 2.11 + CUDA wheels, vLLM and transformers < 5.11; here it goes in without dependencies, plus
# the packages its agent-loop, config and dataset modules import, each pinned (docs/dependencies.md).
# A training cluster installs verl[vllm]==0.9.1 the ordinary way instead.
if ! "$PYTHON" -c "from verl.experimental.agent_loop import AgentLoopBase" >/dev/null 2>&1; then
  log "installing verl==0.9.1 (no dependencies) and the modules its agent loop imports"
  "$PYTHON" -m pip install -q "ray==2.55.1" "pyvers==0.1.0" "orjson==3.8.3" "cloudpickle==2.1.0" \
    "importlib_metadata==10.2.0"
  "$PYTHON" -m pip install -q --no-deps "verl==0.9.1" "tensordict==0.10.0" "omegaconf==2.3.0" \
    "hydra-core==1.3.2" "antlr4-python3-runtime==4.9.3" "pillow==13.0.0" "codetiming==1.4.0" \
    "datasets==5.2.0" "multiprocess==0.70.19" "pandas==3.1.1" "dill==0.4.1" "xxhash==4.1.0" \
    "cachetools==8.0.2" "fastapi==0.165.0"
fi

# The trainer integrations (issue 48; docs/training.md, docs/dependencies.md), each pinned:
# openenv-core 0.3.0 for python/cuda_agent_openenv (its server imports fastmcp; websockets is its
# client's transport), installed without its optional UI/CLI dependencies (gradio, openai, ...);
# verifiers 0.1.14 for python/cuda_agent_verifiers, without dependencies (it pins datasets < 4.7 and
# mcp stays at 2.3.0), plus the modules its import needs; trl 1.16.0 and accelerate for the TRL run's
# smoke test (tests do not need them).
if ! "$PYTHON" -c "from openenv.core.env_server.http_server import create_fastapi_app; import websockets" >/dev/null 2>&1; then
  log "installing openenv-core==0.3.0 (core dependencies only)"
  "$PYTHON" -m pip install -q "fastmcp==4.2.3" "websockets==16.1.1" "uvicorn==0.54.0" "fastapi==0.165.0" "requests"
  "$PYTHON" -m pip install -q --no-deps "openenv-core==0.3.0"
fi
if ! "$PYTHON" -c "import verifiers; from verifiers.utils.env_utils import load_environment" >/dev/null 2>&1; then
  log "installing verifiers==0.1.14 (no dependencies) and the modules its import needs"
  "$PYTHON" -m pip install -q "tenacity==9.2.1" "httpx==0.28.1" "aiolimiter==1.3.0" "prime-sandboxes==0.5.1" \
    "anthropic==2.14.0" "openai==3.57.0" "pyzmq==27.3.0" "setproctitle==1.3.8" "openai-agents==0.24.0" \
    "aiohttp==3.14.5" "datasets==5.2.0"
  "$PYTHON" -m pip install -q --no-deps "verifiers==0.1.14"
fi
if [ -n "${CUDA_AGENT_TRL:-}" ] && ! "$PYTHON" -c "from trl import GRPOTrainer" >/dev/null 2>&1; then
  log "installing trl==1.16.0 and accelerate==1.13.0 (CUDA_AGENT_TRL=1: the TRL run's smoke test)"
  "$PYTHON" -m pip install -q --no-deps "trl==1.16.0" "accelerate==1.13.0"
fi

# The Python lint of scripts/lint.sh (ruff, mypy): the exact versions of pyproject.toml's `lint` group,
# the one place they are pinned (a newer ruff or mypy finds new things: an upgrade is a commit of its own).
mapfile -t LINT_PINS < <("$PYTHON" -c 'import tomllib
for pin in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["lint"]:
    print(pin)')
for pin in "${LINT_PINS[@]}"; do
  if [ "$("$PYTHON" -c "import importlib.metadata as m; print(m.version('${pin%%==*}'))" 2>/dev/null)" != "${pin##*==}" ]; then
    log "installing $pin"
    "$PYTHON" -m pip install -q "$pin"
  fi
done

# Build.
GENERATOR=()
command -v ninja >/dev/null 2>&1 && GENERATOR=(-G Ninja)
# ccache, where installed, keeps objects across build folders and worktrees.
LAUNCHER=()
command -v ccache >/dev/null 2>&1 && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f build/CMakeCache.txt ]; then
  log "configuring"
  cmake -S . -B build "${GENERATOR[@]}" "${LAUNCHER[@]}" \
    -DCMAKE_BUILD_TYPE="${CUDA_AGENT_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
fi
log "building"
cmake --build build -j "$(nproc)" >/dev/null
log "ready: build/cuda-agent"
