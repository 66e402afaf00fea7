"""Timing for the `profile` job: input sets, L2 flush, per-call device time, wall time, statistics.

On CUDA every timed call runs inside a profiler range `cuda_agent_call_{i}` that ends after a device-wide
synchronise; the device time of call i is the summed duration of the device activities (kernels, memcpy,
memset, on any stream) that start inside that range. Wall time is perf_counter around the call and the
synchronise. Inside that range, right after the call returns, the current stream alone is synchronised and
a mark `cuda_agent_joined_{i}` is recorded: device work of the call still running after the mark was left
on another stream without joining it to the caller's stream (HACKS A1; the profile job fails such a
candidate with "unjoined_stream"). On the CPU only wall time exists. Each call gets its label (`warm-up call 0`, `timed call 3`)
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
JOIN_MARK = "cuda_agent_joined_{}"
MAX_KERNELS = 1000          # distinct names in the kernel table (the judge audits all of them)
JOIN_SLACK_US = 2.0         # CPU/GPU clock alignment of the profiler

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
    call_kernels: list[list[str]] = field(default_factory=list)  # distinct device activities per call
    unjoined: list[dict] = field(default_factory=list)           # activities still running at the join mark
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
    """Before each timed call: resets the persisting-L2 lines and limit, then overwrites a buffer of
    twice the L2 size, so no timed call starts with a warm (or pinned) L2 (HACKS A7)."""

    def __init__(self, enabled: bool):
        self.buffer = None
        self.persisting = PersistingL2()
        if enabled:
            l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
            self.buffer = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")

    def flush(self, i: int) -> None:
        if self.buffer is not None:
            self.persisting.reset()
            self.buffer.fill_(i & 255)


class PersistingL2:
    """cudaCtxResetPersistingL2Cache and a persisting-L2 limit of 0, through the CUDA runtime that torch
    loaded (found in /proc/self/maps). `available` is False where it cannot be found."""

    LIMIT_PERSISTING_L2 = 0x06  # cudaLimitPersistingL2CacheSize

    def __init__(self):
        self.lib = None
        path = _loaded_library("libcudart.so")
        if path is not None:
            import ctypes  # the harness's own code; candidates may not use ctypes
            try:
                self.lib = ctypes.CDLL(path)
                self.lib.cudaDeviceSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
            except (OSError, AttributeError):
                self.lib = None
        self.available = self.lib is not None
        self.errors = 0

    def reset(self) -> None:
        if self.lib is None:
            return
        if self.lib.cudaDeviceSetLimit(self.LIMIT_PERSISTING_L2, 0) != 0:
            self.errors += 1
        if self.lib.cudaCtxResetPersistingL2Cache() != 0:
            self.errors += 1


def _loaded_library(stem: str) -> str | None:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                if "/" + stem in path:
                    return path
    except OSError:
        return None
    return None


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
                    torch.cuda.current_stream().synchronize()
                    with record_function(JOIN_MARK.format(i)):
                        pass
                    torch.cuda.synchronize()
                    end = time.perf_counter()
            timings.wall_us.append((end - start) * 1e6)
            timings.outputs.append(output)
            after(label, inputs, output)
    events = prof.events()
    timings.device_us, timings.kernels, timings.call_kernels = device_times(events, iters)
    timings.unjoined = unjoined_activities(events, iters)
    return timings


def is_device_activity(event: Any) -> bool:
    """A kernel/memcpy/memset on the GPU (not a CPU op, not a user annotation mirrored on the GPU)."""
    if event.device_type != DeviceType.CUDA:
        return False
    return not getattr(event, "is_user_annotation", False)


def named_ranges(events: list, pattern: str, iters: int) -> list[tuple[float, float]]:
    """[start, end] (µs) of the CPU ranges pattern.format(0) .. pattern.format(iters - 1)."""
    prefix = pattern.split("{")[0]
    found: dict[str, tuple[float, float]] = {}
    for event in events:
        if event.device_type == DeviceType.CPU and event.name.startswith(prefix):
            found[event.name] = (event.time_range.start, event.time_range.end)
    windows = []
    for i in range(iters):
        name = pattern.format(i)
        if name not in found:
            raise RuntimeError(f"the profiler recorded no range {name}")
        windows.append(found[name])
    return windows


def call_windows(events: list, iters: int) -> list[tuple[float, float]]:
    """[start, end] (µs) of the CPU ranges cuda_agent_call_0 .. cuda_agent_call_{iters-1}."""
    return named_ranges(events, CALL_RANGE, iters)


def _call_of(start: float, windows: list[tuple[float, float]]) -> int | None:
    for i, (lo, hi) in enumerate(windows):
        if lo <= start <= hi:
            return i
    return None


def device_times(events: list, iters: int) -> tuple[list[float], list[dict], list[list[str]]]:
    """Per-call device µs, the device activities (name, calls, total_us) of all calls, longest first,
    and the distinct activity names of each call."""
    windows = call_windows(events, iters)
    per_call = [0.0] * iters
    names: list[set[str]] = [set() for _ in range(iters)]
    kernels: dict[str, list] = {}
    for event in events:
        if not is_device_activity(event):
            continue
        i = _call_of(event.time_range.start, windows)
        if i is None:
            continue
        duration = event.time_range.end - event.time_range.start
        per_call[i] += duration
        names[i].add(event.name)
        entry = kernels.setdefault(event.name, [0, 0.0])
        entry[0] += 1
        entry[1] += duration
    table = [{"name": name, "calls": calls, "total_us": total} for name, (calls, total) in kernels.items()]
    table.sort(key=lambda k: k["total_us"], reverse=True)
    return per_call, table[:MAX_KERNELS], [sorted(n) for n in names]


def unjoined_activities(events: list, iters: int) -> list[dict]:
    """Device activities of a call that end after the call's join mark (the caller's stream was done,
    they were not): {"call", "name", "after_us"}."""
    windows = call_windows(events, iters)
    marks = named_ranges(events, JOIN_MARK, iters)
    late = []
    for event in events:
        if not is_device_activity(event):
            continue
        i = _call_of(event.time_range.start, windows)
        if i is None:
            continue
        after = event.time_range.end - marks[i][0]
        if after > JOIN_SLACK_US:
            late.append({"call": i, "name": event.name, "after_us": after})
    return late


def bytes_moved(inputs: Any, outputs: Any) -> int:
    """Bytes a call must at least read and write: every input and output tensor once (HACKS.md A10).

    A call faster than bytes_moved / peak bandwidth is impossible (the speed-of-light floor).
    """
    return tensor_bytes(inputs) + tensor_bytes(outputs)


def median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def mean(values: list[float] | None) -> float | None:
    return statistics.fmean(values) if values else None
