"""Sampled checks: many cheap checks of a candidate, each on a fresh input set, compared by weighted
checksums of its outputs instead of element by element (HACKS.md B14: flaky kernels).

A kernel that is wrong on one input in eight — a race, an uninitialised read that is usually zero, a
data-dependent skip — passes the verification's five full checks and the two spot-checked timed calls
about four times in ten ((7/8)^7). Every further independent check divides that by 8/7, so the judge
fingerprints many more input sets. Per output tensor a fingerprint holds `CHUNKS` contiguous chunks:
the sum over the chunk of w_i * x_i in float64, with w a pseudo-random vector in [-1, 1] drawn from
the secret seed. The trusted reference job (jobs/reference.py) computes the same sums on the
reference's outputs, and with them a bound per chunk derived from the elementwise tolerance
(comparison.py):

    |sum w_i (a_i - e_i)| <= sum |w_i| (atol + rtol |e_i|)

holds for every chunk of an output that passes the elementwise comparison, so an output that the full
comparison accepts is never refused here (no false positive; the scaled atol is comparison.scaled_atol,
with the reference's noise floor of that set's output where noise.py measured one); a chunk whose error
exceeds that bound is refused. What the sums cannot see (a few elements slightly off inside a large
chunk) the full checks still compare exactly; what they are for is the gross failure of a flaky kernel
on some inputs: stale memory, a skipped block, a lost reduction. Chunks whose expected values are not
all finite are left to the full checks, and under a scaled tolerance so is every chunk of a tensor that
holds one (the RMS of its finite values is not measured here, and another RMS could make a bound
tighter than the elementwise rule).

Which input sets, in order:
- the timed calls' (`timed` in the plan, when the candidate's profile job also verifies): the
  profile's input sets 0, 1, … (inputs.py). The candidate computes nothing more for them: every
  warm-up and timed call on a fingerprinted set has its output fingerprinted after the call returned,
  outside its timed region (TimedFingerprints), and the judge compares each with its set's (judge
  stage `profile`, "timed_mismatch").
- then sampled sets: set k made from `sampled_set_seed(seed, k)` (the task's own `get_inputs()` under
  that seed, so every set differs in every value, not only in scale and shift); the candidate runs one
  more forward per set during its verification and writes `FILE_NAME` (judge stage `verify`,
  "sampled_mismatch").

How many: the reference decides, within the judge's options: at most `count` sets of both kinds
together, at least `min_total` whatever their time, and beyond that while its own fingerprinted
forwards took less than `seconds`; it names both numbers in its answer, and the candidate fingerprints
exactly those. The judge (src/judge/sampled_checks.h) compares the two sides.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .comparison import Floors, Tolerance, scaled_atol
from .nested import dtype_name, named_tensors, signature
from .noise import tensor_paths

CHUNKS = 32
FILE_NAME = "sampled.json"  # the candidate's fingerprints, in its output folder
# Elements turned into float64 at a time (bounds the temporaries of a large output: 128 MiB); fewer
# slices, fewer kernel launches, which are what a fingerprint costs (Pending).
SLICE_ELEMENTS = 1 << 24
# Weight vectors kept between the sets of one judgement (outputs of the same shape reuse theirs).
WEIGHT_CACHE_ELEMENTS = 1 << 26
# Rounding slack of the float64 sums, relative to sum |w e|.
SUM_SLACK = 1e-9
# The reference's budget clock waits for the device after this many sets (between, work is queued).
CLOCK_EVERY = 8


def sampled_set_seed(seed: int, k: int) -> int:
    """The seed of sampled input set k."""
    return (seed * 2_000_029 + k * 104_729 + 7) & 0x7FFF_FFFF_FFFF


class Weights:
    """The secret weight vectors (float64), one per output index and length, drawn from the judgement's
    seed, and their chunks' sums of |w| (the reference's bounds); kept between the sets of one
    judgement while they fit WEIGHT_CACHE_ELEMENTS."""

    def __init__(self, seed: int, device: str):
        self.seed = seed
        self.device = device
        self.cache: dict[tuple[int, int], torch.Tensor] = {}
        self.abs_cache: dict[tuple[int, int], torch.Tensor] = {}
        self.cached = 0

    def of(self, index: int, numel: int) -> torch.Tensor:
        key = (index, numel)
        if key in self.cache:
            return self.cache[key]
        generator = torch.Generator(device=self.device)
        generator.manual_seed((self.seed * 1_000_033 + index * 8_191 + numel) & 0x7FFF_FFFF_FFFF)
        w = torch.rand(numel, generator=generator, device=self.device, dtype=torch.float64) * 2 - 1
        if self.cached + numel <= WEIGHT_CACHE_ELEMENTS:
            self.cache[key] = w
            self.cached += numel
        return w

    def abs_sums(self, index: int, numel: int) -> torch.Tensor:
        """(1, chunks): the sum of |w| over each chunk of weight vector (index, numel)."""
        key = (index, numel)
        if key in self.abs_cache:
            return self.abs_cache[key]
        sums = _segment_reduce(self.of(index, numel).unsqueeze(0), chunk_size(numel), _abs_sum)
        if key in self.cache:  # kept with its vector
            self.abs_cache[key] = sums
        return sums


def chunk_size(numel: int) -> int:
    return max(1, math.ceil(numel / CHUNKS))


def _flat_real(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.reshape(-1)


def _sum(rows: torch.Tensor) -> torch.Tensor:
    return rows.sum(dim=-1)


def _abs_sum(rows: torch.Tensor) -> torch.Tensor:
    sums: torch.Tensor = torch.linalg.vector_norm(rows, ord=1, dim=-1)  # sum |x| in one pass, no |x| tensor
    return sums


def _segment_reduce(rows: torch.Tensor, size: int,
                    reduce: Callable[[torch.Tensor], torch.Tensor] = _sum) -> torch.Tensor:
    """(F, n) → (F, ceil(n / size)): `reduce` over consecutive segments of `size` columns."""
    whole = (rows.shape[1] // size) * size
    parts = []
    if whole:
        parts.append(reduce(rows[:, :whole].reshape(rows.shape[0], -1, size)))
    if whole < rows.shape[1]:
        parts.append(reduce(rows[:, whole:]).unsqueeze(1))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def _slices(numel: int, size: int) -> range:
    """The starts of the slices a tensor's sums are made in: whole chunks, at most SLICE_ELEMENTS each
    (bounds the float64 temporaries of a large output)."""
    return range(0, numel, max(size, (SLICE_ELEMENTS // size) * size))


@dataclass
class _Queued:
    """Where one tensor's sums lie in Pending's queue: `chunks` chunk sums of w x, then (the
    reference's) as many of |w x|, the chunks' sums of |w|, and `norms` norms of its slices."""

    dtype: torch.dtype
    floor: float
    numel: int
    chunks: int
    norms: int = 0


class Pending:
    """The fingerprints of outputs whose sums are still being computed on the device: `add` queues one
    output's (nothing waits for the device), `finish` copies them all to the host at once.

    Each output costs few kernels, because on small outputs their launches, not the device's work, are
    the cost (2026-11-29, H200, bench/flaky/set_cost.py): per slice of a tensor, the candidate's sums
    are one product and one segmented sum; the reference's add a segmented sum of |w x| and (scaled
    tolerance) the slice's norm in float64. Whether a chunk holds a NaN or an Inf is read on the host
    from its sum, which is then not finite; the chunks' sums of |w| come with the weights."""

    def __init__(self, weights: Weights, tolerance: Tolerance | None = None):
        self.weights = weights
        self.tolerance = tolerance
        self.outputs: list[tuple[str, list[tuple[dict[str, Any], _Queued | None]]]] = []
        self.queue: list[torch.Tensor] = []  # every 1-D sum still on the device, in the order read back

    def add(self, output: Any, floors: Floors | None = None) -> None:
        """Queues one output's sums; `floors`: the reference's noise floors of this output by
        comparison path (noise.py), matched to the tensors by their order."""
        tensors = []
        floor_of = [f for _, f in _floor_paths(output, floors or {})]
        for index, (path, t) in enumerate(named_tensors(output, "output")):
            flat = _flat_real(t)
            meta = {"path": path, "shape": list(t.shape), "dtype": dtype_name(t.dtype)}
            floor = floor_of[index] if index < len(floor_of) else 0.0
            tensors.append((meta, self._queue_sums(flat, index, t.dtype, floor) if flat.numel() else None))
        self.outputs.append((signature(output), tensors))

    def _queue_sums(self, flat: torch.Tensor, index: int, dtype: torch.dtype, floor: float) -> _Queued:
        numel = flat.numel()
        size = chunk_size(numel)
        w = self.weights.of(index, numel)
        reference = self.tolerance is not None
        scaled = self.tolerance is not None and self.tolerance.mode == "scaled"
        norms = scaled and flat.is_floating_point()
        values, absolute, slice_norms = [], [], []
        starts = _slices(numel, size)
        for start in starts:
            piece = flat[start:start + starts.step]
            # In float64, one kernel: the product promotes (NaN and Inf stay what they are).
            wx = (piece * w[start:start + starts.step]).unsqueeze(0)
            values.append(_segment_reduce(wx, size).reshape(-1))
            if reference:
                absolute.append(_segment_reduce(wx, size, _abs_sum).reshape(-1))
            if norms:
                slice_norms.append(torch.linalg.vector_norm(piece, dtype=torch.float64).reshape(1))
        self.queue += values
        if reference:
            self.queue += absolute + [self.weights.abs_sums(index, numel).reshape(-1)] + slice_norms
        return _Queued(dtype, floor, numel, math.ceil(numel / size), len(slice_norms))

    def finish(self) -> list[dict[str, Any]]:
        host = torch.cat(self.queue).cpu().tolist() if self.queue else []  # the one wait for the device
        at = 0

        def take(n: int) -> list[float]:
            nonlocal at
            at += n
            return host[at - n:at]

        done = []
        for sig, tensors in self.outputs:
            entries = []
            for meta, queued in tensors:
                entry = dict(meta)
                if queued is not None:
                    value = take(queued.chunks)
                    if self.tolerance is None:
                        entry["finite"] = [math.isfinite(v) for v in value]
                    else:
                        wx, w1, norms = take(queued.chunks), take(queued.chunks), take(queued.norms)
                        self._bound(entry, queued, value, w1, wx, norms)
                    # JSON has no NaN or Inf: such a sum is written as null, which the judge never accepts.
                    entry["value"] = [v if math.isfinite(v) else None for v in value]
                entries.append(entry)
            done.append({"signature": sig, "tensors": entries})
        self.outputs, self.queue = [], []
        return done

    def _bound(self, entry: dict[str, Any], queued: _Queued, value: list[float], w1: list[float],
               wx: list[float], norms: list[float]) -> None:
        """The reference's `finite` and `bound` per chunk. A chunk whose sum is not finite holds a NaN or
        an Inf (or overflowed): left to the full checks. Under a scaled tolerance a tensor with any of
        them has no RMS of its finite values here (its slices' norms are not finite), so none of its
        chunks is judged: a bound from another RMS could be tighter than the elementwise rule."""
        sumsq = sum(n * n for n in norms)
        if not math.isfinite(sumsq):
            entry["finite"] = [False] * len(value)
            entry["bound"] = [0.0] * len(value)
            return
        assert self.tolerance is not None  # the reference's side
        bounds = _bounds(queued.dtype, w1, wx, sumsq, queued.numel, self.tolerance, queued.floor)
        entry["finite"] = [math.isfinite(v) and math.isfinite(b) for v, b in zip(value, bounds, strict=True)]
        entry["bound"] = [b if ok else 0.0 for b, ok in zip(bounds, entry["finite"], strict=True)]


