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
all finite are left to the full checks.

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
from dataclasses import dataclass
from typing import Any

import torch

from .comparison import Floors, Tolerance, scaled_atol
from .nested import dtype_name, named_tensors, signature
from .noise import tensor_paths

CHUNKS = 32
FILE_NAME = "sampled.json"  # the candidate's fingerprints, in its output folder
# Elements turned into float64 at a time (bounds the temporaries of a large output).
SLICE_ELEMENTS = 1 << 22
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
    seed; kept between the sets of one judgement while they fit WEIGHT_CACHE_ELEMENTS."""

    def __init__(self, seed: int, device: str):
        self.seed = seed
        self.device = device
        self.cache: dict[tuple[int, int], torch.Tensor] = {}
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


def chunk_size(numel: int) -> int:
    return max(1, math.ceil(numel / CHUNKS))


def _flat_real(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.reshape(-1)


def _segment_sums(rows: torch.Tensor, size: int) -> torch.Tensor:
    """(F, n) → (F, ceil(n / size)): the sums over consecutive segments of `size` columns."""
    whole = (rows.shape[1] // size) * size
    parts = []
    if whole:
        parts.append(rows[:, :whole].reshape(rows.shape[0], -1, size).sum(dim=2))
    if whole < rows.shape[1]:
        parts.append(rows[:, whole:].sum(dim=1, keepdim=True))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def _candidate_stats(flat: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The candidate's side of _chunk_stats in as few kernels as its sums need (its timed calls are
    fingerprinted under the exclusive lease, and every kernel is a record of the profiler's): rows
    `value` (sum w x) and `nonfinite` (1 where that sum is not finite: a NaN or Inf in the chunk,
    whose value the judge then never reads)."""
    size = chunk_size(flat.numel())
    step = max(size, (SLICE_ELEMENTS // size) * size)
    columns = [_segment_sums((flat[start:start + step].to(torch.float64) * w[start:start + step]).unsqueeze(0),
                             size) for start in range(0, flat.numel(), step)]
    value = columns[0] if len(columns) == 1 else torch.cat(columns, dim=1)
    return torch.cat([value, (~torch.isfinite(value)).to(torch.float64)])


def _chunk_stats(flat: torch.Tensor, w: torch.Tensor, reference: bool) -> torch.Tensor:
    """The chunk sums of one flattened tensor, on its device and without waiting for it: a float64
    (F, chunks) tensor of rows `value` (sum w x over the finite x), `nonfinite` (their count); for the
    reference also `w1` (sum |w|) and `wx` (sum |w x|), then one column more holding the sum of the
    finite x squared and their count (the RMS of a scaled tolerance). The candidate's: _candidate_stats."""
    if not reference:
        return _candidate_stats(flat, w)
    numel = flat.numel()
    size = chunk_size(numel)
    step = max(size, (SLICE_ELEMENTS // size) * size)
    columns: list[torch.Tensor] = []
    sumsq = flat.new_zeros((), dtype=torch.float64)
    count = flat.new_zeros((), dtype=torch.float64)
    for start in range(0, numel, step):
        piece = flat[start:start + step]
        weights = w[start:start + step]
        if piece.is_floating_point():
            finite = torch.isfinite(piece)
            x = torch.where(finite, piece.to(torch.float64), 0.0)  # a new tensor, never the output
            nonfinite = (~finite).to(torch.float64)
        else:
            x = piece.to(torch.float64)
            nonfinite = torch.zeros_like(x)
        wx = x * weights
        columns.append(_segment_sums(torch.stack([wx, nonfinite, weights.abs(), wx.abs()]), size))
        sumsq = sumsq + (x * x).sum()
        count = count + (x.numel() - nonfinite.sum())
    stats = torch.cat(columns, dim=1)
    extra = torch.zeros((stats.shape[0], 1), dtype=torch.float64, device=stats.device)
    extra[0, 0] = sumsq
    extra[1, 0] = count
    return torch.cat([stats, extra], dim=1)


class Pending:
    """The fingerprints of outputs whose sums are still being computed on the device: `add` queues one
    output's (nothing waits for the device), `finish` copies them all to the host at once."""

    def __init__(self, weights: Weights, tolerance: Tolerance | None = None):
        self.weights = weights
        self.tolerance = tolerance
        self.outputs: list[tuple[str, list[tuple[dict[str, Any], torch.Tensor | None, torch.dtype, float]]]] = []

    def add(self, output: Any, floors: Floors | None = None) -> None:
        """Queues one output's sums; `floors`: the reference's noise floors of this output by
        comparison path (noise.py), matched to the tensors by their order."""
        tensors = []
        floor_of = [f for _, f in _floor_paths(output, floors or {})]
        for index, (path, t) in enumerate(named_tensors(output, "output")):
            flat = _flat_real(t)
            meta = {"path": path, "shape": list(t.shape), "dtype": dtype_name(t.dtype)}
            stats = _chunk_stats(flat, self.weights.of(index, flat.numel()), self.tolerance is not None) \
                if flat.numel() else None
            tensors.append((meta, stats, t.dtype, floor_of[index] if index < len(floor_of) else 0.0))
        self.outputs.append((signature(output), tensors))

    def finish(self) -> list[dict[str, Any]]:
        queued = [stats.reshape(-1) for _, tensors in self.outputs for _, stats, _, _ in tensors
                  if stats is not None]
        host = torch.cat(queued).cpu().tolist() if queued else []  # the one wait for the device
        at = 0
        done = []
        for sig, tensors in self.outputs:
            entries = []
            for meta, stats, dtype, floor in tensors:
                entry = dict(meta)
                if stats is not None:
                    rows, cols = stats.shape
                    values = host[at:at + rows * cols]
                    at += rows * cols
                    table = [values[r * cols:(r + 1) * cols] for r in range(rows)]
                    self._fill(entry, table, dtype, floor)
                entries.append(entry)
            done.append({"signature": sig, "tensors": entries})
        self.outputs = []
        return done

    def _fill(self, entry: dict[str, Any], table: list[list[float]], dtype: torch.dtype, floor: float) -> None:
        value, nonfinite = table[0], table[1]
        if self.tolerance is None:
            entry["finite"] = [n == 0 for n in nonfinite]
        else:
            sumsq, count = value[-1], nonfinite[-1]
            value, nonfinite = value[:-1], nonfinite[:-1]
            bounds = _bounds(dtype, table[2][:-1], table[3][:-1], sumsq, count, self.tolerance, floor)
            # A sum that overflowed is a chunk these checks cannot judge: left to the full checks.
            entry["finite"] = [n == 0 and math.isfinite(v) and math.isfinite(b)
                               for n, v, b in zip(nonfinite, value, bounds, strict=False)]
            entry["bound"] = [b if ok else 0.0 for b, ok in zip(bounds, entry["finite"], strict=False)]
        # JSON has no NaN or Inf: such a sum is written as null, which the judge never accepts.
        entry["value"] = [v if math.isfinite(v) else None for v in value]


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
