#!/usr/bin/env python3
"""cupti_start.py — what the profile job's profiler start costs, and whether CUPTI itself or torch's
profiler (kineto) is what costs it (issue 22: `profiler_start` is 4–9 s of wall time and ≈ 5.5
CPU-seconds per judgement under load; issue 20: one host's judgements stop at ≈ 2,600 per hour
whatever its GPUs).

Each process imports torch, creates its CUDA context and runs a GEMM and an elementwise op (their
modules loaded, as a profile job's are after its trusted preparation), waits at a barrier (a file
appearing), then starts tracing one way, runs the same ops again plus a new one (a module loaded
while tracing), flushes and stops. Per process: wall and CPU seconds of the start, of the first ops
under tracing, of the flush, and the device records seen. The ways:

  torch_cpu_cuda   torch.profiler with CPU and CUDA activities (what jobs/profile.py does)
  torch_cuda       torch.profiler with CUDA activities only
  cupti_kernels    CUPTI's activity API directly (ctypes): concurrent kernels only
  cupti_device     CUPTI directly: concurrent kernels, memcpy, memset (every device activity kind
                   the judge's audit reads)

    python3 bench/cupti_start.py --counts 1 8 --ways torch_cpu_cuda cupti_device --json OUT.json
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
import ctypes, json, os, resource, sys, time
barrier, way = sys.argv[1], sys.argv[2]
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
import torch
a = torch.randn(2048, 2048, device="cuda"); b = torch.randn(2048, 2048, device="cuda")
def ops(new):
    (a @ b).relu_()
    if new:
        torch.nn.functional.gelu(a).sum()
    torch.cuda.synchronize()
ops(False)
open(barrier + ".ready." + str(os.getpid()), "w").close()
while not os.path.exists(barrier):
    time.sleep(0.001)
out = {"way": way}
def lap(name, t, c):
    out[name] = time.perf_counter() - t
    out[name + "_cpu"] = cpu() - c
    return time.perf_counter(), cpu()
t, c = time.perf_counter(), cpu()
if way.startswith("torch"):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CUDA] if way == "torch_cuda" else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    prof = profile(activities=acts)
    prof.__enter__()
    t, c = lap("start", t, c)
    ops(True)
    t, c = lap("traced_ops", t, c)
    prof.__exit__(None, None, None)
    t, c = lap("stop", t, c)
    raw = prof.profiler.kineto_results.events()
    out["device_records"] = sum(1 for e in raw if str(e.device_type()).endswith("CUDA"))
else:
    path = None
    for line in open("/proc/self/maps"):
        p = line.rsplit(" ", 1)[-1].strip()
        if "/libcupti.so" in p:
            path = p; break
    if path is None:
        import glob
        libdir = os.path.join(os.path.dirname(torch.__file__), "..", "nvidia")
        found = sorted(glob.glob(os.path.join(libdir, "**", "libcupti.so*"), recursive=True))
        path = found[0] if found else "libcupti.so"
    out["libcupti"] = path
    cupti = ctypes.CDLL(path)
    counts = {}
    BUF = 8 << 20
    buffers = []
    REQ = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                           ctypes.POINTER(ctypes.c_size_t))
    DONE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
    def requested(buf, size, maxrec):
        mem = ctypes.create_string_buffer(BUF + 8)
        buffers.append(mem)
        addr = (ctypes.addressof(mem) + 7) & ~7
        buf[0] = addr; size[0] = BUF; maxrec[0] = 0
    record = ctypes.c_void_p()
    def completed(ctx, stream, buf, size, valid):
        while cupti.cuptiActivityGetNextRecord(ctypes.c_void_p(buf), ctypes.c_size_t(valid), ctypes.byref(record)) == 0:
            kind = ctypes.cast(record, ctypes.POINTER(ctypes.c_uint32))[0]
            counts[kind] = counts.get(kind, 0) + 1
    req_cb, done_cb = REQ(requested), DONE(completed)
    rc = cupti.cuptiActivityRegisterCallbacks(req_cb, done_cb)
    kinds = [10] if way == "cupti_kernels" else [10, 1, 2]  # CONCURRENT_KERNEL, MEMCPY, MEMSET
    for k in kinds:
        rc = rc or cupti.cuptiActivityEnable(ctypes.c_int(k))
    out["cupti_rc"] = rc
    t, c = lap("start", t, c)
    ops(True)
    torch.ones(1 << 20, device="cuda").cpu()
    t, c = lap("traced_ops", t, c)
    cupti.cuptiActivityFlushAll(ctypes.c_uint32(1))
    for k in kinds:
        cupti.cuptiActivityDisable(ctypes.c_int(k))
    t, c = lap("stop", t, c)
    out["device_records"] = sum(counts.values())
    out["records_by_kind"] = {str(k): v for k, v in counts.items()}
print(json.dumps(out), flush=True)
"""


def run_once(count: int, way: str, env: dict) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        barrier = os.path.join(tmp, "go")
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, barrier, way], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for _ in range(count)]
        deadline = time.time() + 300
        while sum(1 for f in os.listdir(tmp) if f.startswith("go.ready.")) < count:
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                break
            time.sleep(0.01)
        open(barrier, "w").close()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            try:
                results.append(json.loads(out.strip().splitlines()[-1]))
            except (IndexError, json.JSONDecodeError):
                results.append({"way": way, "error": (err or out)[-800:]})
        return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--counts", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--ways", nargs="+", default=["torch_cpu_cuda", "torch_cuda", "cupti_kernels", "cupti_device"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", help="write every process's record here")
    args = ap.parse_args()
    env = dict(os.environ)
    rows, records = [], []
    for rep in range(args.repeats):
        for count in args.counts:
            for way in args.ways:
                res = run_once(count, way, env)
                records.extend(dict(r, count=count, repeat=rep) for r in res)
                ok = [r for r in res if "error" not in r]
                row = {"count": count, "way": way, "repeat": rep, "ok": len(ok)}
                for key in ("start", "start_cpu", "traced_ops", "traced_ops_cpu", "stop", "device_records"):
                    vals = [r[key] for r in ok if key in r]
                    row[key] = round(statistics.median(vals), 4) if vals else None
                errors = [r["error"] for r in res if "error" in r]
                if errors:
                    row["error"] = errors[0][-300:]
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "records": records}, f, indent=1)


if __name__ == "__main__":
    main()
