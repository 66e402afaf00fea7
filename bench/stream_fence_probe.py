#!/usr/bin/env python3
"""Where an unjoined side stream hides from the stream-order fences (HACKS.md A1; issue 22), on a GPU.

Loads a built candidate extension (`cuda-agent build --out EXT.so`) whose `relu_scale_forward(x, scale)`
may run its kernel on a stream of its own, and times CALLS calls the way the profile job does: a spin
fence on the caller's stream, the call, then the end markers. Three witnesses of "the caller's stream
was done with the call" are compared:
  spin     torch.cuda._sleep(1) on the caller's stream (the kernel marker)
  memcpy   a 4-byte device→pinned-host copy on the caller's stream (a copy engine, not an SM)
  events   the fence's end + the time between a timing event recorded after the fence and one recorded
           after the call (what the judge uses besides the spin since 2026-11-25)
For every device activity of a call that is not on the caller's stream (kineto's device_resource_id),
`late` = its end − the witness: > 0 means it still ran after the caller's stream was done.
The JSON line per variant: how many calls each witness caught (late > 1 µs; 2 µs for the events),
min/median/max late.

    python3 bench/stream_fence_probe.py --ext /tmp/a1.so --numel 16777216 --calls 40
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def load(path: str):
    loader = importlib.machinery.ExtensionFileLoader("cuda_extension", path)
    spec = importlib.util.spec_from_file_location("cuda_extension", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def joined_side_stream(x: torch.Tensor, scale: float) -> torch.Tensor:
    """A legitimate fork/join: work on a side stream, joined back before returning."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.relu(x) * scale
    torch.cuda.current_stream().wait_stream(side)
    y.record_stream(torch.cuda.current_stream())
    return y


def run(variant: str, forward, x: torch.Tensor, calls: int, spin_cycles: int, priority: int | None) -> dict:
    stream = torch.cuda.Stream(priority=priority) if priority is not None else torch.cuda.current_stream()
    scratch = torch.zeros(1, device="cuda")
    host = torch.empty(1, pin_memory=True)
    pairs = []
    with torch.cuda.stream(stream):
        for _ in range(3):
            forward(x, 2.0)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(calls):
                torch.cuda.synchronize()
                torch.cuda._sleep(spin_cycles)
                fenced, done = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                fenced.record()
                with record_function(f"probe_call_{i}"):
                    y = forward(x, 2.0)
                    done.record()
                    torch.cuda._sleep(1)
                    host.copy_(scratch, non_blocking=True)
                    torch.cuda.synchronize()
                pairs.append((fenced, done))
                del y
    events = prof.profiler.kineto_results.events()
    windows = {}
    for e in events:
        if e.name().startswith("probe_call_") and e.device_type() == torch.autograd.DeviceType.CPU:
            windows[int(e.name().rsplit("_", 1)[1])] = (e.start_ns(), e.end_ns())
    device = sorted((e for e in events if e.device_type() == torch.autograd.DeviceType.CUDA
                     and not e.is_user_annotation()), key=lambda e: e.start_ns())
    spins = [e for e in device if "spin_kernel" in e.name()]
    late = {"spin": [], "memcpy": [], "events": []}
    caught = {"spin": 0, "memcpy": 0, "events": 0}
    streams = set()
    for i, (lo, hi) in sorted(windows.items()):
        mine = [e for e in device if lo <= e.start_ns() <= hi]
        markers = [e for e in mine if "spin_kernel" in e.name()]
        copies = [e for e in mine if e.name().startswith("Memcpy DtoH")]
        if not markers or not copies:
            continue
        spin, copy = markers[-1], copies[-1]
        caller = spin.device_resource_id()
        work = [e for e in mine if e is not spin and e is not copy]
        side = [e for e in work if e.device_resource_id() != caller]
        streams.update(e.device_resource_id() for e in work)
        if not side:
            continue
        end = max(e.end_ns() for e in side)
        fence = spins[spins.index(spin) - 1]
        witness_ns = fence.end_ns() + pairs[i][0].elapsed_time(pairs[i][1]) * 1e6
        for name, start_ns, slack in (("spin", spin.start_ns(), 1.0), ("memcpy", copy.start_ns(), 1.0),
                                      ("events", witness_ns, 2.0)):
            value = (end - start_ns) / 1e3
            late[name].append(value)
            caught[name] += value > slack
    return {"variant": variant, "calls": calls, "numel": x.numel(), "priority": priority,
            "streams_seen": len(streams), "calls_with_side_work": len(late["spin"]),
            "caught": caught,
            "late_us": {k: {"min": round(min(v), 2), "median": round(statistics.median(v), 2),
                            "max": round(max(v), 2)} for k, v in late.items() if v}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ext", required=True)
    ap.add_argument("--numel", type=int, nargs="+", default=[1 << 24])
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--spin-cycles", type=int, default=200_000)
    args = ap.parse_args()
    ext = load(args.ext)
    for numel in args.numel:
        x = torch.randn(numel, device="cuda")
        for variant, forward, priority in (("unjoined", ext.relu_scale_forward, None),
                                           ("unjoined_high_priority_caller", ext.relu_scale_forward, -1),
                                           ("joined", joined_side_stream, None)):
            print(json.dumps(run(variant, forward, x, args.calls, args.spin_cycles, priority)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
