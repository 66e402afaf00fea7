#!/usr/bin/env python3
"""A torch-style binding's edit, its extension linked against stubs of torch's libraries (the
default) and against the libraries themselves (CUDA_AGENT_LINK_STUBS=0), alternately.

Copies examples/relu_scale/candidates/<device>_correct, builds it once (which starts the
precompiled header) and waits for the header, then REPEATS times per arm appends a comment to the
binding file and runs `cuda-agent build --json`: one JSON line per build with its wall time and the
build's steps (BuildReport::steps: the binding's compile and the link apart). Needs CUDA_AGENT_BIN
and CUDA_AGENT_CACHE_DIR.

    python3 bench/binding_link_ab.py [REPEATS] [--device cuda|cpu]
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

ARMS = {"stubs": {}, "real": {"CUDA_AGENT_LINK_STUBS": "0"}}


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
    args = parser.parse_args()
    binary = os.environ["CUDA_AGENT_BIN"]
    cache = Path(os.environ["CUDA_AGENT_CACHE_DIR"])
    with tempfile.TemporaryDirectory() as tmp:
        candidate = Path(tmp) / "candidate"
        shutil.copytree(REPO / "examples" / "relu_scale" / "candidates" / f"{args.device}_correct", candidate)
        build(binary, candidate, args.device, {})
        print(json.dumps({"precompiled_header_ready": wait_for_pch(cache, 150)}), flush=True)
        binding = sorted((candidate / "kernels").rglob("*_binding.cpp"))[0]
        for rep in range(args.repeats):
            for arm, env in ARMS.items():
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
