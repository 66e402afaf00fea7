"""Unit tests of cuda_agent_harness.comparison: the rules of the `compare` job."""

import math
import re

import pytest
import torch

from cuda_agent_harness import comparison
from cuda_agent_harness.comparison import Tolerance, compare

NAN = float("nan")
INF = float("inf")


def check(expected, actual, atol=0.01, rtol=0.01):
    return compare(expected, actual, Tolerance.fixed(atol, rtol))


def test_identical_tensors_pass_with_counts():
    x = torch.randn(4, 5)
    report = check(x, x.clone())
    assert report.ok, report.reason
    assert report.numel == 20
    assert report.mismatches == 0
    assert report.max_abs_err == 0.0


def test_values_within_tolerance_pass_and_report_error():
    e = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    report = check(e, e + 0.005)
    assert report.ok
    assert report.max_abs_err == pytest.approx(0.005)
    assert report.max_rel_err == pytest.approx(0.005)


def test_mismatch_reason_counts_and_locates():
    e = torch.zeros(4, 32)
    a = e.clone()
    a[0, 17] = 3.1
    a[2, 3] = -1.0
    report = check(e, a)
    assert not report.ok
    assert report.path == "output"
    assert report.mismatches == 2
    assert report.numel == 128
    assert report.first_mismatch_index == [0, 17]
    assert report.expected_value == 0.0
    assert report.actual_value == pytest.approx(3.1)
    assert report.max_abs_err == pytest.approx(3.1)
    assert re.fullmatch(r"output: 2 of 128 elements differ beyond atol=0\.01 rtol=0\.01 "
                        r"\(max abs err 3\.1, first at \[0, 17\]\)", report.reason), report.reason


def test_nan_where_expected_is_finite_fails():
    e = torch.ones(5, 6)
    a = e.clone()
    a[3, 4] = NAN
    report = check(e, a)
    assert not report.ok
    assert report.reason.startswith("output: NaN where expected is finite at [3, 4]"), report.reason
    assert report.mismatches == 1


def test_finite_where_expected_is_nan_fails():
    e = torch.tensor([1.0, NAN])
    report = check(e, torch.tensor([1.0, 0.0]))
    assert not report.ok
    assert "finite where expected is NaN at [1]" in report.reason


def test_nan_in_same_places_passes():
    e = torch.tensor([[1.0, NAN], [NAN, 4.0]])
    report = check(e, e.clone())
    assert report.ok, report.reason


def test_nan_in_different_places_fails():
    e = torch.tensor([NAN, 1.0])
    report = check(e, torch.tensor([1.0, NAN]))
    assert not report.ok
    assert report.mismatches == 2


def test_all_nan_actual_against_finite_expected_fails():
    e = torch.randn(8, 8)
    report = check(e, torch.full_like(e, NAN), atol=1e9, rtol=1e9)
    assert not report.ok
    assert report.mismatches == 64


def test_same_infinity_passes_and_sign_mismatch_fails():
    e = torch.tensor([1.0, INF, -INF])
    assert check(e, e.clone()).ok
    flipped = torch.tensor([1.0, -INF, -INF])
    report = check(e, flipped)
    assert not report.ok
    assert "-inf where expected is inf at [1]" in report.reason


def test_infinity_against_finite_fails_even_with_huge_tolerance():
    e = torch.tensor([1.0, 2.0])
    report = check(e, torch.tensor([1.0, INF]), atol=1e30, rtol=1e30)
    assert not report.ok
    assert "inf where expected is finite at [1]" in report.reason


def test_shape_mismatch():
    report = check(torch.zeros(128, 32), torch.zeros(128, 64))
    assert not report.ok
    assert report.reason == "output: shape (128, 64) != expected (128, 32)"


def test_broadcastable_shape_is_still_a_mismatch():
    report = check(torch.zeros(4, 4), torch.zeros(1, 4))
    assert not report.ok
    assert "shape" in report.reason


def test_dtype_mismatch():
    report = check(torch.zeros(3), torch.zeros(3, dtype=torch.float16))
    assert not report.ok
    assert report.reason == "output: dtype float16 != expected float32"


def test_device_mismatch():
    report = check(torch.zeros(3), torch.zeros(3, device="meta"))
    assert not report.ok
    assert report.reason == "output: device meta != expected cpu"


