"""Timing for the `profile` job: input sets, L2 flush, per-call device time, wall time, statistics.

On CUDA every timed call runs inside a profiler range `cuda_agent_call_{i}` that ends after a device-wide
synchronise (the profiler: CUPTI's activity record, cupti.py, or torch.profiler where CUPTI does not
load); the device time of call i is the summed duration of the device activities (kernels, memcpy,
memset, on any stream) that start inside that range. Wall time is perf_counter around the call and the
synchronise. On the CPU only wall time exists.

Stream order (HACKS A1), for the candidate: before each timed call a spin kernel (torch.cuda._sleep, longer
than the call's host time) is queued on the caller's stream, outside the range, then a timing event and a
one-cycle anchor spin; right after the call returns a second event and a one-cycle spin mark the end of
the caller's stream. Every device activity of the call must start after the first spin ended (it waited
for the work queued before it) and end before the caller's stream was done with the call (the caller's
stream waited for it). When that stream was done has two witnesses: the marker spin's start (a GPU
timestamp of the profiler's clock; but a kernel, so an unjoined grid that fills every SM can hold its
dispatch back until its own last wave: seen on an H100) and, for activities on other streams (kineto's
stream id), the anchor's start plus the time between the two events (stamped by the stream itself,
without an SM), raised to the end of the call's last activity on the caller's stream. The anchor, not
the fence's end: the first event is stamped when the stream reaches it, and the GPU may run another
process's context in between (time-slicing: a legitimate joined stream was once refused by 1.6 ms on an
H200 with four judgements at once, when the fence's end stood for it); the anchor starts after the event
was stamped, so the witness can only say "done" late, never early. The events' timer and the profiler's
clock do not agree exactly (on an H100 a legitimate 125 µs kernel on the caller's stream ended 2.7 µs
after the events said "done"), hence that witness's slack of 2 µs plus 5% of the interval. Either witness
catching an activity fails it, so work on a stream the candidate forked but never joined is caught
however many SMs it takes;
the profile job fails it with "unjoined_stream". Spin kernels are not counted as the call's device time;
a candidate kernel may not be named spin_kernel (the judge refuses it). Each call gets its label
(`warm-up call 0`, `timed call 3`)
and, outside the timed region, `after(label, inputs, output)` runs the caller's checks (the candidate's
guards in the profile job). `bytes_moved` is the speed-of-light numerator (HACKS.md A10).

When the profile job also checked the candidate (one process for its verification and its timing), the
profiler runs from the job's start, and the time between the checks' end and the go of the timing (the
job holds no device lease then: the judge compares the checks' outputs) is the range BETWEEN_RANGE: any
device activity that starts inside it is work the candidate left running past its forward
(`Timings.between`), which would run beside another judgement's timed calls; the job fails it.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from . import cupti
from .errors import phase
from .models import synchronize
from .nested import tensor_bytes

CALL_RANGE = "cuda_agent_call_{}"
BETWEEN_RANGE = "cuda_agent_between_checks_and_timing"  # no device work of the job may start in it
MAX_KERNELS = 1000          # distinct names in the kernel table (the judge audits all of them)
SPIN_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: the stream-order fences
ORDER_SLACK_US = 1.0         # timestamp granularity of back-to-back kernels on one stream
EVENT_SLACK_US = 2.0         # the events' witness: event resolution (0.5 µs), the fence event's own latency
EVENT_SLACK_SHARE = 0.05     # ... plus this share of its interval (the two clocks' rates differ)
SPIN_MIN_S, SPIN_MAX_S = 200e-6, 20e-3  # a fence's spin (a margin over a fast call's host time)
CALIBRATION_SPIN_CYCLES = 2_000_000  # ≈ 1 ms at the H100's 1.98 GHz: outlasts an op's launch

Call = Callable[[list[Any], str], Any]          # call(inputs, label) -> output
After = Callable[[str, list[Any], Any], None]  # after(label, inputs, output), outside the timed region


def no_check(label: str, inputs: list[Any], output: Any) -> None:
    return None


OUTPUT_BUDGET_BYTES = 4 << 30


class OutputKeeper:
    """Which timed calls' outputs stay alive until the end: all of them while they fit in the budget
    (no call then gets the memory of an output just freed), beyond it only the `always` calls (call 0
    and the spot-checked ones, whose outputs are read at the end) — a task with outputs of several GB
    would otherwise run out of device memory in its own baseline."""

    def __init__(self, always: set[int] | None = None, budget_bytes: int = OUTPUT_BUDGET_BYTES):
        self.always = {0} | set(always or ())
        self.budget_bytes = budget_bytes
        self.kept_bytes = 0

    def __call__(self, call: int, output: Any) -> Any:
        """`output` to keep, or None for one dropped."""
        if call in self.always:
            return output
        size = tensor_bytes(output)
        if self.kept_bytes + size > self.budget_bytes:
            return None
        self.kept_bytes += size
        return output


@dataclass
class Timings:
    """Per-call times of the timed calls, and their outputs kept alive until the end (None for those an
    OutputKeeper dropped)."""

    wall_us: list[float] = field(default_factory=list)
    device_us: list[float] | None = None
    kernels: list[dict[str, Any]] = field(default_factory=list)
    call_kernels: list[list[str]] = field(default_factory=list)  # distinct device activities per call
    unjoined: list[dict[str, Any]] = field(default_factory=list)           # activities out of the caller's stream order
    between: list[dict[str, Any]] = field(default_factory=list)            # activities in BETWEEN_RANGE (module doc)
    outputs: list[Any] = field(default_factory=list)
    profiler_seconds: dict[str, Any] = field(default_factory=dict)         # where the profiler's time went


class Calibration:
    """A fixed workload, timed right before the timed calls (after the warm-up brought the clocks
    up): a device copy (memory bandwidth) and a float64 GEMM (arithmetic; no TF32 or
    reduced-precision path, so the precision policy's backend flags do not change it). Minimum of
    `repeats` runs each, in µs. The judge stores it with the baselines and re-measures them when it
    moves (a throttled or shared GPU would otherwise be compared with baselines timed on a quiet one).

    Made in two parts. The constructor allocates the operands and runs each op once (the allocations,
    the fills, cuBLAS's float64 kernel loaded and chosen): the profile job does it while preparing,
    before its exclusive lease. `measure()` then only times, under the lease; the operands are freed
    after it (their blocks stay in the allocator's cache for the timed calls, as before).

    On CUDA a spin kernel (CALIBRATION_SPIN_CYCLES, about 1 ms) runs before each timed op, so that
    the start event is recorded on a busy stream and the time is the device's alone: without it the
    host's time to launch the op counted too, and a busy host (the judgements beside this one, the
    candidate's checks and the profiler on the launch path) read as a slower device — 302 → 392 µs
    for the GEMM on one H100 with 8 judgements at once, which re-measured baselines for nothing."""

    def __init__(self, device: str, repeats: int = 7):
        self.cuda = device == "cuda"
        self.repeats = repeats
        n_copy = (64 << 20) if self.cuda else (4 << 20)
        n_gemm = 2048 if self.cuda else 192
        self.src = torch.zeros(n_copy, dtype=torch.float32, device=device)
        self.dst = torch.empty_like(self.src)
        self.a = torch.full((n_gemm, n_gemm), 0.5, dtype=torch.float64, device=device)
        self.b = torch.full((n_gemm, n_gemm), 0.25, dtype=torch.float64, device=device)
        self._copy()  # the first call of each op pays for its set-up
        self._gemm()
        if self.cuda:
            torch.cuda._sleep(1)  # the spin kernel's module loaded too
            torch.cuda.synchronize()

    def _copy(self) -> Any:
        return self.dst.copy_(self.src)

    def _gemm(self) -> Any:
        return torch.mm(self.a, self.b)

    def _best(self, op: Callable[[], Any]) -> float:
        times: list[float] = []
        for _ in range(self.repeats):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(CALIBRATION_SPIN_CYCLES)
                start.record()
                op()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e3)
            else:
                t = time.perf_counter()
                op()
                times.append((time.perf_counter() - t) * 1e6)
        return min(times)

    def measure(self) -> dict[str, Any]:
        """Times both ops, then frees the operands; a Calibration measures once."""
        if self.src is None:
            raise RuntimeError("Calibration.measure: already measured")
        try:
            return {"copy_us": self._best(self._copy), "gemm_us": self._best(self._gemm)}
        finally:
            # Freed once measured (measure refuses a second call); typed as the tensors they were.
            self.src = self.dst = self.a = self.b = None  # type: ignore[assignment]


def calibrate(device: str, repeats: int = 7) -> dict[str, Any]:
    """Set-up and measurement at once (Calibration), for callers with nothing to prepare."""
    return Calibration(device, repeats).measure()


def device_uuid(device: str) -> str | None:
    """The GPU's UUID, or None (CPU, or torch cannot tell). GPUs of one model differ in speed (two
    H100s of one host: copy calibrations 10% apart), so the judge keeps baselines per GPU as well."""
    if device != "cuda":
        return None
    try:
        return str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    except Exception:  # noqa: BLE001 - an older torch without `uuid`: per-model baselines only
        return None


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

    def __init__(self) -> None:
        self.lib = None
        path = cupti.loaded_library("libcudart.so")
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


class StreamFences:
    """The spin kernels and events around each timed call that make stream order measurable (see the
    module doc)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.cycles = 0
        self.events: list[tuple[Any, Any]] = []  # per timed call: (after the fence, after the call)

    def calibrate(self, host_seconds: float) -> None:
        """Sizes the first spin to outlast a call's host time: twice `host_seconds`, the slowest warm-up
        call's host time after the first (fence_host_seconds), at least SPIN_MIN_S. The host time, not
        the call's whole time: every launch of a call is made before it returns, so a spin that long
        still runs when the call's last launch is made, and a device-bound call no longer waits twice
        its device time behind its fence under the exclusive lease."""
        if not self.enabled:
            return
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        probe = 2_000_000
        start.record()
        torch.cuda._sleep(probe)
        end.record()
        end.synchronize()
        cycles_per_s = probe / max(start.elapsed_time(end) * 1e-3, 1e-9)
        seconds = min(max(2 * host_seconds, SPIN_MIN_S), SPIN_MAX_S)
        self.cycles = int(seconds * cycles_per_s)

    def before(self) -> None:
        if self.enabled:
            torch.cuda._sleep(self.cycles)
            fenced = torch.cuda.Event(enable_timing=True)
            fenced.record()
            torch.cuda._sleep(1)  # the anchor: starts once the event was stamped (the module doc)
            self.events.append((fenced, None))

    def after(self) -> None:
        if self.enabled:
            done = torch.cuda.Event(enable_timing=True)
            done.record()
            torch.cuda._sleep(1)
            self.events[-1] = (self.events[-1][0], done)

    def done_after_fence_us(self) -> list[float] | None:
        """Per timed call: µs from the fence's event to the caller's stream being done with the call
        (the events' witness, counted from the anchor spin's start); None when disabled. Call after the
        device was synchronised."""
        if not self.enabled:
            return None
        return [fenced.elapsed_time(done) * 1e3 for fenced, done in self.events]


def fence_host_seconds(durations: list[float]) -> float:
    """The warm-up call host time the fences are sized by: the slowest call after the first, which pays
    once for loading kernels and creating library handles (a fence of twice that would make every
    timed call wait up to SPIN_MAX_S for nothing)."""
    return max(durations[1:] or durations, default=0.0)


def warm_up(call: Call, input_sets: list[list[Any]], count: int, device: str, kind: str,
            after: After = no_check, host_durations: list[float] | None = None) -> float | None:
    """Runs `count` calls (synchronised); returns the seconds of the first one (its device work
    included), None when count is 0. Each call's host time — from the call to its return, before the
    synchronise: what a stream fence must outlast — is appended to `host_durations` when given."""
    first_seconds = None
    for i in range(count):
        label = f"warm-up call {i}"
        inputs = input_sets[i % len(input_sets)]
        start = time.perf_counter()
        with phase(kind, label):
            output = call(inputs, label)
            returned = time.perf_counter()
            synchronize(device)
        seconds = time.perf_counter() - start
        if i == 0:
            first_seconds = seconds
        if host_durations is not None:
            host_durations.append(returned - start)
        after(label, inputs, output)
    return first_seconds


def freeze_garbage() -> None:
    """Collects the garbage now and moves every object left out of the collector's way (gc.freeze),
    so that the full collection before the timed calls scans only what was made since: with torch
    imported that collection takes 0.05-0.1 s, which the profile job spends where it waits for a go
    rather than under the exclusive lease. Frozen objects are never collected; a job's short life
    makes that harmless."""
    gc.collect()
    gc.freeze()


class LoopClock:
    """Seconds of the timed loop by part, summed over its calls: `lap(part)` charges the time since
    the previous lap to `part` (the profile job reports them in `profiler_seconds.loop`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, part: str) -> None:
        now = time.perf_counter()
        self.seconds[part] = self.seconds.get(part, 0.0) + now - self._last
        self._last = now


def time_calls_cpu(call: Call, input_sets: list[list[Any]], first: int, iters: int, kind: str,
                   after: After = no_check, keep: OutputKeeper | None = None) -> Timings:
    """Wall time of `iters` calls on input sets first, first+1, ... (round-robin)."""
    timings = Timings()
    keep = keep or OutputKeeper()
    loop = LoopClock()
    for i in range(iters):
        label = f"timed call {i}"
        inputs = input_sets[(first + i) % len(input_sets)]
        with phase(kind, label):
            start = time.perf_counter()
            output = call(inputs, label)
            end = time.perf_counter()
        loop.lap("call")
        timings.wall_us.append((end - start) * 1e6)
        after(label, inputs, output)
        loop.lap("checks")
        timings.outputs.append(keep(i, output))
        loop.lap("keep")
    timings.profiler_seconds = {"loop": loop.seconds}
    return timings


@dataclass(frozen=True)
class Span:
    start: float  # µs, one clock for host and device events
    end: float


@dataclass(frozen=True)
class Activity:
    """One profiler event: a host range or op (DeviceType.CPU) or a device activity (DeviceType.CUDA:
    kernel, memcpy, memset, or a user range mirrored on the GPU, is_user_annotation)."""
    name: str
    device_type: DeviceType
    time_range: Span
    is_user_annotation: bool = False
    stream: int | None = None  # a device activity's stream (kineto's device_resource_id)


class _Profiler:
    """What both profilers share: start and stop, timed into `seconds`, each once."""

    def __init__(self, backend: str):
        self.seconds: dict[str, Any] = {"backend": backend}
        self.running = False

    def start(self) -> None:
        t = time.perf_counter()
        self._begin()
        self.running = True
        self.seconds["start"] = time.perf_counter() - t

    def stop(self) -> None:
        if self.running:
            t = time.perf_counter()
            self._end()
            self.running = False
            self.seconds["stop"] = time.perf_counter() - t

    def _begin(self) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        raise NotImplementedError


class DeviceProfiler(_Profiler):
    """torch.profiler over CPU and CUDA activity: the fallback where CUPTI cannot be used directly
    (`start_device_profiler`). Starting it takes seconds (kineto and CUPTI initialise)."""

    def __init__(self) -> None:
        super().__init__("kineto")
        self.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])

    def _begin(self) -> None:
        self.prof.__enter__()

    def _end(self) -> None:
        self.prof.__exit__(None, None, None)

    def range(self, name: str) -> Any:
        """A host range in the record (call_windows reads the timed calls' ranges)."""
        return record_function(name)

    def events(self) -> list[Activity]:
        """The recorded events as Activity records, read from kineto's results directly: torch's
        FunctionEvent tree (prof.events()) costs ≈40 µs per event, 0.8 s for the 18,000 events of
        a KernelBench GEMM task's 25 guarded calls."""
        t = time.perf_counter()
        results = self.prof.profiler.kineto_results if self.prof.profiler is not None else None
        assert results is not None  # the profile has stopped: its results are there
        raw = results.events()
        base = min((e.start_ns() for e in raw), default=0)  # µs since then: exact in a float
        events = [Activity(e.name(), e.device_type(), Span((e.start_ns() - base) / 1e3, (e.end_ns() - base) / 1e3),
                           e.is_user_annotation(),
                           e.device_resource_id() if e.device_type() == DeviceType.CUDA else None)
                  for e in raw]
        self.seconds["events"] = time.perf_counter() - t
        self.seconds["event_count"] = len(events)
        return events


class CuptiProfiler(_Profiler):
    """The device activity straight from CUPTI's activity API (cupti.py): kernels, memcpys and memsets,
    and the host ranges marked with `range` on CUPTI's clock. Starts in hundredths of a second where
    torch.profiler takes seconds; the same interface as DeviceProfiler."""

    def __init__(self, trace: cupti.ActivityTrace):
        super().__init__("cupti")
        self.trace = trace
        self.ranges: list[tuple[str, int, int]] = []

    def _begin(self) -> None:
        self.trace.start()

    def _end(self) -> None:
        self.trace.stop()

    @contextlib.contextmanager
    def range(self, name: str) -> Iterator[None]:
        start = self.trace.timestamp_ns()
        try:
            yield
        finally:
            self.ranges.append((name, start, self.trace.timestamp_ns()))

    def events(self) -> list[Activity]:
        """The host ranges (DeviceType.CPU) and the device activities (DeviceType.CUDA), µs on one clock.
        Raises RuntimeError where CUPTI dropped records: the trace may miss a kernel."""
        t = time.perf_counter()
        records = self.trace.records()
        if self.trace.dropped:
            raise RuntimeError(f"the profiler dropped {self.trace.dropped} device activity records")
        base = min([r.start_ns for r in records] + [s for _, s, _ in self.ranges], default=0)
        events = [Activity(name, DeviceType.CPU, Span((s - base) / 1e3, (e - base) / 1e3))
                  for name, s, e in self.ranges]
        events += [Activity(r.name, DeviceType.CUDA, Span((r.start_ns - base) / 1e3, (r.end_ns - base) / 1e3),
                            False, r.stream) for r in records]
        self.seconds["events"] = time.perf_counter() - t
        self.seconds["event_count"] = len(events)
        return events


def device_profiler() -> DeviceProfiler | CuptiProfiler:
    """CUPTI directly where it loads, else torch.profiler (not started)."""
    trace = cupti.ActivityTrace.load()
    return CuptiProfiler(trace) if trace is not None else DeviceProfiler()


def start_device_profiler() -> DeviceProfiler | CuptiProfiler:
    """A running profiler: CUPTI directly, or torch.profiler where CUPTI does not load or refuses to
    start (its error kept in `seconds["cupti_error"]`): the candidate is not failed for the harness's
    choice of tracer."""
    profiler = device_profiler()
    try:
        profiler.start()
    except RuntimeError as exc:
        if not isinstance(profiler, CuptiProfiler):
            raise
        profiler = DeviceProfiler()
        profiler.seconds["cupti_error"] = str(exc)
        profiler.start()
    return profiler


def time_calls_cuda(call: Call, input_sets: list[list[Any]], first: int, iters: int, kind: str,
                    flusher: L2Flusher, after: After = no_check,
                    started: Callable[[], None] | None = None,
                    fences: StreamFences | None = None, profiler: DeviceProfiler | CuptiProfiler | None = None,
                    keep: OutputKeeper | None = None,
                    before: Callable[[int], None] | None = None) -> Timings:
    """Wall and device time of `iters` calls under the profiler (`profiler`, already running, or one
    of its own), one named range per call; the profiler is stopped at the end.

    `started()` runs once the profiler runs, before the first call (a thread baseline taken there
    includes the profiler's own threads). `before(i)` runs before call i, after its L2 flush and
    outside its window: what it puts on the device is done before the call starts and is not the call's.
    """
    timings = Timings()
    keep = keep or OutputKeeper()
    fences = fences or StreamFences(False)
    if profiler is None:
        profiler = start_device_profiler()
    torch.cuda.synchronize()
    calls_start = time.perf_counter()
    if started is not None:
        started()
    # No garbage-collection pause inside a timed call: it would add to the call's host time, and a call
    # whose host time outlasts the stream fence's spin hides work it left unjoined (A1). The collection
    # here scans only what was made since the job's last freeze_garbage().
    gc_was_enabled = gc.isenabled()
    loop = LoopClock()
    gc.collect()
    gc.disable()
    loop.lap("collect")
    try:
        for i in range(iters):
            label = f"timed call {i}"
            inputs = input_sets[(first + i) % len(input_sets)]
            flusher.flush(i)
            loop.lap("flush")
            if before is not None:
                before(i)
            torch.cuda.synchronize()
            loop.lap("before")
            fences.before()
            with phase(kind, label):
                with profiler.range(CALL_RANGE.format(i)):
                    start = time.perf_counter()
                    output = call(inputs, label)
                    fences.after()
                    torch.cuda.synchronize()
                    end = time.perf_counter()
            loop.lap("call")
            timings.wall_us.append((end - start) * 1e6)
            after(label, inputs, output)
            loop.lap("checks")
            timings.outputs.append(keep(i, output))
            del output
            loop.lap("keep")
    finally:
        if gc_was_enabled:
            gc.enable()
    profiler.seconds["calls"] = time.perf_counter() - calls_start
    profiler.seconds["loop"] = loop.seconds
    profiler.stop()
    events = profiler.events()
    timings.device_us, timings.kernels, timings.call_kernels = device_times(events, iters)
    if fences.enabled:
        timings.unjoined = out_of_stream_order(events, iters, fences.done_after_fence_us())
    timings.between = activities_in_range(events, BETWEEN_RANGE)
    timings.profiler_seconds = profiler.seconds
    return timings


def is_device_activity(event: Any) -> bool:
    """A kernel/memcpy/memset on the GPU (not a CPU op, not a user annotation mirrored on the GPU)."""
    if event.device_type != DeviceType.CUDA:
        return False
    return not getattr(event, "is_user_annotation", False)


def activities_in_range(events: list[Any], name: str) -> list[dict[str, Any]]:
    """The device activities that started inside the host range `name` ({"name", "start_us"}, µs after
    the range began); none when no such range was recorded."""
    ranges = [e.time_range for e in events if e.device_type == DeviceType.CPU and e.name == name]
    found = []
    for event in events:
        if not is_device_activity(event):
            continue
        for r in ranges:
            if r.start <= event.time_range.start <= r.end:
                found.append({"name": event.name, "start_us": event.time_range.start - r.start})
    return found


def call_windows(events: list[Any], iters: int) -> list[tuple[float, float]]:
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


def _call_of(start: float, windows: list[tuple[float, float]], starts: list[float] | None = None) -> int | None:
    """The call whose window holds `start` (the windows follow one another: a binary search over
    `starts`, their starts, when given), or None."""
    if starts is None:
        starts = [lo for lo, _ in windows]
    i = bisect.bisect_right(starts, start) - 1
    # Windows never overlap (one call after another); a start on a shared edge belongs to the first.
    if i > 0 and start == windows[i - 1][1]:
        return i - 1
    return i if i >= 0 and start <= windows[i][1] else None


def device_times(events: list[Any], iters: int) -> tuple[list[float], list[dict[str, Any]], list[list[str]]]:
    """Per-call device µs, the device activities (name, calls, total_us) of all calls, longest first,
    and the distinct activity names of each call."""
    windows = call_windows(events, iters)
    starts = [lo for lo, _ in windows]
    per_call = [0.0] * iters
    names: list[set[str]] = [set() for _ in range(iters)]
    kernels: dict[str, list[Any]] = {}
    for event in events:
        if not is_device_activity(event) or is_spin(event):
            continue
        i = _call_of(event.time_range.start, windows, starts)
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


def is_spin(event: Any) -> bool:
    return SPIN_KERNEL in event.name


def out_of_stream_order(events: list[Any], iters: int,
                        done_after_fence_us: list[float] | None = None) -> list[dict[str, Any]]:
    """Device activities of a call that started before the caller's stream was done with the work queued
    before the call, or ended after the caller's stream was done with the call (see the module doc):
    {"call", "name", "problem", "by_us"}. The spins of call i: its fence and anchor before it, its marker
    the last spin that started inside its range. `done_after_fence_us[i]`, when given, is the events'
    witness of call i: µs from its anchor's start to the caller's stream being done."""
    windows = call_windows(events, iters)
    if done_after_fence_us is not None and len(done_after_fence_us) != iters:
        raise RuntimeError(f"{len(done_after_fence_us)} stream-order event pairs for {iters} timed calls")
    device = sorted((e for e in events if is_device_activity(e)), key=lambda e: e.time_range.start)
    spins = [e for e in device if is_spin(e)]
    starts = [lo for lo, _ in windows]
    by_call: list[list[Any]] = [[] for _ in windows]  # each call's activities, fences and markers aside
    for e in device:
        i = _call_of(e.time_range.start, windows, starts)
        if i is not None and not is_spin(e):
            by_call[i].append(e)
    found = []
    for i, (lo, hi) in enumerate(windows):
        markers = [k for k, e in enumerate(spins) if lo <= e.time_range.start <= hi]
        if not markers or markers[-1] < 2:
            raise RuntimeError(f"the profiler recorded no stream-order fences around timed call {i}")
        marker, anchor, fence = spins[markers[-1]], spins[markers[-1] - 1], spins[markers[-1] - 2]
        caller = getattr(fence, "stream", None)
        mine = by_call[i]
        done, slack = None, 0.0
        if done_after_fence_us is not None and caller is not None:
            done = anchor.time_range.start + done_after_fence_us[i]
            done = max([done] + [e.time_range.end for e in mine if getattr(e, "stream", None) == caller])
            slack = EVENT_SLACK_US + EVENT_SLACK_SHARE * max(done_after_fence_us[i], 0.0)
        for e in mine:
            early = fence.time_range.end - e.time_range.start
            late = e.time_range.end - marker.time_range.start
            late = late if late > ORDER_SLACK_US else 0.0
            if done is not None and getattr(e, "stream", None) != caller and e.time_range.end - done > slack:
                late = max(late, e.time_range.end - done)
            if early > ORDER_SLACK_US:
                found.append({"call": i, "name": e.name, "problem": "started before the work queued on "
                              "the caller's stream finished (not ordered after it)", "by_us": early})
            elif late > 0:
                found.append({"call": i, "name": e.name, "problem": "was still running after the "
                              "caller's stream was done (not joined to it)", "by_us": late})
    return found


def bytes_moved(inputs: Any, outputs: Any) -> int:
    """Bytes a call must at least read and write: every input and output tensor once (HACKS.md A10).

    A call faster than bytes_moved / peak bandwidth is impossible (the speed-of-light floor).
    """
    return tensor_bytes(inputs) + tensor_bytes(outputs)


def median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def mean(values: list[float] | None) -> float | None:
    return statistics.fmean(values) if values else None
