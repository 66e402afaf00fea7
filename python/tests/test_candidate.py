"""Tests of the `candidate` job, and of `compare` on what it wrote."""

import os
import sys

import torch
import torch.nn.functional as F
from helpers import (
    FUNCTIONAL_CANDIDATE,
    GOOD_CANDIDATE,
    WRONG_CANDIDATE,
    candidate_spec,
    compare_spec,
    make_reference,
    run,
    write_candidate,
)


def run_candidate(tmp_path, ref, source, name="cand"):
    cand_dir, ext_dir = write_candidate(tmp_path, source, name)
    spec = candidate_spec(tmp_path, ref, cand_dir, ext_dir, name)
    return spec, run("candidate", spec)


def test_good_candidate_passes_compare(tmp_path):
    ref = make_reference(tmp_path)
    spec, result = run_candidate(tmp_path, ref, GOOD_CANDIDATE)
    assert result["ok"], result
    assert result["checks_run"] == 3
    for i in range(3):
        assert os.path.exists(os.path.join(spec["output_dir"], f"output_{i}.pt"))
    # The trusted loading in three phases, each with its wall and its process's CPU seconds.
    assert {"load", "weights", "threads", "model", "forward", "save"} <= set(result["phase_seconds"])
    assert set(result["phase_cpu_seconds"]) == set(result["phase_seconds"])
    assert all(v >= 0 for v in result["phase_cpu_seconds"].values())
    compared = run("compare", compare_spec(tmp_path, ref, spec))
    assert compared["ok"], compared
    assert [c["ok"] for c in compared["checks"]] == [True, True, True]
    assert all(c["numel"] == 128 for c in compared["checks"])


def test_candidate_gets_weights_that_travel_as_a_file(tmp_path):
    from test_reference import NONDETERMINISTIC_INIT
    ref = make_reference(tmp_path, NONDETERMINISTIC_INIT)
    assert os.path.exists(os.path.join(ref["data_dir"], "state_dict.pt"))
    spec, result = run_candidate(tmp_path, ref, GOOD_CANDIDATE)
    assert result["ok"], result
    compared = run("compare", compare_spec(tmp_path, ref, spec))
    assert compared["ok"], compared


def test_wrong_candidate_fails_compare_with_reason(tmp_path):
    ref = make_reference(tmp_path)
    spec, result = run_candidate(tmp_path, ref, WRONG_CANDIDATE)
    assert result["ok"], result
    compared = run("compare", compare_spec(tmp_path, ref, spec))
    assert not compared["ok"]
    assert compared["error_kind"] == "mismatch"
    assert compared["reason"] == (
        "check 0: output: 128 of 128 elements differ beyond atol=0.01 rtol=0.01 "
        "(max abs err 0.5, first at [0, 0]) (3 of 3 checks failed)"), compared["reason"]
    first = compared["checks"][0]
    assert first["path"] == "output"
    assert first["mismatches"] == 128
    assert first["first_mismatch_index"] == [0, 0]
    assert abs(first["actual_value"] - first["expected_value"] - 0.5) < 1e-5


def test_candidate_calling_functional_is_a_forbidden_op(tmp_path):
    ref = make_reference(tmp_path)
    _, result = run_candidate(tmp_path, ref, FUNCTIONAL_CANDIDATE)
    assert not result["ok"]
    assert result["error_kind"] == "forbidden_op"
    assert result["checks_run"] == 0
    assert result["reason"] == ("check 0: forbidden call during the candidate's forward: "
                                "torch.nn.functional.relu (torch.nn.functional is not allowed)")
    assert "model_new.py" in result["traceback"]
    assert F.relu(torch.tensor([-1.0])).item() == 0.0  # restored in this process


def test_forward_failing_on_a_later_check_names_that_check(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace(
        "        print(\"candidate output on stdout\")",
        "        calls = type(self).forward.__dict__.setdefault('calls', [0])  # out of ModelState's sight\n"
        "        calls[0] += 1\n"
        "        if calls[0] == 2:\n"
        "            raise IndexError('second call')")
    _, result = run_candidate(tmp_path, ref, source)
    assert result["error_kind"] == "forward"
    assert result["checks_run"] == 1
    assert result["reason"] == "check 1: ModelNew.forward raised IndexError: second call"


def test_state_dict_key_mismatch_lists_keys(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("self.lin", "self.proj")
    _, result = run_candidate(tmp_path, ref, source)
    assert result["error_kind"] == "state_dict"
    assert "missing keys [proj.bias, proj.weight]" in result["reason"]
    assert "unexpected keys [lin.bias, lin.weight]" in result["reason"]


def test_state_dict_shape_mismatch(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("nn.Linear(features, features)", "nn.Linear(features, features + 1)")
    _, result = run_candidate(tmp_path, ref, source)
    assert result["error_kind"] == "state_dict"
    assert "size mismatch" in result["reason"]


def test_import_failure(tmp_path):
    ref = make_reference(tmp_path)
    _, result = run_candidate(tmp_path, ref, "import cuda_extension\nclass ModelNew:\n    pass\n")
    assert result["error_kind"] == "import"
    assert "ModuleNotFoundError" in result["reason"] and "cuda_extension" in result["reason"]


def test_no_model_new_in_module(tmp_path):
    ref = make_reference(tmp_path)
    _, result = run_candidate(tmp_path, ref, "class Model:\n    pass\n")
    assert result["error_kind"] == "import"
    assert result["reason"] == "model_new.py defines no ModelNew"


def test_construct_failure(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("super().__init__()", "raise TypeError('no init')")
    _, result = run_candidate(tmp_path, ref, source)
    assert result["error_kind"] == "construct"
    assert result["reason"] == "ModelNew(*init_inputs) raised TypeError: no init"


def test_sys_exit_in_forward_is_caught(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("        print(\"candidate output on stdout\")",
                                    "        raise SystemExit(3)")
    _, result = run_candidate(tmp_path, ref, source)
    assert result["error_kind"] == "forward"
    assert "SystemExit" in result["reason"]


def test_fresh_model_new_and_extension_are_imported(tmp_path):
    ref = make_reference(tmp_path)
    sys.modules["model_new"] = type(sys)("model_new")          # a stale module from elsewhere
    sys.modules["cuda_extension"] = type(sys)("cuda_extension")
    cand_dir, ext_dir = write_candidate(tmp_path, GOOD_CANDIDATE.replace(
        "import torch\n", "import torch\nimport cuda_extension\nassert cuda_extension.MARK == 'ours'\n", 1))
    with open(os.path.join(ext_dir, "cuda_extension.py"), "w") as f:
        f.write("MARK = 'ours'\n")
    result = run("candidate", candidate_spec(tmp_path, ref, cand_dir, ext_dir))
    assert result["ok"], result
    assert sys.path[0] == ext_dir and sys.path[1] == cand_dir
    assert sys.modules["model_new"].__file__ == os.path.join(cand_dir, "model_new.py")