def test_tuple_is_not_list():
    report = check((torch.zeros(2), torch.zeros(2)), [torch.zeros(2), torch.zeros(2)])
    assert not report.ok
    assert report.reason == "output: type list != expected tuple"


def test_tensor_is_not_scalar():
    report = check(torch.tensor(1.0), 1.0)
    assert not report.ok
    assert report.reason == "output: type float != expected Tensor"


def test_sequence_length_mismatch():
    report = check((torch.zeros(2),), (torch.zeros(2), torch.zeros(2)))
    assert not report.ok
    assert report.reason == "output: length 2 != expected 1"


def test_nested_path_names_the_failing_leaf():
    e = (torch.zeros(2), {"a": [torch.zeros(3), torch.zeros(3)]})
    a = (torch.zeros(2), {"a": [torch.zeros(3), torch.tensor([0.0, 0.0, 5.0])]})
    report = check(e, a)
    assert not report.ok
    assert report.path == "output[1]['a'][1]"
    assert report.first_mismatch_index == [2]
    assert report.numel == 8


def test_dict_keys_must_match():
    e = {"a": torch.zeros(1), "b": torch.zeros(1)}
    report = check(e, {"a": torch.zeros(1), "c": torch.zeros(1)})
    assert not report.ok
    assert "missing ['b']" in report.reason and "unexpected ['c']" in report.reason
    assert check(e, {"b": torch.zeros(1), "a": torch.zeros(1)}).ok


def test_integer_tensors_are_exact():
    e = torch.arange(10, dtype=torch.int64)
    assert check(e, e.clone(), atol=100, rtol=100).ok
    a = e.clone()
    a[4] += 1
    report = check(e, a, atol=100, rtol=100)
    assert not report.ok
    assert report.first_mismatch_index == [4]
    assert report.expected_value == 4 and report.actual_value == 5
    assert "exact comparison for int64" in report.reason


def test_bool_tensors_are_exact():
    e = torch.tensor([True, False, True])
    assert check(e, e.clone()).ok
    assert not check(e, torch.tensor([True, True, True])).ok


def test_tolerance_boundary():
    e = torch.tensor([1.0, -2.0], dtype=torch.float64)
    # tolerance at e: atol + rtol * |e| = 0.02 for 1.0 and 0.03 for -2.0
    inside = e + torch.tensor([0.0199, -0.0299], dtype=torch.float64)
    outside_abs = e + torch.tensor([0.0201, 0.0], dtype=torch.float64)
    outside_rel = e + torch.tensor([0.0, -0.0301], dtype=torch.float64)
    assert check(e, inside).ok
    assert not check(e, outside_abs).ok
    assert not check(e, outside_rel).ok


def test_tolerance_is_relative_to_expected_not_actual():
    # relative to |actual| (1.0) this would pass with rtol=2; relative to |expected| (0.0) it must not
    e = torch.tensor([0.0], dtype=torch.float64)
    assert not check(e, torch.tensor([1.0], dtype=torch.float64), atol=0.0, rtol=2.0).ok


def test_half_precision_compared_in_float64():
    e = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    assert check(e, e.clone()).ok
    report = check(e, torch.tensor([1.0, 2.5], dtype=torch.bfloat16))
    assert not report.ok
    assert report.max_abs_err == pytest.approx(0.5)


def test_complex_tensors_compare_both_parts():
    e = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    assert check(e, e.clone()).ok
    report = check(e, torch.tensor([1 + 1j, 2 + 1j], dtype=torch.complex64))
    assert not report.ok
    assert report.first_mismatch_index == [1, 1]


def test_empty_tensors_pass():
    assert check(torch.zeros(0, 3), torch.zeros(0, 3)).ok


def test_zero_dim_tensor():
    report = check(torch.tensor(1.0), torch.tensor(NAN))
    assert not report.ok
    assert report.first_mismatch_index == []


def test_scalars_by_equality():
    assert check(3, 3).ok
    assert not check(3, 4).ok
    assert check(NAN, NAN).ok
    assert not check(1.0, NAN).ok
    assert not check(NAN, 1.0).ok
    assert not check(1, True).ok
    assert check(None, None).ok
    assert check("a", "a").ok and not check("a", "b").ok


