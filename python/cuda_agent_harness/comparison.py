"""Recursive comparison of an actual output against the expected one (pure functions, CPU only).

Rules (docs/harness-protocol.md, `compare`): exact Python types (a tuple is not a list), equal lengths and
dict keys, scalars by equality (two float NaNs count as equal, like NaN tensors in the same place);
tensors: exact shape, dtype, device and layout first, then every element. Floating tensors are compared
in float64: the NaN masks must match, infinities must match in position and sign, and finite pairs must
satisfy |a - e| <= atol + rtol * |e|. Integer and bool tensors must be exactly equal. Comparison stops at
the first failing leaf; its path, counts, first mismatching index and values go into the report.

The Tolerance says where atol and rtol come from (docs/precision.md):
- "fixed" (the `paper` policy): the same atol and rtol for every dtype, as published;
- "scaled" (`strict`, `tf32-fair`): per dtype, atol is a factor times the RMS of the expected tensor's
  finite elements (so a tiny output cannot be matched by zeros), and the relative norm error
  ||a - e|| / ||e|| over the finite pairs must also stay under a per-dtype bound (so constants, noise
  with the right mean and std, or a systematic precision downgrade fail even when each element is close).

Noise floors (scaled mode only; docs/decisions/precision-policies.md, "A floor for outputs that are
rounding noise"): where the reference's output is its own rounding error (the true answer is about
zero and the float32 reference computes 1e-8 instead), the trusted reference job measures that error
(noise.py: the same forward in float64) and names, per tensor path, an absolute `floor`. The scaled
atol is then max(factor × RMS, floor) and the norm check passes while RMS(actual − expected) <= floor:
an answer as close to the reference as the reference is to the exact answer is not refused. Without a
floor (every output that is not suspect, every fixed-mode comparison) nothing changes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from .nested import dtype_name

# Elements compared per step, to bound the float64 temporaries of very large outputs.
CHUNK_ELEMENTS = 1 << 22
# Absolute noise floors by tensor path ("output", "output[1]"), measured by the reference (noise.py).
Floors = dict[str, float]


@dataclass(frozen=True)
class Limits:
    """The bounds for one dtype: atol (absolute, or a factor of the RMS when scaled), rtol, rnorm."""

    atol: float
    rtol: float
    rnorm: float | None = None  # bound on ||a - e|| / ||e||; None: no norm check


@dataclass(frozen=True)
class Tolerance:
    """How floating tensors are compared: `fixed` bounds, or bounds `scaled` to the output, per dtype."""

    mode: str = "fixed"
    limits: dict[str, Limits] = field(default_factory=dict)  # dtype name ("float32") or "default"
    floors: Floors = field(default_factory=dict)  # set by compare() for one output, scaled mode only

    @staticmethod
    def fixed(atol: float, rtol: float) -> Tolerance:
        return Tolerance("fixed", {"default": Limits(atol, rtol)})

    @staticmethod
    def from_spec(spec: dict[str, Any]) -> Tolerance:
        """{"mode": "fixed"|"scaled", "limits": {"float32": {"atol": .., "rtol": .., "rnorm": ..}, ..}}.
        Raises ValueError on anything else."""
        mode = spec.get("mode")
        if mode not in ("fixed", "scaled"):
            raise ValueError(f"tolerance mode must be fixed or scaled, not {mode!r}")
        raw = spec.get("limits")
        if not isinstance(raw, dict) or "default" not in raw:
            raise ValueError("tolerance limits must be an object with a 'default' entry")
        limits = {}
        for name, entry in raw.items():
            try:
                rnorm = entry.get("rnorm")
                limits[name] = Limits(float(entry["atol"]), float(entry["rtol"]),
                                      None if rnorm is None else float(rnorm))
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"tolerance limits[{name!r}]: need numbers atol, rtol and an "
                                 f"optional rnorm ({exc})") from exc
        return Tolerance(mode, limits)

    def for_dtype(self, dtype: torch.dtype) -> Limits:
        return self.limits.get(dtype_name(dtype), self.limits["default"])


@dataclass
class Report:
    """The outcome of one check (one expected/actual pair)."""

    ok: bool = True
    reason: str = ""
    path: str | None = None
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_norm_err: float = 0.0  # the largest ||a - e|| / ||e|| over the floating tensors compared
    mismatches: int = 0
    numel: int = 0
    first_mismatch_index: list[int] | None = None
    expected_value: Any = None
    actual_value: Any = None

    def fail(self, path: str, reason: str) -> None:
        self.ok = False
        self.path = path
        self.reason = f"{path}: {reason}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _TensorStats:
    mismatches: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    first_bad: int | None = None      # flat index of the first mismatching element
    first_special: int | None = None  # flat index of the first NaN/Inf mismatch (floating only)
    rel_norm: float = 0.0             # ||a - e|| / ||e|| over the pairs that are both finite
    atol: float = 0.0                 # the absolute tolerance applied (scaled mode: factor × RMS)
    rms_diff: float = 0.0             # RMS(a - e) over the pairs that are both finite
    floor: float = 0.0                # the reference's noise floor applied (scaled mode), 0: none


def compare(expected: Any, actual: Any, tol: Tolerance, path: str = "output",
            floors: Floors | None = None) -> Report:
    """Compares `actual` against `expected` recursively and returns the report. `floors`: the
    reference's noise floors by tensor path (scaled mode; see the module doc)."""
    report = Report()
    if floors and tol.mode == "scaled":
        tol = Tolerance(tol.mode, tol.limits, dict(floors))
    _compare_value(expected, actual, tol, path, report)
    return report


