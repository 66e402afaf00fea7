"""The sampled checks' fingerprints (sampled_checks.py): an output the elementwise comparison accepts is
never beyond a chunk's bound; the failures flaky kernels make (stale or zero output, a skipped part, a
permutation) are."""

import math

import pytest
import torch

from cuda_agent_harness import sampled_checks
from cuda_agent_harness.comparison import Tolerance, compare

FIXED = Tolerance.fixed(1e-4, 1e-4)
SCALED = Tolerance.from_spec({"mode": "scaled", "limits": {"default": {"atol": 1e-3, "rtol": 1e-3,
                                                                        "rnorm": 1e-2}}})


def beyond(expected, actual, tolerance, seed=7):
    """The chunks (tensor, chunk) whose weighted sums differ by more than their bound, as the judge
    (src/judge/sampled_checks.cc) decides."""
    e = sampled_checks.fingerprint(expected, sampled_checks.Weights(seed, "cpu"), tolerance)
    a = sampled_checks.fingerprint(actual, sampled_checks.Weights(seed, "cpu"))
    bad = []
    for t, (et, at) in enumerate(zip(e["tensors"], a["tensors"], strict=False)):
        for c, usable in enumerate(et["finite"]):
            if not usable:
                continue
            got = at["value"][c]
            if not at["finite"][c] or got is None or not abs(got - et["value"][c]) <= et["bound"][c]:
                bad.append((t, c))
    return bad


@pytest.mark.parametrize("tolerance", [FIXED, SCALED], ids=["fixed", "scaled"])
def test_an_output_within_the_elementwise_tolerance_is_within_every_bound(tolerance):
    torch.manual_seed(0)
    e = torch.randn(50_000) * 3
    limits = tolerance.for_dtype(e.dtype)
    atol = limits.atol * math.sqrt(float((e.double() ** 2).mean())) if tolerance.mode == "scaled" else limits.atol
    # The largest errors the elementwise rule allows, with random signs.
    a = e + (atol + limits.rtol * e.abs()) * 0.999 * torch.sign(torch.randn(50_000))
    assert compare(e, a, tolerance).ok
    assert beyond(e, a, tolerance) == []


def test_stale_zero_skipped_and_permuted_outputs_are_beyond_their_bounds():
    torch.manual_seed(1)
    e = torch.randn(64, 1000)
    stale = torch.randn(64, 1000)  # another input's output: what a skipped call leaves behind
    # A chunk's sum can land within its bound by chance (about 1 in 200 here): an output is caught when
    # any of its chunks is.
    assert len(beyond(e, stale, FIXED)) >= sampled_checks.CHUNKS - 2
    assert len(beyond(e, torch.zeros_like(e), FIXED)) >= sampled_checks.CHUNKS - 2
    part = e.clone()
    part[10:12] = stale[10:12]  # two rows not computed
    assert 1 <= len(beyond(e, part, FIXED)) <= 2
    permuted = e.clone().view(-1)
    permuted[:100] = permuted[:100].flip(0)  # the right values in the wrong places
    assert beyond(e, permuted.view(64, 1000), FIXED) == [(0, 0)]


def test_chunks_with_non_finite_expected_values_are_left_to_the_full_checks():
    e = torch.randn(4096)
    e[5] = float("nan")
    fp = sampled_checks.fingerprint(e, sampled_checks.Weights(3, "cpu"), FIXED)
    assert fp["tensors"][0]["finite"][0] is False
    assert all(fp["tensors"][0]["finite"][1:])
    a = e.clone()
    a[:128] = 0  # chunk 0 only (128 elements a chunk)
    assert beyond(e, a, FIXED, seed=3) == []
    a[200] = float("inf")  # a non-finite value where the reference has a finite one
    assert beyond(e, a, FIXED, seed=3) == [(0, 1)]


