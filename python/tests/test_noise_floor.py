"""The scaled tolerance's noise floor (noise.py, comparison.py, sampled_checks.py): an exact answer is
not refused against a reference whose output is its own rounding error (KernelBench level 2 problem 23,
a mean of a GroupNorm's output: zero in exact arithmetic, RMS 1e-8 in float32), while zeros stay
refused wherever the true answer is not zero — an O(1) output, and a tiny output computed exactly."""

import json

import pytest
import torch
import torch.nn as nn
from helpers import run

from cuda_agent_harness import noise, sampled_checks
from cuda_agent_harness.comparison import Tolerance, compare
from cuda_agent_harness.jobs import compare as compare_job

# The strict policy's float32 row (src/judge/precision.cc).
STRICT = Tolerance.from_spec({"mode": "scaled", "limits": {
    "float32": {"atol": 2e-4, "rtol": 2e-4, "rnorm": 5e-5},
    "default": {"atol": 1e-2, "rtol": 1e-2, "rnorm": 1e-2}}})
PAPER = Tolerance.fixed(1e-2, 1e-2)


class GroupNormMean(nn.Module):
    """Conv → GroupNorm → mean over everything but the batch: zero up to rounding (weight 1, bias 0)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        return self.norm(self.conv(x)).mean(dim=[1, 2, 3])


class Tiny(nn.Module):
    """A small true answer computed exactly: y = 1e-6 · x (as small as the noise above)."""

    def forward(self, x):
        return x * 1e-6


class Relu(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def reference(model, seed=0):
    torch.manual_seed(seed)
    inputs = [torch.rand(16, 3, 18, 18)]
    with torch.no_grad():
        expected = model(*inputs)
    return inputs, expected, noise.NoiseProbe(model).floors(inputs, expected)


def test_an_exact_answer_against_a_noise_reference_is_accepted():
    torch.manual_seed(1)
    inputs, expected, floors = reference(GroupNormMean())
    rms = float(expected.double().pow(2).mean().sqrt())
    assert 0 < rms < 1e-6, rms  # the reference is rounding noise
    assert set(floors) == {"output"} and floors["output"] >= 2 * float(expected.abs().max()), floors
    exact = torch.zeros_like(expected)  # the closed form: the mean of a normalised output is 0
    assert not compare(expected, exact, STRICT).ok  # the refusal of the GPU run (no floor)
    report = compare(expected, exact, STRICT, floors=floors)
    assert report.ok, report.reason
    # A float32 candidate that computes it another way, with rounding noise of its own, too.
    other = (expected.double() * -0.7 + 3e-9).float()
    assert compare(expected, other, STRICT, floors=floors).ok
    # Something that is not zero up to rounding stays refused.
    assert not compare(expected, torch.full_like(expected, 1e-4), STRICT, floors=floors).ok


@pytest.mark.parametrize("model", [Relu(), Tiny()], ids=["O(1) output", "tiny exact output"])
def test_zeros_stay_refused_where_the_true_answer_is_not_zero(model):
    inputs, expected, floors = reference(model)
    report = compare(expected, torch.zeros_like(expected), STRICT, floors=floors)
    assert not report.ok
    if isinstance(model, Relu):
        assert floors == {}  # not suspect: nothing measured
    else:
        # suspect (RMS 6e-7 of inputs of RMS 0.6), measured in float64, and exact: a floor far below it
        assert floors.get("output", 0.0) < 1e-3 * float(expected.abs().max()), floors


def test_the_floor_is_capped_for_a_forward_that_differs_for_another_reason():
    class Random(nn.Module):  # a forward drawing random numbers differs in float64 by O(its scale)
        def forward(self, x):
            return torch.randn(x.shape[0]) * 1e-6

    inputs, expected, floors = reference(Random())
    scale = noise.input_scale(inputs, Random())
    assert floors["output"] <= torch.finfo(torch.float32).eps ** 0.5 * scale


def test_a_floor_is_ignored_by_a_fixed_tolerance_and_names_itself_when_it_decides():
    _, expected, floors = reference(GroupNormMean())
    off = torch.full_like(expected, 1.0)
    assert not compare(expected, off, PAPER, floors={"output": 10.0}).ok  # fixed: floors do not apply
    report = compare(expected, expected + 5 * floors["output"], STRICT, floors=floors)
    assert not report.ok and "noise floor" in report.reason, report.reason


def test_the_sampled_bounds_hold_for_what_the_comparison_accepts_with_a_floor():
    _, expected, floors = reference(GroupNormMean())
    exact = torch.zeros_like(expected)
    assert compare(expected, exact, STRICT, floors=floors).ok
    weights = sampled_checks.Weights(7, "cpu")
    pending = sampled_checks.Pending(weights, STRICT)
    pending.add(expected, floors)
    e = pending.finish()[0]["tensors"][0]
    a = sampled_checks.fingerprint(exact, sampled_checks.Weights(7, "cpu"))["tensors"][0]
    assert all(abs(av - ev) <= b for av, ev, b, ok in zip(a["value"], e["value"], e["bound"], e["finite"],
                                                          strict=True) if ok)
    # Without the floor the same answer is beyond a bound (the sums see the noise too).
    plain = sampled_checks.fingerprint(expected, sampled_checks.Weights(7, "cpu"), STRICT)["tensors"][0]
    assert any(abs(av - ev) > b for av, ev, b in zip(a["value"], plain["value"], plain["bound"], strict=True))


def test_floors_of_a_tuple_output_follow_the_comparison_paths():
    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = GroupNormMean()

        def forward(self, x):
            return torch.relu(x), self.inner(x)

    inputs, expected, floors = reference(Pair())
    assert set(floors) == {"output[1]"}, floors
    answer = (expected[0].clone(), torch.zeros_like(expected[1]))
    assert compare(expected, answer, STRICT, floors=floors).ok
    assert not compare(expected, answer, STRICT).ok


def test_the_compare_job_reads_floors_saved_beside_an_expected_file(tmp_path):
    _, expected, floors = reference(GroupNormMean())
    e, a = tmp_path / "expected_0.pt", tmp_path / "output_0.pt"
    torch.save(expected, e)
    torch.save(torch.zeros_like(expected), a)
    spec = {"result_path": str(tmp_path / "compare.json"), "expected_paths": [str(e)],
            "actual_paths": [str(a)], "tolerance": json.loads(json.dumps({
                "mode": "scaled", "limits": {"default": {"atol": 2e-4, "rtol": 2e-4, "rnorm": 5e-5}}}))}
    assert not run("compare", spec)["ok"]
    compare_job.save_floors(str(e), floors)
    result = run("compare", spec)
    assert result["ok"], result


def test_the_rms_is_measured_in_slices_over_the_finite_values(monkeypatch):
    """A GEMM task's weight holds a billion elements: its RMS is summed slice by slice, never copied
    to float64 whole, and agrees with the direct computation; non-finite values are left out."""
    monkeypatch.setattr(noise, "RMS_SLICE_ELEMENTS", 1000)
    torch.manual_seed(3)
    t = torch.randn(4321)
    t[7] = float("nan")
    t[4000] = float("inf")
    finite = t[torch.isfinite(t)].double()
    direct = float((finite * finite).mean().sqrt())
    wide = torch.randn(3, 5) * 4
    rms = noise._rms_all([t, wide])
    assert abs(rms[0] - direct) < 1e-12 * direct
    assert abs(rms[1] - float(wide.double().pow(2).mean().sqrt())) < 1e-12 * rms[1]


def test_the_models_part_of_the_scale_is_measured_once():
    probe = noise.NoiseProbe(GroupNormMean())
    inputs, expected, _ = reference(GroupNormMean())
    assert probe.state_scale is None
    probe.floors(inputs, expected)
    first = probe.state_scale
    assert first is not None and first > 0
    probe.floors(inputs, expected)
    assert probe.state_scale == first


def test_fingerprinted_sets_are_measured_only_once_an_output_was_suspect():
    inputs, expected, _ = reference(GroupNormMean())
    probe = noise.NoiseProbe(GroupNormMean())
    assert probe.floors_if_suspected(inputs, expected) is None  # nothing suspect seen yet: not measured
    assert probe.floors(inputs, expected)  # a full check: measured, suspect
    assert probe.floors_if_suspected(inputs, expected)