def _type_name(value: Any) -> str:
    return type(value).__name__


def _compare_value(expected: Any, actual: Any, tol: Tolerance, path: str, report: Report) -> None:
    if type(actual) is not type(expected):
        report.fail(path, f"type {_type_name(actual)} != expected {_type_name(expected)}")
    elif isinstance(expected, torch.Tensor):
        _compare_tensor(expected, actual, tol, path, report)
    elif isinstance(expected, (list, tuple)):
        _compare_sequence(expected, actual, tol, path, report)
    elif isinstance(expected, dict):
        _compare_dict(expected, actual, tol, path, report)
    elif not _scalars_equal(expected, actual):
        report.fail(path, f"value {actual!r} != expected {expected!r}")


def _scalars_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return math.isnan(actual)
    try:
        return bool(actual == expected)
    except Exception:  # noqa: BLE001 - values that cannot be compared are unequal
        return False


def _compare_sequence(expected: Any, actual: Any, tol: Tolerance, path: str, report: Report) -> None:
    if len(actual) != len(expected):
        report.fail(path, f"length {len(actual)} != expected {len(expected)}")
        return
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        _compare_value(e, a, tol, f"{path}[{i}]", report)
        if not report.ok:
            return


def _compare_dict(expected: Any, actual: Any, tol: Tolerance, path: str, report: Report) -> None:
    missing = [k for k in expected if k not in actual]
    unexpected = [k for k in actual if k not in expected]
    if missing or unexpected:
        report.fail(path, f"dict keys differ: missing {missing!r}, unexpected {unexpected!r}")
        return
    for key in expected:
        _compare_value(expected[key], actual[key], tol, f"{path}[{key!r}]", report)
        if not report.ok:
            return


def _shape(t: torch.Tensor) -> str:
    return str(tuple(t.shape))


def _comparable(t: torch.Tensor) -> torch.Tensor:
    """A dense, strided, real view of `t` (complex becomes a trailing dimension of size 2)."""
    if t.layout != torch.strided:
        t = t.to_dense()
    t = t.resolve_conj().resolve_neg()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t