def test_integer_outputs_must_be_equal_and_tuples_are_fingerprinted_per_tensor():
    e = (torch.arange(1000), torch.ones(3, 3))
    assert beyond(e, (torch.arange(1000), torch.ones(3, 3)), FIXED) == []
    off = torch.arange(1000)
    off[999] += 1
    assert beyond(e, (off, torch.ones(3, 3)), FIXED) == [(0, 31)]
    fp = sampled_checks.fingerprint(e, sampled_checks.Weights(1, "cpu"))
    assert fp["signature"] == "tuple(Tensor[int64](1000,), Tensor[float32](3, 3))"
    assert [t["path"] for t in fp["tensors"]] == ["output[0]", "output[1]"]


def test_the_weights_are_the_same_in_every_process_and_differ_between_seeds():
    a = sampled_checks.Weights(11, "cpu").of(0, 1000)
    b = sampled_checks.Weights(11, "cpu").of(0, 1000)
    c = sampled_checks.Weights(12, "cpu").of(0, 1000)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert float(a.min()) >= -1 and float(a.max()) <= 1


def test_the_budget_runs_at_least_min_total_and_at_most_count():
    budget = sampled_checks.Budget(count=10, min_total=4, seconds=0.0)
    done = 0
    while budget.more(done):
        done += 1
    assert done == 4
    budget = sampled_checks.Budget(count=10, min_total=4, seconds=60.0)
    done = 0
    while budget.more(done):
        done += 1
    assert done == 10


def test_the_plan_reads_the_spec_and_defaults_to_none():
    assert sampled_checks.plan({}) == sampled_checks.Plan(0, 0, 0, 0.0, False, 0)
    assert sampled_checks.plan({"sampled_checks": {"seed": 5, "count": 96, "min_total": 32, "seconds": 1.0,
                                                   "timed": True}}) == sampled_checks.Plan(5, 96, 32, 1.0, True, 0)
    plan = sampled_checks.plan({"sampled_checks": {"seed": 5, "count": 8, "timed_sets": 3}})
    assert (plan.seed, plan.count, plan.min_total, plan.timed, plan.timed_sets) == (5, 8, 8, False, 3)
    assert sampled_checks.sampled_set_seed(5, 0) != sampled_checks.sampled_set_seed(5, 1)


def test_a_fingerprint_leaves_the_output_as_it_was_float64_and_several_slices_included():
    torch.manual_seed(2)
    out = torch.randn(sampled_checks.SLICE_ELEMENTS + 1000, dtype=torch.float64)
    copy = out.clone()
    sampled_checks.fingerprint(out, sampled_checks.Weights(4, "cpu"), FIXED)
    sampled_checks.fingerprint(out, sampled_checks.Weights(4, "cpu"))
    assert torch.equal(out, copy)
    assert beyond(out, copy, FIXED) == []


def test_the_timed_calls_on_fingerprinted_sets_are_fingerprinted_in_their_order():
    """Call n (warm-ups first) runs on input set n mod sets; only the first `timed_sets` sets have the
    reference's fingerprints, so only their calls are fingerprinted, each under its own label."""
    timed = sampled_checks.TimedFingerprints(seed=9, device="cpu", timed_sets=2, sets=3)
    outputs = [torch.full((40,), float(n)) for n in range(7)]
    labels = [f"warm-up call {n}" for n in range(2)] + [f"timed call {c}" for c in range(5)]
    for label, output in zip(labels, outputs, strict=True):
        timed.add(label, output)
    entries = timed.finish()
    # Sets of calls 0..6: 0 1 2 0 1 2 0 — the calls on set 2 are left out.
    assert [(e["call"], e["input_set"]) for e in entries] == [
        ("warm-up call 0", 0), ("warm-up call 1", 1), ("timed call 1", 0), ("timed call 2", 1), ("timed call 4", 0)]
    weights = sampled_checks.Weights(9, "cpu")
    for entry, n in zip(entries, [0, 1, 3, 4, 6], strict=True):
        expected = sampled_checks.fingerprint(outputs[n], weights)
        assert entry["tensors"] == expected["tensors"] and entry["signature"] == expected["signature"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32], ids=str)