def fingerprint(output: Any, weights: Weights, tolerance: Tolerance | None = None) -> dict[str, Any]:
    """The fingerprint of one output: its signature and, per tensor, shape, dtype and chunk sums. With
    `tolerance` (the reference's side) each chunk also gets its `bound` (see the module doc)."""
    pending = Pending(weights, tolerance)
    pending.add(output)
    return pending.finish()[0]


def _floor_paths(output: Any, floors: Floors) -> list[tuple[str, float]]:
    """(comparison path, floor) of every tensor of `output`, in named_tensors' order (the same walk)."""
    return [(path, floors.get(path, 0.0)) for path, _ in tensor_paths(output)]


def _bounds(dtype: torch.dtype, w1: list[float], wx: list[float], sumsq: float, count: float,
            tolerance: Tolerance, floor: float = 0.0) -> list[float]:
    if dtype.is_floating_point or dtype.is_complex:
        limits = tolerance.for_dtype(dtype)
        rms = math.sqrt(sumsq / count) if count else 0.0
        atol = scaled_atol(limits.atol, rms, floor) if tolerance.mode == "scaled" else limits.atol
        rtol = limits.rtol
    else:
        atol = rtol = 0.0  # integers and booleans must be equal
    return [atol * a + rtol * b + SUM_SLACK * b for a, b in zip(w1, wx, strict=False)]


