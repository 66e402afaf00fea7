#!/usr/bin/env python3
"""stream_queues.py — how much of two streams' concurrency a CUDA context keeps with fewer hardware
queues (CUDA_DEVICE_MAX_CONNECTIONS), for the profile job's choice of queues (issue 20).

In a fresh process per queue count, two streams each run a chain of `--kernels` one-block spin
kernels (torch.cuda._sleep, `--spin-us` each), which could all run side by side: issued depth-first
(stream A's chain, then stream B's: how code that runs one branch per `with torch.cuda.stream(...)`
block issues them) and breadth-first (alternating). Prints the device time of both chains
(events on the caller's stream, which joins both) against one chain alone: 1.0 is full concurrency,
2.0 none. `given_and_own`: a chain on the current stream, then one on a non-blocking stream made with
cuStreamCreate (what a candidate's launcher gets and what it may make), depth-first. Medians of `--repeats`. The kernels are long against a launch (500 µs by default), so the
host's launches are not what is measured.

    python3 bench/stream_queues.py --queues 1 2 4 8 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, torch
kernels, spin_us, repeats = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
torch.cuda.init()
main = torch.cuda.current_stream()
# The candidate's own stream first, as in a profile job (no torch streams before candidate code; the
# AST rules keep torch.cuda.Stream out of model_new.py, so a candidate's streams come from its kernels/).
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
raw = ctypes.c_void_p()
torch.cuda.synchronize()  # the primary context is current on this thread
if cuda.cuStreamCreate(ctypes.byref(raw), 1) != 0:  # CU_STREAM_NON_BLOCKING
    raise SystemExit("cuStreamCreate failed")
own = torch.cuda.ExternalStream(raw.value)
a, b = torch.cuda.Stream(), torch.cuda.Stream()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
probe_start, probe_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(5):  # the last probe, once the clocks are up
    probe_start.record(); torch.cuda._sleep(10_000_000); probe_end.record(); probe_end.synchronize()
cycles = int(spin_us * 10_000_000 / (probe_start.elapsed_time(probe_end) * 1e3))

def run(order):
    start.record(main)
    for s in (a, b, own):
        s.wait_stream(main)
    if order == "given_and_own":  # the given (current) stream's chain, then one on a stream of its own
        for s in (main, own):
            with torch.cuda.stream(s):
                for _ in range(kernels): torch.cuda._sleep(cycles)
    elif order == "one":
        with torch.cuda.stream(a):
            for _ in range(kernels): torch.cuda._sleep(cycles)
    elif order == "depth":
        for s in (a, b):
            with torch.cuda.stream(s):
                for _ in range(kernels): torch.cuda._sleep(cycles)
    else:
        for _ in range(kernels):
            for s in (a, b):
                with torch.cuda.stream(s): torch.cuda._sleep(cycles)
    for s in (a, b, own):
        main.wait_stream(s)
    end.record(main)
    end.synchronize()
    return start.elapsed_time(end) * 1e3

row = {}
for order in ("one", "depth", "breadth", "given_and_own"):
    run(order)
    row[order + "_us"] = statistics.median(run(order) for _ in range(repeats))
row["depth_ratio"] = row["depth_us"] / row["one_us"]
row["breadth_ratio"] = row["breadth_us"] / row["one_us"]
row["given_and_own_ratio"] = row["given_and_own_us"] / row["one_us"]
print(json.dumps(row))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", nargs="+", default=["1", "2", "4", "8"])
    parser.add_argument("--kernels", type=int, default=8)
    parser.add_argument("--spin-us", type=float, default=500.0)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    report = []
    for queues in args.queues:
        env = dict(os.environ, CUDA_DEVICE_MAX_CONNECTIONS=queues)
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.kernels), str(args.spin_us),
                              str(args.repeats)], env=env, capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["queues"] = int(queues)
        report.append(row)
        print(f"queues={queues} one={row['one_us']:.0f}us depth-first={row['depth_ratio']:.2f}x "
              f"breadth-first={row['breadth_ratio']:.2f}x "
              f"given-then-own={row['given_and_own_ratio']:.2f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
