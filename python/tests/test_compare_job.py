"""Tests of the `compare` job on files: loading rules, per-check entries, strict JSON."""

import collections

import torch
from helpers import fixed_tolerance, run

FIELDS = {"index", "ok", "reason", "path", "max_abs_err", "max_rel_err", "rel_norm_err", "mismatches", "numel",
          "first_mismatch_index", "expected_value", "actual_value"}


class NotAllowed:
    """A pickled custom object: torch.load(weights_only=True) must refuse it."""

    def __init__(self):
        self.x = 1


def save_pairs(tmp_path, pairs):
    expected_paths, actual_paths = [], []
    for i, (expected, actual) in enumerate(pairs):
        e = tmp_path / f"expected_{i}.pt"
        a = tmp_path / f"output_{i}.pt"
        torch.save(expected, e)
        torch.save(actual, a)
        expected_paths.append(str(e))
        actual_paths.append(str(a))
    return {"result_path": str(tmp_path / "compare.json"), "expected_paths": expected_paths,
            "actual_paths": actual_paths, "tolerance": fixed_tolerance()}


def test_every_check_is_reported_with_all_fields(tmp_path):
    x = torch.randn(3, 4)
    bad = x.clone()
    bad[1, 2] += 1
    result = run("compare", save_pairs(tmp_path, [(x, x.clone()), (x, bad), (x, x.clone())]))
    assert not result["ok"]
    assert result["error_kind"] == "mismatch"
    assert [c["ok"] for c in result["checks"]] == [True, False, True]
    assert all(set(c) == FIELDS for c in result["checks"])
    assert result["checks"][1]["first_mismatch_index"] == [1, 2]
    assert result["reason"].startswith("check 1: output: 1 of 12 elements differ")
    assert result["reason"].endswith("(1 of 3 checks failed)")


def test_unloadable_actual_is_output_type(tmp_path):
    spec = save_pairs(tmp_path, [(torch.zeros(2), torch.zeros(2)), (torch.zeros(2), NotAllowed())])
    result = run("compare", spec)
    assert not result["ok"]
    assert result["error_kind"] == "output_type"
    assert result["checks"][0]["ok"] and not result["checks"][1]["ok"]
    assert "weights_only=True" in result["checks"][1]["reason"]


def test_missing_actual_file_is_output_type(tmp_path):
    spec = save_pairs(tmp_path, [(torch.zeros(2), torch.zeros(2))])
    spec["actual_paths"] = [str(tmp_path / "never_written.pt")]
    result = run("compare", spec)
    assert result["error_kind"] == "output_type"


def test_nan_values_are_written_as_strict_json(tmp_path):
    e = torch.tensor([1.0, float("inf")])
    a = torch.tensor([float("nan"), float("-inf")])
    result = run("compare", save_pairs(tmp_path, [(e, a)]))  # run() parses strictly
    check = result["checks"][0]
    assert check["actual_value"] == "nan"
    assert check["expected_value"] == 1.0
    assert check["mismatches"] == 2


def test_containers_round_trip_through_files(tmp_path):
    value = (torch.ones(2), [torch.zeros(1), 3], collections.OrderedDict(a=torch.ones(1)))
    assert run("compare", save_pairs(tmp_path, [(value, value)]))["ok"]
    as_list = [value[0], value[1], value[2]]
    result = run("compare", save_pairs(tmp_path, [(value, as_list)]))
    assert result["checks"][0]["reason"] == "output: type list != expected tuple"


def test_path_count_mismatch_is_internal(tmp_path):
    spec = save_pairs(tmp_path, [(torch.zeros(1), torch.zeros(1))])
    spec["actual_paths"] = []
    result = run("compare", spec)
    assert result["error_kind"] == "internal"


def test_the_warm_up_never_fails_the_job():
    """compare.warm_up runs before the go of an early compare job on the GPU; without a GPU (here), or
    with a spec it cannot use, it must do nothing rather than raise."""
    from cuda_agent_harness.jobs import compare as compare_job
    assert compare_job.warm_up({"device": "cpu"}) is None
    assert compare_job.warm_up({"device": "cuda", "tolerance": {"mode": "fixed"}}) is None
    assert compare_job.warm_up({"device": "cuda"}) is None