def test_chunked_comparison_finds_first_mismatch_across_chunks(monkeypatch):
    monkeypatch.setattr(comparison, "CHUNK_ELEMENTS", 7)
    e = torch.zeros(5, 6)
    a = e.clone()
    a[2, 5] = 1.0    # flat 17: third chunk
    a[4, 0] = NAN    # flat 24: fourth chunk
    a[4, 5] = -1.0   # flat 29: last, partial chunk
    report = check(e, a)
    assert not report.ok
    assert report.mismatches == 3
    assert report.first_mismatch_index == [2, 5]
    assert "NaN where expected is finite at [4, 0]" in report.reason
    assert report.max_abs_err == pytest.approx(1.0)


def test_max_rel_err_uses_expected_magnitude():
    e = torch.tensor([4.0, 100.0], dtype=torch.float64)
    report = check(e, torch.tensor([4.02, 100.5], dtype=torch.float64))
    assert report.max_rel_err == pytest.approx(0.005)
    assert math.isfinite(report.max_rel_err)


# The scaled tolerance of the `strict` and `tf32-fair` policies (docs/precision.md).

STRICT = Tolerance.from_spec({"mode": "scaled", "limits": {
    "float32": {"atol": 1e-4, "rtol": 1e-4, "rnorm": 2e-5},
    "default": {"atol": 1e-2, "rtol": 1e-2, "rnorm": 1e-2}}})


def test_zeros_pass_a_tiny_output_under_fixed_but_not_scaled():
    e = torch.softmax(torch.randn(16, 32768), dim=1)  # every element ~3e-5
    zeros = torch.zeros_like(e)
    assert check(e, zeros).ok, "the published tolerance lets zeros through"
    report = compare(e, zeros, STRICT)
    assert not report.ok
    assert "beyond atol=" in report.reason and "x RMS" in report.reason, report.reason


def test_noise_with_the_right_mean_and_std_fails_the_relative_norm():
    e = torch.randn(256, 256) * 1e-3 + 5.0
    noise = torch.randn(256, 256) * e.std() + e.mean()
    report = compare(e, noise, Tolerance.from_spec({"mode": "scaled", "limits": {
        "default": {"atol": 1.0, "rtol": 1.0, "rnorm": 1e-4}}}))
    assert not report.ok
    assert report.reason.startswith("output: relative norm error"), report.reason
    assert report.rel_norm_err > 1e-4


def tf32_round(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32's 10-bit mantissa (round to nearest)."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_strict_fp32_rejects_a_tf32_gemm_and_accepts_another_summation_order():
    torch.manual_seed(0)
    a, b = torch.randn(128, 2048), torch.randn(2048, 128)
    e = (a.double() @ b.double()).float()
    reordered = (a.reshape(128, 16, 128).transpose(0, 1) @ b.reshape(16, 128, 128)).sum(0)
    tf32 = tf32_round(a) @ tf32_round(b)
    assert compare(e, reordered, STRICT).ok
    report = compare(e, tf32, STRICT)
    assert not report.ok, "a TF32 GEMM must not pass an fp32 task under strict"
    assert report.rel_norm_err > 1e-4


def test_scaled_limits_are_chosen_by_dtype():
    e = torch.randn(64, 64).half()
    close = (e.float() * (1 + 2e-3)).half()
    assert compare(e, close, STRICT).ok, "float16 falls back to the default limits"
    assert not compare(e.float(), close.float(), STRICT).ok, "float32 has its own, tighter limits"


def test_expected_all_zero_needs_exact_zeros_when_scaled():
    e = torch.zeros(8, 8)
    assert compare(e, torch.zeros(8, 8), STRICT).ok
    assert not compare(e, torch.full((8, 8), 1e-6), STRICT).ok


@pytest.mark.parametrize("spec", [{}, {"mode": "loose", "limits": {"default": {"atol": 1, "rtol": 1}}},
                                  {"mode": "scaled", "limits": {}},
                                  {"mode": "scaled", "limits": {"default": {"atol": "x", "rtol": 1}}}])
def test_malformed_tolerance_specs_are_refused(spec):
    with pytest.raises(ValueError):
        Tolerance.from_spec(spec)
