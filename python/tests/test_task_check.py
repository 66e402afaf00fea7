"""Tests of the `task_check` job: trivial answers per policy, input independence, failures, progress."""

import json
import os

import pytest
import torch
from helpers import fixed_tolerance, read_strict_json, run, run_cli, write

from cuda_agent_harness.comparison import Tolerance, compare
from cuda_agent_harness.jobs.task_check import TaskChecker, no_looser

# The tolerance specs of the three policies (judge/precision.cc; docs/precision.md).
SCALED_LIMITS = {
    "float64": {"atol": 1e-11, "rtol": 1e-11, "rnorm": 1e-12},
    "float16": {"atol": 2e-3, "rtol": 4e-3, "rnorm": 1e-3},
    "bfloat16": {"atol": 1.6e-2, "rtol": 3.2e-2, "rnorm": 8e-3},
    "default": {"atol": 1e-2, "rtol": 1e-2, "rnorm": 1e-2},
}
TOLERANCES = {
    "strict": {"mode": "scaled", "limits": {**SCALED_LIMITS,
                                            "float32": {"atol": 2e-4, "rtol": 2e-4, "rnorm": 5e-5}}},
    "tf32-fair": {"mode": "scaled", "limits": {**SCALED_LIMITS,
                                               "float32": {"atol": 5e-3, "rtol": 5e-3, "rnorm": 1.5e-3}}},
    "paper": fixed_tolerance(),
}
POLICIES = tuple(TOLERANCES)

# Softmax over a wide row: every value is near 1/4096, far below the fixed atol of 1e-2.
WIDE_SOFTMAX = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
def get_inputs():
    return [torch.randn(8, 4096)]
def get_init_inputs():
    return []
"""

# Ignores its input: the output depends on the weights only.
CONSTANT = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 32))
    def forward(self, x):
        return self.w * 3.0
def get_inputs():
    return [torch.randn(16, 32)]
def get_init_inputs():
    return []
"""

# Almost the identity: a residual 1e-4 of the input; and a second input with the same shape.
NEAR_IDENTITY = """
import torch
class Model(torch.nn.Module):
    def forward(self, scale, x):
        return x + 1e-4 * torch.tanh(x) * scale
def get_inputs():
    return [torch.ones(64, 64) * 2, torch.randn(64, 64)]
def get_init_inputs():
    return []
"""

RAISES = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        raise ValueError("this task is broken")
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
"""

# A GEMM plus bias: nothing trivial comes near (the output has no dominant mean).
NORMAL = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 48)
    def forward(self, x):
        return self.lin(x)
def get_inputs():
    return [torch.randn(32, 64)]
def get_init_inputs():
    return []
"""

# A tuple output: the second element is the input itself, the first a computed tensor.
TUPLE = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return (x.sum(dim=1), x * 1.0, 7)
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
"""

SCALAR_LOSS = """
import torch
class Model(torch.nn.Module):
    def forward(self, a, b):
        return ((a - b) ** 2).mean()
def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]
def get_init_inputs():
    return []
"""

# Zero up to rounding (KernelBench level 2 problem 23's shape): a GroupNorm's output averaged over
# everything but the batch. The reference's own float32 noise is all the output holds.
ROUNDING_NOISE = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3)
        self.norm = torch.nn.GroupNorm(4, 16)
    def forward(self, x):
        return self.norm(self.conv(x)).mean(dim=[1, 2, 3])
def get_inputs():
    return [torch.rand(16, 3, 18, 18)]
def get_init_inputs():
    return []
"""


def check_spec(tmp_path, tasks: dict[str, str], **extra) -> dict:
    entries = [{"name": name, "id": f"id-{name}", "path": write(tmp_path / "tasks" / f"{name}.py", source)}
               for name, source in tasks.items()]
    spec = {"result_path": str(tmp_path / "task_check.json"), "device": "cpu", "tasks": entries,
            "tolerances": TOLERANCES, "backend_flags": {"allow_tf32": False,
                                                        "float32_matmul_precision": "highest"},
            "seed": 1234, "progress_path": str(tmp_path / "progress.jsonl")}
    spec.update(extra)
    return spec


