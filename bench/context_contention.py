#!/usr/bin/env python3
"""context_contention.py — does creating CUDA contexts (and starting the profiler) slow down when
other processes on the host do the same, and does it matter on which GPU they do it? (issue 20: a
judgement's CUDA set-up grew from 2.9 to 5.4 s when a second GPU of the host judged as well).

Each process imports torch (or, with --mode driver, only loads libcuda), waits at a barrier (a file
appearing), then times its CUDA set-up (with --own-node it sees only its own GPU's device node,
not every GPU's of the host):
- torch: `torch.cuda.init()` (the driver's cuInit and torch's device query), then the context
  (`torch.zeros(1, device="cuda")`), then with --profiler torch.profiler's first start;
- driver: cuInit, the primary context (cuDevicePrimaryCtxRetain), a 2 MiB and a 256 MiB allocation
  (the latter set to zero), 256 MiB of pinned host memory;
and the parent times each process's exit (context teardown) from the moment it said it was done
(records before 2026-11-27 03:30 UTC reaped the processes in order: an upper bound).
For every layout (processes per GPU, e.g. "4" = 4 on GPU 0, "4,4" = 4 on GPU 0 and 4 on GPU 1, "8" =
8 on GPU 0) and environment variant (e.g. "CUDA_DEVICE_MAX_CONNECTIONS=1"; "-" is the environment as
it is) it prints the median and max over the processes, --repeats times.

    python3 bench/context_contention.py --layouts 1 8 4,4 --repeats 2 --mode driver \
        --variants - CUDA_DEVICE_MAX_CONNECTIONS=1 --json OUT.json
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

WAIT = r"""
import json, os, sys, time
barrier, profiler = sys.argv[1], sys.argv[2] == "1"
open(barrier + ".ready." + str(os.getpid()), "w").close()
while not os.path.exists(barrier):
    time.sleep(0.002)
"""

TORCH_CHILD = "import torch\n" + WAIT + r"""
t0 = time.perf_counter()
torch.cuda.init()
t1 = time.perf_counter()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
row = {"init_s": t1 - t0, "context_s": t2 - t1}
if profiler:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]):
        torch.zeros(1, device="cuda") + 1
    row["profiler_s"] = time.perf_counter() - t2
row["total_s"] = time.perf_counter() - t0
row["done_unix"] = time.time()
print(json.dumps(row), flush=True)
"""

DRIVER_CHILD = "import ctypes\ncuda = ctypes.CDLL('libcuda.so.1')\n" + WAIT + r"""
def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what} failed: CUresult {rc}")
marks = [time.perf_counter()]
check(cuda.cuInit(0), "cuInit")
marks.append(time.perf_counter())
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
marks.append(time.perf_counter())
small, big, host = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_void_p()
check(cuda.cuMemAlloc_v2(ctypes.byref(small), 2 << 20), "cuMemAlloc 2 MiB")
check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
marks.append(time.perf_counter())
check(cuda.cuMemAlloc_v2(ctypes.byref(big), 256 << 20), "cuMemAlloc 256 MiB")
check(cuda.cuMemsetD8_v2(big, 0, 256 << 20), "cuMemsetD8")
check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
marks.append(time.perf_counter())
check(cuda.cuMemHostAlloc(ctypes.byref(host), 256 << 20, 0), "cuMemHostAlloc 256 MiB")
marks.append(time.perf_counter())
names = ["init_s", "context_s", "alloc_2mib_s", "alloc_256mib_s", "pinned_256mib_s"]
row = {name: b - a for name, a, b in zip(names, marks, marks[1:])}
row["total_s"] = marks[-1] - marks[0]
row["done_unix"] = time.time()
print(json.dumps(row), flush=True)
"""


def parse_variant(text: str) -> dict[str, str]:
    if text == "-":
        return {}
    pairs = [item.split("=", 1) for item in text.split(",")]
    if any(len(p) != 2 for p in pairs):
        raise SystemExit(f"a variant is '-' or NAME=VALUE[,NAME=VALUE...], not {text!r}")
    return dict(pairs)


# With --own-node: the child sees only its GPU's device node (a /dev of its own in a mount namespace,
# as a container would give it), not every GPU's; needs root and util-linux's unshare.
OWN_NODE = r"""
set -e
mkdir -p /tmp/.olddev && mount --bind /dev /tmp/.olddev && mount -t tmpfs none /dev
for n in null zero random urandom nvidiactl nvidia-uvm nvidia-uvm-tools nvidia$GPU; do
  [ -e /tmp/.olddev/$n ] && touch /dev/$n && mount --bind /tmp/.olddev/$n /dev/$n
done
unset CUDA_VISIBLE_DEVICES
exec "$@"
"""


def run_layout(layout: list[int], mode: str, profiler: bool, variant: dict[str, str],
               own_node: bool = False) -> list[dict]:
    child = TORCH_CHILD if mode == "torch" else DRIVER_CHILD
    with tempfile.TemporaryDirectory() as tmp:
        barrier = os.path.join(tmp, "go")
        procs = []
        for gpu, count in enumerate(layout):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), GPU=str(gpu), **variant)
            argv = [sys.executable, "-c", child, barrier, "1" if profiler else "0"]
            if own_node:
                argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", OWN_NODE, "own-node"] + argv
            for _ in range(count):
                procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True))
        while len([f for f in os.listdir(tmp) if ".ready." in f]) < len(procs):
            time.sleep(0.01)
        open(barrier, "w").close()
        rows = []
        for p in procs:  # each prints its row, then exits: the exit is timed from its own done mark
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"a child failed (exit {p.wait()})")
            rows.append(json.loads(line))
        pending = dict(enumerate(procs))  # reaped as they end, not in order
        deadline = time.time() + 300
        while pending and time.time() < deadline:
            for i, p in list(pending.items()):
                if p.poll() is not None:
                    rows[i]["exit_s"] = time.time() - rows[i].pop("done_unix")
                    del pending[i]
            time.sleep(0.002)
        if pending:
            raise SystemExit(f"{len(pending)} children did not exit within 300 s")
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", nargs="+", default=["1", "4", "8", "4,4"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--mode", choices=["torch", "driver"], default="torch")
    parser.add_argument("--variants", nargs="+", default=["-"])
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--own-node", action="store_true",
                        help="each child sees only its GPU's /dev/nvidiaN (root; a mount namespace)")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    report = []
    for variant_text in args.variants:
        variant = parse_variant(variant_text)
        for text in args.layouts:
            layout = [int(x) for x in text.split(",")]
            for r in range(args.repeats):
                rows = run_layout(layout, args.mode, args.profiler, variant, args.own_node)
                entry = {"own_node": args.own_node, "variant": variant_text, "layout": text, "repeat": r, "processes": len(rows)}
                for key in rows[0]:
                    values = [row[key] for row in rows]
                    entry[key] = {"median": statistics.median(values), "max": max(values)}
                report.append(entry)
                print(args.mode, "own-node" if args.own_node else "all-nodes", variant_text, text, r,
                      " ".join(f"{k}={entry[k]['median']:.3f}/{entry[k]['max']:.3f}" for k in rows[0]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
