#!/usr/bin/env python3
"""A torch-style binding's edit under two or more build settings, alternately: the extension linked
against stubs of torch's libraries (`stubs`, the default) or the libraries themselves (`real`,
CUDA_AGENT_LINK_STUBS=0); the binding compiled by clang where the machine has one (`clang`, the
default) or by g++ (`gcc`, CUDA_AGENT_BINDING_CLANG=0).

Copies examples/relu_scale/candidates/<device>_correct, builds it once per arm (which starts each
arm's precompiled header) and waits for the headers, then REPEATS times per arm appends a comment
to the binding file and runs `cuda-agent build --json`: one JSON line per build with its wall time
and the build's steps (BuildReport::steps: the binding's compile and the link apart). Needs
CUDA_AGENT_BIN and CUDA_AGENT_CACHE_DIR.

    python3 bench/binding_link_ab.py [REPEATS] [--device cuda|cpu] [--arms stubs,real|clang,gcc]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from judge_latency import wait_for_pch  # noqa: E402

ARMS = {"stubs": {}, "real": {"CUDA_AGENT_LINK_STUBS": "0"},
        "clang": {}, "gcc": {"CUDA_AGENT_BINDING_CLANG": "0"}}


def build(binary: str, candidate: Path, device: str, env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([binary, "build", "--candidate", str(candidate), "--device", device, "--out",
                           str(candidate.parent / "ext.so"), "--json"], capture_output=True, text=True,
                          env={**os.environ, **env})
    wall = time.perf_counter() - start
    try:
        report = json.loads(proc.stdout).get("build") or {}
    except json.JSONDecodeError:
        report = {"ok": False, "failure": proc.stderr[-500:]}
    return wall, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repeats", type=int, nargs="?", default=4)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--arms", default="stubs,real", help="comma-separated, of " + ", ".join(ARMS))
    args = parser.parse_args()
    unknown = [name for name in args.arms.split(",") if name not in ARMS]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}: choose from {', '.join(ARMS)}")
    arms = {name: ARMS[name] for name in args.arms.split(",")}
    binary = os.environ["CUDA_AGENT_BIN"]
    cache = Path(os.environ["CUDA_AGENT_CACHE_DIR"])
    with tempfile.TemporaryDirectory() as tmp:
        candidate = Path(tmp) / "candidate"
        shutil.copytree(REPO / "examples" / "relu_scale" / "candidates" / f"{args.device}_correct", candidate)
        for env in arms.values():
            build(binary, candidate, args.device, env)
        print(json.dumps({"precompiled_header_ready": wait_for_pch(cache, 150)}), flush=True)
        binding = sorted((candidate / "kernels").rglob("*_binding.cpp"))[0]
        for rep in range(args.repeats):
            for arm, env in arms.items():
                with binding.open("a") as f:
                    f.write(f"\n// edit {uuid.uuid4().hex}\n")
                wall, report = build(binary, candidate, args.device, env)
                print(json.dumps({"arm": arm, "rep": rep, "wall_s": round(wall, 3), "ok": report.get("ok"),
                                  "build_s": round(report.get("seconds", 0), 3),
                                  "steps": {s["name"]: round(s["seconds"], 3) for s in report.get("steps", [])}}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