def _compare_tensor(expected: torch.Tensor, actual: torch.Tensor, tol: Tolerance, path: str, report: Report) -> None:
    if actual.shape != expected.shape:
        report.fail(path, f"shape {_shape(actual)} != expected {_shape(expected)}")
        return
    if actual.dtype != expected.dtype:
        report.fail(path, f"dtype {dtype_name(actual.dtype)} != expected {dtype_name(expected.dtype)}")
        return
    if actual.device != expected.device:
        report.fail(path, f"device {actual.device} != expected {expected.device}")
        return
    if actual.layout != expected.layout:
        report.fail(path, f"layout {actual.layout} != expected {expected.layout}")
        return
    e = _comparable(expected)
    a = _comparable(actual)
    floating = e.is_floating_point()
    limits = tol.for_dtype(e.dtype) if floating else None
    floor = tol.floors.get(path, 0.0) if tol.mode == "scaled" else 0.0
    stats = _float_stats(e, a, tol.mode, limits, floor) if limits is not None else _exact_stats(e, a)
    report.numel += expected.numel()
    report.max_abs_err = max(report.max_abs_err, stats.max_abs)
    report.max_rel_err = max(report.max_rel_err, stats.max_rel)
    report.rel_norm_err = max(report.rel_norm_err, stats.rel_norm)
    if stats.mismatches == 0:
        if limits is not None and limits.rnorm is not None and stats.rel_norm > limits.rnorm and \
                stats.rms_diff > stats.floor:
            report.fail(path, f"relative norm error {stats.rel_norm:.3g} exceeds {limits.rnorm:g} for "
                              f"{dtype_name(expected.dtype)} (||actual - expected|| / ||expected||; "
                              f"max abs err {stats.max_abs:.4g})")
        return
    e_flat = e.reshape(-1)
    a_flat = a.reshape(-1)
    report.mismatches += stats.mismatches
    first_bad = stats.first_bad
    assert first_bad is not None  # there are mismatches
    report.first_mismatch_index = _unravel(first_bad, e.shape)
    report.expected_value = e_flat[first_bad].item()
    report.actual_value = a_flat[first_bad].item()
    count = f"{stats.mismatches} of {e.numel()} elements differ"
    if stats.first_special is not None:
        where = _unravel(stats.first_special, e.shape)
        shown_a = _kind_of_value(a_flat[stats.first_special].item())
        shown_e = _kind_of_value(e_flat[stats.first_special].item())
        report.fail(path, f"{shown_a} where expected is {shown_e} at {where} ({count})")
    elif limits is not None:  # floating
        scaled = f" ({limits.atol:g} x RMS {stats.atol / limits.atol:.4g})" if tol.mode == "scaled" else ""
        if stats.floor > 0 and stats.atol == stats.floor:
            scaled = " (the reference's own rounding error: its float32-vs-float64 noise floor)"
        report.fail(path, f"{count} beyond atol={stats.atol:g}{scaled} rtol={limits.rtol:g} "
                          f"(max abs err {stats.max_abs:.4g}, first at {report.first_mismatch_index})")
    else:
        report.fail(path, f"{count} (exact comparison for {dtype_name(expected.dtype)}; "
                          f"max abs err {stats.max_abs:.4g}, first at {report.first_mismatch_index})")


