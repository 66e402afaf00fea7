"""Noise floors of the scaled tolerance (trusted: the reference job's; never sees candidate code).

Some outputs are the reference's own rounding error: a mean of a GroupNorm's output is zero in exact
arithmetic, and the float32 reference returns values of RMS 1e-8 (KernelBench level 2 problem 23). The
scaled tolerance (atol = factor × RMS(expected), a relative norm bound) then asks a candidate to
reproduce that noise to 2e-4 of itself, and refuses the exact answer. Nothing in the expected output
alone tells such noise from a small true answer (y = 1e-6 · x is just as small, and exact to float32's
precision): so the reference *measures* its error where an output is suspect.

- Suspect: a floating tensor of the output, below float64, whose RMS is under SUSPECT_RATIO × the
  scale of what it was computed from (the largest RMS of the floating inputs and of the model's
  parameters and buffers). Nothing else is measured (no cost for ordinary outputs).
- Measured: the same forward on the same inputs in float64 (a float64 copy of the model, the inputs
  converted, the default dtype float64 meanwhile). The reference's error is its distance from that:
  noise = RMS(expected − expected64) over the finite pairs.
- Where: every full check and spot check; the fingerprinted sets (sampled_checks.py), drawn like
  them, only once one of those outputs was suspect (floors_if_suspected): measuring costs a wait for
  the device per set, which would stall the fingerprinted forwards queued behind it.
- Floor: NOISE_MULTIPLE × noise (a candidate's float32 answer carries its own rounding error of the
  same size; the largest of many Gaussian-like errors is ≈ 6 × their RMS), never above
  sqrt(eps(dtype)) × the scale (a forward that differs in float64 for another reason than rounding,
  e.g. one drawing random numbers, cannot widen the tolerance by more than that).

A floor only widens what the comparison accepts to the reference's own error: an answer within it is
as close to the reference as the reference is to the exact value. A small true answer computed
exactly (y = 1e-6 · x) measures a tiny noise and keeps its tight tolerance, so zeros stay refused;
an O(1) output is not suspect. If the float64 forward fails (an op without float64 support, a model
that cannot be copied), there is no floor (the comparison as before).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from .comparison import Floors

# An output tensor is suspect when its RMS is below this fraction of its inputs' scale.
SUSPECT_RATIO = 1e-3
# The floor is this multiple of the measured RMS error of the reference.
NOISE_MULTIPLE = 8.0


def tensor_paths(value: Any, path: str = "output") -> list[tuple[str, torch.Tensor]]:
    """(path, tensor) in comparison.py's naming and order: `output`, `output[1]`, `output['k']`."""
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if type(value) in (tuple, list):
        return [found for i, item in enumerate(value) for found in tensor_paths(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [found for k, item in value.items() for found in tensor_paths(item, f"{path}[{k!r}]")]
    return []


# Elements turned into float64 at a time when a tensor's RMS is measured (a GEMM task's weight holds
# a billion: one float64 copy of it would be 8 GB).
RMS_SLICE_ELEMENTS = 1 << 24


def _sums(t: torch.Tensor) -> torch.Tensor:
    """[sum of the finite values squared, their count] in float64, on t's device, without waiting."""
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    flat = t.reshape(-1)
    total = torch.zeros(2, dtype=torch.float64, device=t.device)
    for start in range(0, flat.numel(), RMS_SLICE_ELEMENTS):
        x = flat[start:start + RMS_SLICE_ELEMENTS].to(torch.float64)
        finite = torch.isfinite(x)
        total += torch.stack([torch.where(finite, x * x, 0.0).sum(), finite.sum().to(torch.float64)])
    return total


def _rms_all(tensors: list[torch.Tensor]) -> list[float]:
    """The RMS over the finite values of each tensor, with one wait for the device."""
    if not tensors:
        return []
    values = torch.cat([_sums(t).to(tensors[0].device) for t in tensors]).tolist()
    return [math.sqrt(values[2 * i] / values[2 * i + 1]) if values[2 * i + 1] else 0.0
            for i in range(len(tensors))]


def _floating(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


def _floating_inputs(inputs: list[Any]) -> list[torch.Tensor]:
    return [t for _, t in tensor_paths(list(inputs), "inputs") if _floating(t)]


def _floating_state(model: Any) -> list[torch.Tensor]:
    if not isinstance(model, torch.nn.Module):
        return []
    return [t for t in list(model.parameters()) + list(model.buffers()) if _floating(t)]


def input_scale(inputs: list[Any], model: Any) -> float:
    """The largest RMS of the floating inputs and of the model's floating parameters and buffers."""
    return max(_rms_all(_floating_inputs(inputs) + _floating_state(model)), default=0.0)


def _candidates(output: Any) -> list[tuple[str, torch.Tensor]]:
    """The output's tensors that can be suspect: floating, below float64, not empty."""
    return [(path, t) for path, t in tensor_paths(output)
            if _floating(t) and t.dtype not in (torch.float64, torch.complex128) and t.numel() > 0]


def _to_float64(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            return value.to(torch.complex128)
        return value.to(torch.float64) if value.is_floating_point() else value
    if type(value) in (tuple, list):
        return type(value)(_to_float64(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_float64(v) for k, v in value.items()}
    return value


class NoiseProbe:
    """Measures the reference's noise floors for the outputs of one model (the float64 copy is made
    at the first suspect output and kept for the rest of the job)."""

    def __init__(self, model: Any):
        self.model = model
        self.model64: Any = None
        self.failed = False
        self.measured = 0  # float64 forwards run
        self.state_scale: float | None = None  # of the parameters and buffers, which never change
        self.suspected = False  # whether any output so far was suspect

    def floors_if_suspected(self, inputs: list[Any], output: Any) -> Floors | None:
        """floors() where an earlier output of the same task was suspect, else None without measuring:
        for the fingerprinted sets, drawn like the full checks' (one wait for the device per set would
        stall the forwards queued behind it)."""
        return self.floors(inputs, output) if self.suspected else None

    def floors(self, inputs: list[Any], output: Any) -> Floors:
        """Per suspect tensor path of `output` (computed by the model from `inputs`), its floor. The
        scale and the outputs' RMS cost one wait for the device; the model's part of the scale is
        measured at the first call only."""
        candidates = _candidates(output)
        if not candidates or self.failed:
            return {}
        if self.state_scale is None:
            self.state_scale = max(_rms_all(_floating_state(self.model)), default=0.0)
        inputs_floating = _floating_inputs(inputs)
        rms = _rms_all(inputs_floating + [t for _, t in candidates])
        scale = max(rms[:len(inputs_floating)] + [self.state_scale])
        suspects = {path: t for (path, t), r in zip(candidates, rms[len(inputs_floating):], strict=True)
                    if r < SUSPECT_RATIO * scale} if scale > 0 else {}
        if not suspects:
            return {}
        self.suspected = True
        exact = self._forward64(inputs)
        if exact is None:
            return {}
        exact_paths = dict(tensor_paths(exact))
        floors: Floors = {}
        for path, t in suspects.items():
            e64 = exact_paths.get(path)
            if e64 is None or e64.shape != t.shape:
                continue
            a, b = t.detach(), e64.detach()
            if a.is_complex():
                a, b = torch.view_as_real(a), torch.view_as_real(b)
            a64, b64 = a.to(torch.float64), b.to(torch.float64)
            both = torch.isfinite(a64) & torch.isfinite(b64)
            count = int(both.sum().item())
            if count == 0:
                continue
            diff = torch.where(both, a64 - b64, 0.0)
            noise = math.sqrt(float((diff * diff).sum().item()) / count)
            cap = math.sqrt(torch.finfo(t.dtype).eps) * scale
            floor = min(NOISE_MULTIPLE * noise, cap)
            if floor > 0:
                floors[path] = floor
        return floors

    def _forward64(self, inputs: list[Any]) -> Any:
        previous = torch.get_default_dtype()
        try:
            if self.model64 is None:
                self.model64 = copy.deepcopy(self.model)
                if isinstance(self.model64, torch.nn.Module):
                    self.model64 = self.model64.to(torch.float64)
            torch.set_default_dtype(torch.float64)
            with torch.no_grad():
                out = self.model64(*_to_float64(list(inputs)))
            self.measured += 1
            return out
        except Exception:  # noqa: BLE001 - no float64 forward: no floor, the comparison as before
            self.failed = True
            self.model64 = None
            return None
        finally:
            torch.set_default_dtype(previous)