@dataclass(frozen=True)
class Plan:
    """spec["sampled_checks"]: the secret seed, the most and the fewest fingerprinted sets, the
    reference's time for those beyond the fewest, whether the timed calls' sets come first, and (the
    candidate's side: what the reference ran) how many timed sets there are."""

    seed: int = 0
    count: int = 0
    min_total: int = 0
    seconds: float = 0.0
    timed: bool = False
    timed_sets: int = 0


def plan(spec: dict[str, Any]) -> Plan:
    """The plan of spec["sampled_checks"]; count 0 when there is none."""
    section = spec.get("sampled_checks")
    if not isinstance(section, dict):
        return Plan()
    count = max(0, int(section.get("count", 0)))
    return Plan(seed=int(section.get("seed", 0)), count=count,
                min_total=max(0, min(count, int(section.get("min_total", count)))),
                seconds=float(section.get("seconds", math.inf)), timed=bool(section.get("timed", False)),
                timed_sets=max(0, int(section.get("timed_sets", 0))))


class Budget:
    """Stops the reference's fingerprinted sets at `count`, or once `seconds` passed and `min_total` ran."""

    def __init__(self, count: int, min_total: int, seconds: float):
        self.count, self.min_total, self.seconds = count, min_total, seconds
        self.start = time.perf_counter()

    def more(self, done: int) -> bool:
        if done >= self.count:
            return False
        return done < self.min_total or time.perf_counter() - self.start < self.seconds


class TimedFingerprints:
    """The candidate's side of the timed calls' fingerprints: `add` after each warm-up and timed call,
    in their order, queues the output's sums when the call ran on one of the first `timed_sets` of the
    profile's `sets` input sets (call n, warm-ups first, runs on set n mod sets: inputs.py); nothing
    waits for the device. `finish` copies them back once: [{"call", "input_set", "signature",
    "tensors"}]."""

    def __init__(self, seed: int, device: str, timed_sets: int, sets: int):
        self.pending = Pending(Weights(seed, device))
        self.timed_sets, self.sets = timed_sets, sets
        self.calls = 0
        self.entries: list[dict[str, Any]] = []

    def add(self, label: str, output: Any) -> None:
        input_set = self.calls % self.sets
        self.calls += 1
        if input_set < self.timed_sets:
            self.pending.add(output)
            self.entries.append({"call": label, "input_set": input_set})

    def finish(self) -> list[dict[str, Any]]:
        return [entry | fingerprint for entry, fingerprint in zip(self.entries, self.pending.finish(), strict=True)]