def _kind_of_value(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return "finite"


def _unravel(flat: int, shape: torch.Size) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return index[::-1]


def _chunks(e: torch.Tensor, a: torch.Tensor) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """(start, expected, actual) in float64, CHUNK_ELEMENTS at a time."""
    e_flat = e.reshape(-1)
    a_flat = a.reshape(-1)
    for start in range(0, e_flat.numel(), CHUNK_ELEMENTS):
        yield (start, e_flat[start:start + CHUNK_ELEMENTS].to(torch.float64),
               a_flat[start:start + CHUNK_ELEMENTS].to(torch.float64))


def _rms_of_finite(e: torch.Tensor) -> float:
    total, count = 0.0, 0
    e_flat = e.reshape(-1)
    for start in range(0, e_flat.numel(), CHUNK_ELEMENTS):
        e64 = e_flat[start:start + CHUNK_ELEMENTS].to(torch.float64)
        finite = torch.isfinite(e64)
        total += float(torch.where(finite, e64 * e64, torch.zeros_like(e64)).sum().item())
        count += int(finite.sum().item())
    return math.sqrt(total / count) if count else 0.0


def scaled_atol(factor: float, rms: float, floor: float) -> float:
    """The scaled mode's absolute tolerance: factor × RMS(expected), never below the reference's noise
    floor. sampled_checks._bounds uses the same, so that its bounds hold for what this accepts."""
    return max(factor * rms, floor)


def _float_stats(e: torch.Tensor, a: torch.Tensor, mode: str, limits: Limits, floor: float = 0.0) -> _TensorStats:
    stats = _TensorStats()
    tiny = torch.finfo(e.dtype).tiny
    rtol = limits.rtol
    stats.floor = floor if mode == "scaled" else 0.0
    stats.atol = scaled_atol(limits.atol, _rms_of_finite(e), stats.floor) if mode == "scaled" else limits.atol
    diff_sq = expected_sq = 0.0
    pairs = 0
    for start, e64, a64 in _chunks(e, a):
        e_nan, a_nan = torch.isnan(e64), torch.isnan(a64)
        both_finite = torch.isfinite(e64) & torch.isfinite(a64)
        diff = torch.where(both_finite, (a64 - e64).abs(), torch.zeros_like(e64))
        out_of_tol = both_finite & (diff > stats.atol + rtol * e64.abs())
        # Outside the finite pairs only two things match: NaN with NaN, and the same infinity.
        same_special = (e_nan & a_nan) | (torch.isinf(e64) & (a64 == e64))
        special_bad = ~both_finite & ~same_special
        bad = out_of_tol | special_bad
        rel = diff / e64.abs().clamp(min=tiny)
        if diff.numel() > 0:
            stats.max_abs = max(stats.max_abs, diff.max().item())
            stats.max_rel = max(stats.max_rel, rel.max().item())
            diff_sq += float((diff * diff).sum().item())
            pairs += int(both_finite.sum().item())
            expected_sq += float(torch.where(both_finite, e64 * e64, torch.zeros_like(e64)).sum().item())
        _count(stats, bad, start)
        if stats.first_special is None and bool(special_bad.any()):
            stats.first_special = start + _first_true(special_bad)
    if diff_sq > 0:
        stats.rel_norm = math.sqrt(diff_sq) / max(math.sqrt(expected_sq), tiny)
        stats.rms_diff = math.sqrt(diff_sq / max(pairs, 1))
    return stats


def _exact_stats(e: torch.Tensor, a: torch.Tensor) -> _TensorStats:
    stats = _TensorStats()
    e_flat = e.reshape(-1)
    a_flat = a.reshape(-1)
    for start in range(0, e_flat.numel(), CHUNK_ELEMENTS):
        ec = e_flat[start:start + CHUNK_ELEMENTS]
        ac = a_flat[start:start + CHUNK_ELEMENTS]
        bad = ac != ec
        diff = (ac.to(torch.float64) - ec.to(torch.float64)).abs()
        rel = diff / ec.to(torch.float64).abs().clamp(min=1.0)
        if diff.numel() > 0:
            stats.max_abs = max(stats.max_abs, diff.max().item())
            stats.max_rel = max(stats.max_rel, rel.max().item())
        _count(stats, bad, start)
    return stats


def _count(stats: _TensorStats, bad: torch.Tensor, start: int) -> None:
    n = int(bad.sum().item())
    if n == 0:
        return
    stats.mismatches += n
    if stats.first_bad is None:
        stats.first_bad = start + _first_true(bad)


def _first_true(mask: torch.Tensor) -> int:
    """Index of the first True in a 1-D bool tensor that has one."""
    return int(torch.argmax(mask.to(torch.uint8)).item())
