#!/usr/bin/env python3
"""What one fingerprinted input set costs, piece by piece (issue 46's budget): per task, the seconds per
set of making the inputs, the forward, the candidate's and the reference's chunk sums, their copy back,
the op guard around a forward, and the two loops as the jobs run them (nothing waits for the device
between sets) with and without the CUPTI activity trace that the candidate's profile job keeps running
through its verification; then what reading that trace back costs per record.

    python3 bench/flaky/set_cost.py TASK.py [TASK.py ...] [--sets 64] [--device cuda] [--out FILE.json]

The reference's Model stands in for a candidate's forward; the guard's cost is measured on a forward
that only allocates (the guard refuses torch's compute). Medians over --repeats runs of --sets sets.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from cuda_agent_harness import sampled_checks, timing  # noqa: E402
from cuda_agent_harness.comparison import Tolerance  # noqa: E402
from cuda_agent_harness.guards import OpGuard  # noqa: E402
from cuda_agent_harness.inputs import make_input_set  # noqa: E402
from cuda_agent_harness.integrity import check_output, weight_tensors  # noqa: E402
from cuda_agent_harness.jobs.candidate import guarded_forward  # noqa: E402
from cuda_agent_harness.models import seeded_reference, synchronize  # noqa: E402
from cuda_agent_harness.nested import named_tensors  # noqa: E402
from cuda_agent_harness.process_watch import ProcessWatch  # noqa: E402
from cuda_agent_harness.task_module import import_task  # noqa: E402


class Allocates(torch.nn.Module):
    """A forward the op guard accepts: one allocation shaped like the reference's output."""

    def __init__(self, like: torch.Tensor):
        super().__init__()
        self.shape, self.dtype = like.shape, like.dtype

    def forward(self, *_inputs: torch.Tensor) -> torch.Tensor:
        return torch.empty(self.shape, dtype=self.dtype, device="cuda" if torch.cuda.is_available() else "cpu")


def per_set(device: str, sets: int, body) -> float:
    """Seconds per set of `body(k)` over `sets` sets, the device waited for once at the end."""
    synchronize(device)
    start = time.perf_counter()
    for k in range(sets):
        body(k)
    synchronize(device)
    return (time.perf_counter() - start) / sets


def measure(task_path: str, device: str, sets: int, repeats: int) -> dict:
    task = import_task(task_path)
    _, model = seeded_reference(task, 1, device)
    tolerance = Tolerance.fixed(1e-4, 1e-4)
    weights = sampled_checks.Weights(7, device)
    first = make_input_set(task, 1, device)
    with torch.no_grad():
        out = model(*first)
    guard, watch = OpGuard(device), ProcessWatch(device)
    allocates = Allocates(out)
    sampled_checks.fingerprint(out, weights)  # the weight vectors made once, as within a judgement

    def forward(inputs):
        with torch.no_grad():
            return model(*inputs)

    def candidate_loop(k: int, pending: sampled_checks.Pending) -> None:
        inputs = make_input_set(task, 1000 + k, device)
        output = forward(inputs)
        check_output(output, device, named_tensors(inputs, "input") + weight_tensors(model), path="o")
        pending.add(output)

    def reference_loop(k: int, pending: sampled_checks.Pending) -> None:
        inputs = make_input_set(task, 1000 + k, device)
        pending.add(forward(inputs))

    pieces: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        pieces.setdefault(name, []).append(seconds)

    for _ in range(repeats):
        add("inputs", per_set(device, sets, lambda k: make_input_set(task, 1000 + k, device)))
        add("forward", per_set(device, sets, lambda k: forward(first)))
        add("guard_allocating_forward", per_set(device, sets, lambda k: guarded_forward(
            allocates, first, device, guard, "set", watch, sync=False)))
        add("plain_allocating_forward", per_set(device, sets, lambda k: allocates(*first)))
        for side, tol in (("candidate", None), ("reference", tolerance)):
            pending = sampled_checks.Pending(weights, tol)
            add(f"{side}_sums", per_set(device, sets, lambda k, p=pending: p.add(out)))
            start = time.perf_counter()
            pending.finish()
            add(f"{side}_finish", (time.perf_counter() - start) / sets)
        for traced in (False, True):
            profiler = timing.start_device_profiler() if traced and device == "cuda" else None
            for side, tol, loop in (("candidate", None, candidate_loop), ("reference", tolerance, reference_loop)):
                pending = sampled_checks.Pending(weights, tol)
                seconds = per_set(device, sets, lambda k, p=pending, f=loop: f(k, p))
                start = time.perf_counter()
                pending.finish()
                seconds += (time.perf_counter() - start) / sets
                add(f"{side}_loop{'_traced' if profiler else ''}", seconds)
            if profiler is not None:
                synchronize(device)
                profiler.stop()
                start = time.perf_counter()
                events = profiler.events()
                add("trace_read_per_record", (time.perf_counter() - start) / max(1, len(events)))
                add("trace_records_per_set", len(events) / (2 * sets))
    return {name: statistics.median(values) for name, values in pieces.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--sets", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    results = {}
    for task in args.tasks:
        results[task] = measure(task, args.device, args.sets, args.repeats)
        shown = {k: (round(v * 1e3, 3) if not k.startswith("trace_records") else round(v, 1))
                 for k, v in results[task].items()}
        print(Path(task).stem, "ms per set (trace_records_per_set: records):", json.dumps(shown), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"device": args.device, "sets": args.sets, "repeats": args.repeats,
                                        "torch": torch.__version__, "tasks": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