def test_the_chunk_sums_are_those_of_the_plain_definition_across_slices(monkeypatch, dtype):
    # Per chunk: value sum w x; bound atol sum |w| + rtol sum |w x| (+ the rounding slack); a chunk
    # holding a NaN or an Inf is not judged. Several slices (a small SLICE_ELEMENTS), a last chunk
    # shorter than the others; the candidate's values are the reference's.
    monkeypatch.setattr(sampled_checks, "SLICE_ELEMENTS", 300)
    torch.manual_seed(3)
    flat = (torch.randn(1_001) * 5).to(dtype)
    if dtype.is_floating_point:
        flat[40], flat[900] = math.nan, -math.inf
    w = sampled_checks.Weights(5, "cpu").of(0, flat.numel())
    reference = sampled_checks.fingerprint(flat, sampled_checks.Weights(5, "cpu"), FIXED)["tensors"][0]
    candidate = sampled_checks.fingerprint(flat, sampled_checks.Weights(5, "cpu"))["tensors"][0]
    size = sampled_checks.chunk_size(flat.numel())
    x = flat.double()
    chunks = range(0, flat.numel(), size)
    assert len(reference["value"]) == len(reference["bound"]) == len(candidate["value"]) == len(chunks)
    limits = FIXED.for_dtype(torch.float32)
    judged = []
    for c, start in enumerate(chunks):
        xs, ws = x[start:start + size], w[start:start + size]
        flagged = not bool(torch.isfinite(xs).all())
        assert reference["finite"][c] == candidate["finite"][c] == (not flagged)
        if flagged:
            assert reference["value"][c] is None and candidate["value"][c] is None
            continue
        judged.append(c)
        assert reference["value"][c] == pytest.approx((ws * xs).sum().item(), rel=1e-12, abs=1e-12)
        assert candidate["value"][c] == reference["value"][c]
        wx = (ws * xs).abs().sum().item()
        atol, rtol = (limits.atol, limits.rtol) if dtype.is_floating_point else (0.0, 0.0)
        expected = atol * ws.abs().sum().item() + rtol * wx + sampled_checks.SUM_SLACK * wx
        assert reference["bound"][c] == pytest.approx(expected, rel=1e-12)
    if dtype.is_floating_point:
        assert [c for c in range(len(chunks)) if c not in judged] == [40 // size, 900 // size]


def test_a_scaled_bound_uses_the_rms_and_a_non_finite_value_leaves_the_tensor_to_the_full_checks(monkeypatch):
    monkeypatch.setattr(sampled_checks, "SLICE_ELEMENTS", 300)
    torch.manual_seed(4)
    flat = torch.randn(1_000) * 3
    w = sampled_checks.Weights(6, "cpu").of(0, flat.numel())
    fp = sampled_checks.fingerprint(flat, sampled_checks.Weights(6, "cpu"), SCALED)["tensors"][0]
    limits = SCALED.for_dtype(torch.float32)
    atol = limits.atol * math.sqrt(float((flat.double() ** 2).mean()))
    size = sampled_checks.chunk_size(flat.numel())
    ws, xs = w[:size], flat[:size].double()
    wx = (ws * xs).abs().sum().item()
    assert fp["finite"] == [True] * len(fp["value"])
    assert fp["bound"][0] == pytest.approx(atol * ws.abs().sum().item() + limits.rtol * wx
                                           + sampled_checks.SUM_SLACK * wx, rel=1e-9)
    flat[7] = math.inf
    fp = sampled_checks.fingerprint(flat, sampled_checks.Weights(6, "cpu"), SCALED)["tensors"][0]
    assert fp["finite"] == [False] * len(fp["value"]) and set(fp["bound"]) == {0.0}
