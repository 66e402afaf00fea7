"""Timing for the `profile` job: input sets, L2 flush, per-call device time, wall time, statistics.

On CUDA every timed call runs inside a profiler range `cuda_agent_call_{i}` that ends after a device-wide
synchronise; the device time of call i is the summed duration of the device activities (kernels, memcpy,
memset, on any stream) that start inside that range. Wall time is perf_counter around the call and the
synchronise. On the CPU only wall time exists. Each call gets its label (`warm-up call 0`, `timed call 3`)
and, outside the timed region, `after(label, inputs, output)` runs the caller's checks (the candidate's
guards in the profile job). `bytes_moved` is the speed-of-light numerator (HACKS.md A10).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from .errors import phase
from .models import synchronize
from .nested import as_arg_list, tensor_bytes, to_device

INPUT_BUDGET_BYTES = 2 << 30
CALL_RANGE = "cuda_agent_call_{}"
MAX_KERNELS = 50

Call = Callable[[list, str], Any]          # call(inputs, label) -> output
After = Callable[[str, list, Any], None]  # after(label, inputs, output), outside the timed region


def no_check(label: str, inputs: list, output: Any) -> None:
    return None


@dataclass
class Timings:
    """Per-call times of the timed calls, and the outputs kept alive until the end."""

    wall_us: list[float] = field(default_factory=list)
    device_us: list[float] | None = None
    kernels: list[dict] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)


def make_input_sets(get_inputs: Callable, seed: int, count: int, device: str,
                    budget_bytes: int = INPUT_BUDGET_BYTES) -> list[list]:
    """`count` input sets from get_inputs() after manual_seed(seed), moved to `device`.

    Stops early (the caller reuses the sets round-robin) when the next set would take the total over
    `budget_bytes`; there is always at least one set.
    """
    torch.manual_seed(seed)
    sets: list[list] = []
    total = 0
    for i in range(count):
        with phase("task", f"get_inputs() (input set {i})"):
            inputs = as_arg_list(get_inputs())
        size = tensor_bytes(inputs)
        if sets and total + size > budget_bytes:
            break
        sets.append(to_device(inputs, device))
        total += size
    return sets


class L2Flusher:
    """Overwrites a buffer of twice the L2 size, so no timed call starts with a warm L2."""

    def __init__(self, enabled: bool):
        self.buffer = None
        if enabled:
            l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
            self.buffer = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")

    def flush(self, i: int) -> None:
        if self.buffer is not None:
            self.buffer.fill_(i & 255)


def warm_up(call: Call, input_sets: list[list], count: int, device: str, kind: str,
            after: After = no_check) -> float | None:
    """Runs `count` calls (synchronised); returns the seconds of the first one, None when count is 0."""
    first_seconds = None
    for i in range(count):
        label = f"warm-up call {i}"
        inputs = input_sets[i % len(input_sets)]
        start = time.perf_counter()
        with phase(kind, label):
            output = call(inputs, label)
            synchronize(device)
        if i == 0:
            first_seconds = time.perf_counter() - start
        after(label, inputs, output)
    return first_seconds


def time_calls_cpu(call: Call, input_sets: list[list], first: int, iters: int, kind: str,
                   after: After = no_check) -> Timings:
    """Wall time of `iters` calls on input sets first, first+1, ... (round-robin)."""
    timings = Timings()
    for i in range(iters):
        label = f"timed call {i}"
        inputs = input_sets[(first + i) % len(input_sets)]
        with phase(kind, label):
            start = time.perf_counter()
            output = call(inputs, label)
            end = time.perf_counter()
        timings.wall_us.append((end - start) * 1e6)
        timings.outputs.append(output)
        after(label, inputs, output)
    return timings


def time_calls_cuda(call: Call, input_sets: list[list], first: int, iters: int, kind: str,
                    flusher: L2Flusher, after: After = no_check,
                    started: Callable[[], None] | None = None) -> Timings:
    """Wall and device time of `iters` calls under the profiler, one named range per call.

    `started()` runs once the profiler runs, before the first call (a thread baseline taken there
    includes the profiler's own threads).
    """
    timings = Timings()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        if started is not None:
            started()
        for i in range(iters):
            label = f"timed call {i}"
            inputs = input_sets[(first + i) % len(input_sets)]
            flusher.flush(i)
            torch.cuda.synchronize()
            with phase(kind, label):
                with record_function(CALL_RANGE.format(i)):
                    start = time.perf_counter()
                    output = call(inputs, label)
                    torch.cuda.synchronize()
                    end = time.perf_counter()
            timings.wall_us.append((end - start) * 1e6)
            timings.outputs.append(output)
            after(label, inputs, output)
    timings.device_us, timings.kernels = device_times(prof.events(), iters)
    return timings


def is_device_activity(event: Any) -> bool:
    """A kernel/memcpy/memset on the GPU (not a CPU op, not a user annotation mirrored on the GPU)."""
    if event.device_type != DeviceType.CUDA:
        return False
    return not getattr(event, "is_user_annotation", False)


def call_windows(events: list, iters: int) -> list[tuple[float, float]]:
    """[start, end] (µs) of the CPU ranges cuda_agent_call_0 .. cuda_agent_call_{iters-1}."""
    found: dict[str, tuple[float, float]] = {}
    for event in events:
        if event.device_type == DeviceType.CPU and event.name.startswith("cuda_agent_call_"):
            found[event.name] = (event.time_range.start, event.time_range.end)
    windows = []
    for i in range(iters):
        name = CALL_RANGE.format(i)
        if name not in found:
            raise RuntimeError(f"the profiler recorded no range {name}")
        windows.append(found[name])
    return windows


def device_times(events: list, iters: int) -> tuple[list[float], list[dict]]:
    """Per-call device µs and the kernels (name, calls, total_us) of all calls, longest first."""
    windows = call_windows(events, iters)
    per_call = [0.0] * iters
    kernels: dict[str, list] = {}
    for event in events:
        if not is_device_activity(event):
            continue
        start = event.time_range.start
        for i, (lo, hi) in enumerate(windows):
            if lo <= start <= hi:
                duration = event.time_range.end - start
                per_call[i] += duration
                entry = kernels.setdefault(event.name, [0, 0.0])
                entry[0] += 1
                entry[1] += duration
                break
    table = [{"name": name, "calls": calls, "total_us": total} for name, (calls, total) in kernels.items()]
    table.sort(key=lambda k: k["total_us"], reverse=True)
    return per_call, table[:MAX_KERNELS]


def bytes_moved(inputs: Any, outputs: Any) -> int:
    """Bytes a call must at least read and write: every input and output tensor once (HACKS.md A10).

    A call faster than bytes_moved / peak bandwidth is impossible (the speed-of-light floor).
    """
    return tensor_bytes(inputs) + tensor_bytes(outputs)


def median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def mean(values: list[float] | None) -> float | None:
    return statistics.fmean(values) if values else None