def records(spec: dict) -> dict[str, dict]:
    found = {}
    with open(spec["progress_path"], encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            if "name" in entry:
                found[entry["name"]] = entry
    return found


def passes(record: dict, answer: str) -> dict:
    entry = record["answers"][answer]
    return entry["pass"] if entry else dict.fromkeys(POLICIES, False)


def flagged_by(record: dict) -> list[str]:
    return sorted(a for a, e in record["answers"].items() if e and any(e["pass"].values()))


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """One job over every task above (one process checks many tasks)."""
    tmp_path = tmp_path_factory.mktemp("task_check")
    spec = check_spec(tmp_path, {"wide_softmax": WIDE_SOFTMAX, "constant": CONSTANT,
                                 "near_identity": NEAR_IDENTITY, "raises": RAISES, "normal": NORMAL,
                                 "tuple": TUPLE, "scalar_loss": SCALAR_LOSS, "rounding_noise": ROUNDING_NOISE})
    result = run("task_check", spec)
    return spec, result, records(spec)


def test_job_checks_every_task_and_reports_ok(checked):
    spec, result, found = checked
    assert result["ok"], result
    assert result["tasks_checked"] == len(spec["tasks"]) and result["tasks_skipped"] == 0
    assert list(found) == [t["name"] for t in spec["tasks"]]
    for record in found.values():
        assert record["seconds"] >= 0
        assert record["id"] == f"id-{record['name']}"
        if record["ok"]:
            assert set(record["answers"]) == {"zeros", "constant", "noise", "input", "independent"}


def test_zeros_pass_a_wide_softmax_under_paper_only(checked):
    record = checked[2]["wide_softmax"]
    assert record["ok"], record
    assert record["output_signature"] == "Tensor[float32](8, 4096)"
    assert passes(record, "zeros") == {"strict": False, "tf32-fair": False, "paper": True}
    assert passes(record, "constant")["paper"] and not passes(record, "constant")["strict"]
    # Under `paper` even another input's softmax is "close enough": nothing there depends on x.
    assert passes(record, "independent") == {"strict": False, "tf32-fair": False, "paper": True}
    assert record["answers"]["zeros"]["rel_norm_err"] == pytest.approx(1.0)


def test_an_output_that_ignores_its_input_is_flagged_as_independent(checked):
    record = checked[2]["constant"]
    assert passes(record, "independent") == dict.fromkeys(POLICIES, True)
    assert record["inputs_vary"] is True
    assert not any(passes(record, "zeros").values())


def test_the_input_passes_a_near_identity_and_the_matching_input_is_named(checked):
    record = checked[2]["near_identity"]
    assert passes(record, "input") == {"strict": False, "tf32-fair": True, "paper": True}
    assert record["answers"]["input"]["input"] == "input 1"
    assert not any(passes(record, "independent").values())


def test_zeros_pass_an_output_of_rounding_noise_as_the_judge_would_with_its_noise_floor(checked):
    """The judge's reference measures its own float32 noise on such an output and widens the scaled
    tolerance to it (noise.py): the exact answer, zeros, passes every policy there, and the tasks
    check says so, with the floor it applied."""
    _, _, found = checked
    record = found["rounding_noise"]
    assert record["ok"], record
    assert record["noise_floors"]["output"] > 0
    assert passes(record, "zeros") == dict.fromkeys(POLICIES, True)
    # The normal task's output is not suspect: no floor is measured or applied.
    assert "noise_floors" not in found["normal"]


def test_a_task_that_raises_is_reported_and_the_job_goes_on(checked):
    record = checked[2]["raises"]
    assert not record["ok"]
    assert record["error_kind"] == "task"
    assert "this task is broken" in record["reason"] and "ValueError" in record["reason"]
    assert "answers" not in record
    assert checked[2]["normal"]["ok"]  # the task after it was still checked


def test_a_normal_task_is_flagged_by_nothing(checked):
    record = checked[2]["normal"]
    assert record["ok"], record
    assert flagged_by(record) == []
    assert record["answers"]["input"] is None  # no input has the output's shape
    assert record["answers"]["noise"]["rel_norm_err"] > 0.5


def test_a_scalar_output_gets_no_constant_or_noise_made_from_itself(checked):
    record = checked[2]["scalar_loss"]
    assert record["ok"], record
    # The mean of a scalar is the scalar: such an "answer" would pass every policy and mean nothing.
    assert record["answers"]["constant"] is None and record["answers"]["noise"] is None
    # What a constant answer really risks is covered: MSE of two randn concentrates near 2, so another
    # input set's output passes the published tolerance but not the strict one.
    assert passes(record, "independent") == {"strict": False, "tf32-fair": False, "paper": True}


def test_nested_outputs_get_answers_leaf_by_leaf(checked):
    record = checked[2]["tuple"]
    assert record["ok"], record
    assert record["output_signature"] == "tuple(Tensor[float32](8,), Tensor[float32](8, 16), int)"
    # The sum has no input of its shape, so the input cannot be the answer for every tensor.
    assert record["answers"]["input"] is None
    assert flagged_by(record) == []


def test_progress_lets_a_rerun_skip_finished_tasks(tmp_path):
    spec = check_spec(tmp_path, {"normal": NORMAL, "constant": CONSTANT})
    with open(spec["progress_path"], "w", encoding="utf-8") as f:
        f.write(json.dumps({"started": "normal"}) + "\n")
        f.write(json.dumps({"name": "normal", "ok": True, "answers": {}}) + "\n")
        f.write('{"started": "const')  # a line cut short by a crash
    result = run("task_check", spec)
    assert result["ok"], result
    assert result["tasks_skipped"] == 1 and result["tasks_checked"] == 1
    lines = open(spec["progress_path"], encoding="utf-8").read().splitlines()
    assert lines[-2:] == [json.dumps({"started": "constant"}), lines[-1]]
    assert json.loads(lines[-1])["name"] == "constant"


def test_task_timeout_ends_the_process_and_names_the_started_task(tmp_path):
    hang = NORMAL.replace("return self.lin(x)", "import time; time.sleep(60)")
    spec = check_spec(tmp_path, {"normal": NORMAL, "hang": hang, "after": NORMAL}, task_timeout_s=2)
    proc, result = run_cli("task_check", spec, tmp_path)
    assert proc.returncode == 1 and result is None
    assert "Timeout" in proc.stderr
    lines = [json.loads(row) for row in open(spec["progress_path"], encoding="utf-8")]
    assert [row.get("started") or row["name"] for row in lines] == ["normal", "normal", "hang"]


def test_bad_tolerances_are_an_internal_error(tmp_path):
    spec = check_spec(tmp_path, {"normal": NORMAL}, tolerances={"strict": {"mode": "odd"}})
    result = run("task_check", spec)
    assert not result["ok"] and result["error_kind"] == "internal"
    assert not os.path.exists(spec["progress_path"])
    assert read_strict_json(spec["result_path"])["error_kind"] == "internal"


def test_policy_order_carries_results_without_changing_them():
    tols = {name: Tolerance.from_spec(spec) for name, spec in TOLERANCES.items()}
    assert no_looser(tols["strict"], tols["tf32-fair"]) and not no_looser(tols["tf32-fair"], tols["strict"])
    assert not no_looser(tols["paper"], tols["strict"]) and not no_looser(tols["strict"], tols["paper"])
    tols["strict-twin"] = tols["strict"]  # identical tolerances must not stall the ordering
    checker = TaskChecker("cpu", tols, 1, None)
    torch.manual_seed(0)
    expected = torch.softmax(torch.randn(8, 4096), dim=1)
    near = expected * (1 + 1e-4 * torch.randn_like(expected))  # within tf32-fair, not strict
    for answer in (torch.zeros_like(expected), near, expected.clone(), expected * 2):
        carried = checker.judge(expected, answer)["pass"]
        direct = {name: compare(expected, answer, tol).ok for name, tol in tols.items()}
        assert carried == direct
