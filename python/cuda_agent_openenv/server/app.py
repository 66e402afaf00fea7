"""The OpenEnv server of cuda-agent: OpenEnv's FastAPI app (``/ws`` sessions, ``/reset``, ``/step``,
``/state``, ``/schema``, ``/health``) whose environments drive a running ``cuda-agent serve``.

    python -m cuda_agent_openenv.server --serve-url http://127.0.0.1:8377 [--port 8000]
        [--task SUITE#level1/19_ReLU ...] [--device cuda] [--max-concurrent-envs 256] ...

Stateful episodes need the WebSocket (``CudaAgentEnv``, OpenEnv's ``EnvClient``); OpenEnv's stateless
``POST /reset`` and ``/step`` make a fresh environment per request, so ``/step`` there is refused with
that advice.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

from openenv.core.env_server.http_server import create_fastapi_app

from cuda_agent_openenv.models import CudaAgentAction, CudaAgentObservation
from cuda_agent_openenv.server.environment import AdapterConfig, CudaAgentEnvironment

DEFAULT_MAX_CONCURRENT_ENVS = 256  # serve's --max-sessions; GRPO opens a group of sessions at once


def build_app(config: AdapterConfig, max_concurrent_envs: int = DEFAULT_MAX_CONCURRENT_ENVS):
    if max_concurrent_envs < 1:
        raise ValueError(f"max_concurrent_envs must be >= 1, got {max_concurrent_envs}")
    return create_fastapi_app(functools.partial(CudaAgentEnvironment, config), CudaAgentAction,
                              CudaAgentObservation, max_concurrent_envs=max_concurrent_envs)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m cuda_agent_openenv.server", description=__doc__.split("\n\n")[0])
    p.add_argument("--serve-url", required=True, help="the cuda-agent serve to drive, e.g. http://127.0.0.1:8377")
    p.add_argument("--token", default=os.environ.get("CUDA_AGENT_TOKEN"), help="serve's bearer token")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed on stdout)")
    p.add_argument("--task", action="append", default=[], help="a task reset() may pick (repeat); reset(task=...) "
                   "names its own")
    p.add_argument("--device", default=None)
    p.add_argument("--policy", default=None)
    p.add_argument("--turn-limit", type=int, default=None)
    p.add_argument("--reward-schedule", default="paper", help="paper (-1/1/2/3), binary, speedup")
    p.add_argument("--max-concurrent-envs", type=int, default=DEFAULT_MAX_CONCURRENT_ENVS)
    p.add_argument("--call-timeout", type=float, default=900.0, help="seconds a tool call may take")
    p.add_argument("--grade-timeout", type=float, default=1200.0, help="seconds a grade may take; then the "
                   "episode ends with error_code judge_timeout and no reward")
    p.add_argument("--reconnect", type=float, default=30.0, help="seconds to keep retrying while serve is down")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        config = AdapterConfig(serve_url=args.serve_url, token=args.token, tasks=args.task, device=args.device,
                               policy=args.policy, turn_limit=args.turn_limit, reward_schedule=args.reward_schedule,
                               call_timeout_s=args.call_timeout, grade_timeout_s=args.grade_timeout,
                               reconnect_s=args.reconnect)
        app = build_app(config, args.max_concurrent_envs)
    except ValueError as error:
        print(f"cuda_agent_openenv: {error}", file=sys.stderr)
        return 2
    import socket

    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)  # connections wait in the backlog until uvicorn accepts: the URL line is usable at once
    print(f"cuda_agent_openenv: listening on http://{args.host}:{sock.getsockname()[1]} (serve {args.serve_url})",
          flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws_max_size=100 * 1024 * 1024))
    server.run(sockets=[sock])
    return 0


def __getattr__(name):
    """``app`` for ``uvicorn cuda_agent_openenv.server.app:app`` (openenv.yaml): configured from
    ``CUDA_AGENT_SERVE_URL`` (required), ``CUDA_AGENT_TOKEN``, ``CUDA_AGENT_OPENENV_TASKS`` (comma-separated)."""
    if name != "app":
        raise AttributeError(name)
    url = os.environ.get("CUDA_AGENT_SERVE_URL")
    if not url:
        raise RuntimeError("set CUDA_AGENT_SERVE_URL to the cuda-agent serve to drive (or run "
                           "python -m cuda_agent_openenv.server --serve-url URL)")
    tasks = [t for t in os.environ.get("CUDA_AGENT_OPENENV_TASKS", "").split(",") if t]
    return build_app(AdapterConfig(serve_url=url, token=os.environ.get("CUDA_AGENT_TOKEN"), tasks=tasks))
