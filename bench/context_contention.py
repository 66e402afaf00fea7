#!/usr/bin/env python3
"""context_contention.py — does creating CUDA contexts (and starting the profiler) slow down when
other processes on the host do the same, and does it matter on which GPU they do it? (issue 20: a
judgement's CUDA set-up grew from 2.9 to 5.4 s when a second GPU of the host judged as well).

Each process imports torch, waits at a barrier (a file appearing), then times its CUDA context
(`torch.zeros(1, device="cuda")`) and, with --profiler, torch.profiler's first start (kineto + CUPTI).
For every layout (processes per GPU, e.g. "4" = 4 on GPU 0, "4,4" = 4 on GPU 0 and 4 on GPU 1, "8" =
8 on GPU 0) it prints the median and max over the processes, --repeats times.

    python3 bench/context_contention.py --layouts 1 4 8 4,4 --repeats 2 --json OUT.json
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

CHILD = r"""
import json, os, sys, time
import torch
barrier, profiler = sys.argv[1], sys.argv[2] == "1"
open(barrier + ".ready." + str(os.getpid()), "w").close()
while not os.path.exists(barrier):
    time.sleep(0.005)
t0 = time.perf_counter()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
t1 = time.perf_counter()
row = {"context_s": t1 - t0}
if profiler:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]):
        torch.zeros(1, device="cuda") + 1
    row["profiler_s"] = time.perf_counter() - t1
print(json.dumps(row))
"""


def run_layout(layout: list[int], profiler: bool) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        barrier = os.path.join(tmp, "go")
        procs = []
        for gpu, count in enumerate(layout):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
            for _ in range(count):
                procs.append(subprocess.Popen([sys.executable, "-c", CHILD, barrier, "1" if profiler else "0"],
                                              env=env, stdout=subprocess.PIPE, text=True))
        while len([f for f in os.listdir(tmp) if ".ready." in f]) < len(procs):
            time.sleep(0.01)
        open(barrier, "w").close()
        rows = []
        for p in procs:
            out, _ = p.communicate(timeout=300)
            rows.append(json.loads(out.strip().splitlines()[-1]))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", nargs="+", default=["1", "4", "8", "4,4"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    report = []
    for text in args.layouts:
        layout = [int(x) for x in text.split(",")]
        for r in range(args.repeats):
            rows = run_layout(layout, args.profiler)
            entry = {"layout": text, "repeat": r, "processes": len(rows)}
            for key in rows[0]:
                values = [row[key] for row in rows]
                entry[key] = {"median": statistics.median(values), "max": max(values)}
            report.append(entry)
            print(text, r, {k: {s: round(v, 3) for s, v in entry[k].items()} for k in rows[0]}, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
