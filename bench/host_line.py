#!/usr/bin/env python3
"""host_line.py — what of a candidate's profile job waits in the host's one line (issue 20).

Fresh processes go through the CUDA steps a profile job takes (the harness's own functions), every
step behind a barrier of its own: all processes start a step together, and the step's span (from the
barrier to the last process's end) divided by the number of processes is what one process costs the
host when the step is serialised host-wide, and about the single process's time when it is not.
Steps: `driver` (the driver's cuInit alone, through ctypes), `init` (the rest of torch.cuda.init: the
runtime's start and torch's own set-up), `cupti` (timing.start_device_profiler), `context` (the first
allocation), `blas` (warm_blas and the timing calibration's set-up), `poison` (seven checks' worth of
poison_free_memory then release_poison: the harness's as it is, refilled in place), `kernels` (200 small kernels, a control that should not
queue), `save` (six 4 MiB outputs written with torch.save), `stop` (the profiler's stop), and the
process's `exit` (its context's teardown; timed by the parent from the child's last mark).

    python3 bench/host_line.py --layouts 1 4,4,4,4 16 --variants - CUDA_DEVICE_MAX_CONNECTIONS=1 \
        --repeats 2 --json OUT.json

A layout lists processes per GPU ("4,4,4,4": four on each of four GPUs; "16": sixteen on GPU 0);
a variant is "-" (the environment as it is) or NAME=VALUE[,NAME=VALUE...]. Run from the repository
root (the children import python/cuda_agent_harness).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from context_contention import parse_variant  # noqa: E402  (the same variant syntax)

STEPS = ["driver", "init", "cupti", "context", "blas", "poison", "kernels", "save", "stop"]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "python"))
import torch
from cuda_agent_harness import timing
from cuda_agent_harness.integrity import poison_free_memory, release_poison
from cuda_agent_harness.guards import warm_blas
barrier, steps = sys.argv[1], sys.argv[2].split(",")
state = {}

def driver():
    import ctypes
    assert ctypes.CDLL("libcuda.so.1").cuInit(0) == 0
def init(): torch.cuda.init()
def cupti(): state["profiler"] = timing.start_device_profiler()
def context():
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
def blas():
    warm_blas("cuda"); state["calibration"] = timing.Calibration("cuda"); torch.cuda.synchronize()
def poison():
    x = torch.randn(1 << 20, device="cuda")
    for _ in range(7):
        poison_free_memory("cuda", 4 << 20)
        y = torch.relu(x) * 2
        del y
        release_poison("cuda")
    torch.cuda.synchronize()
def kernels():
    x = torch.randn(1 << 16, device="cuda")
    for _ in range(200):
        x = x * 1.0001
    torch.cuda.synchronize()
def save():
    for i in range(6):
        out = torch.randn(1 << 20, device="cuda")
        torch.save(out, os.path.join(os.path.dirname(barrier), f"out-{os.getpid()}-{i}.pt"))
def stop(): state["profiler"].stop()

row = {}
for step in steps:
    open(f"{barrier}.ready.{step}.{os.getpid()}", "w").close()
    while not os.path.exists(f"{barrier}.go.{step}"):
        time.sleep(0.001)
    start = time.time()
    globals()[step]()
    row[step] = [start, time.time()]
row["done_unix"] = time.time()
print(json.dumps(row), flush=True)
"""


def run_layout(layout: list[int], variant: dict[str, str]) -> dict:
    """One run: every process through every step; per step the release time and each process's span."""
    with tempfile.TemporaryDirectory() as tmp:
        barrier = os.path.join(tmp, "b")
        procs = []
        for gpu, count in enumerate(layout):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), **variant)
            for _ in range(count):
                procs.append(subprocess.Popen([sys.executable, "-c", CHILD, barrier, ",".join(STEPS)],
                                              env=env, stdout=subprocess.PIPE, text=True))
        released = {}
        for step in STEPS:
            deadline = time.time() + 300
            while len([f for f in os.listdir(tmp) if f".ready.{step}." in f]) < len(procs):
                if any(p.poll() is not None for p in procs):
                    raise SystemExit(f"a child ended before step {step} (exit codes "
                                     f"{[p.poll() for p in procs]})")
                if time.time() > deadline:
                    raise SystemExit(f"children not ready for step {step} within 300 s")
                time.sleep(0.002)
            released[step] = time.time()
            open(f"{barrier}.go.{step}", "w").close()
        rows = []
        for p in procs:
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"a child failed (exit {p.wait()})")
            rows.append(json.loads(line))
        pending = dict(enumerate(procs))
        exits = [0.0] * len(procs)
        exit_end = 0.0
        while pending:
            for i, p in list(pending.items()):
                if p.poll() is not None:
                    now = time.time()
                    exits[i] = now - rows[i]["done_unix"]
                    exit_end = max(exit_end, now)
                    del pending[i]
            time.sleep(0.002)
    n = len(procs)
    entry = {"processes": n}
    for step in STEPS:
        durations = [r[step][1] - r[step][0] for r in rows]
        span = max(r[step][1] for r in rows) - released[step]
        entry[step] = {"median": statistics.median(durations), "max": max(durations), "span": span,
                       "span_per_process": span / n}
    first_done = min(r["done_unix"] for r in rows)
    entry["exit"] = {"median": statistics.median(exits), "max": max(exits),
                     "span": exit_end - first_done, "span_per_process": (exit_end - first_done) / n}
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", nargs="+", default=["1", "16"])
    parser.add_argument("--variants", nargs="+", default=["-"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    report = []
    for variant_text in args.variants:
        variant = parse_variant(variant_text)
        for text in args.layouts:
            for r in range(args.repeats):
                entry = run_layout([int(x) for x in text.split(",")], variant)
                entry.update({"variant": variant_text, "layout": text, "repeat": r})
                report.append(entry)
                print(variant_text, text, r, " ".join(
                    f"{s}={entry[s]['median']:.3f}/{entry[s]['span_per_process']:.3f}"
                    for s in STEPS + ["exit"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
