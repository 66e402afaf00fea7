"""`cuda-agent judge` flags that select checks: bad values are usage errors (exit 2) that name the
choices, before anything runs; the chosen precision policy is recorded in the result."""

import json
import subprocess

import pytest

from test_judge_cases import REPO, binary  # noqa: F401 - the fixture

TASK = "examples/relu_scale/model.py"
CANDIDATE = "examples/relu_scale/candidates/cpu_correct"


def judge(binary, *args, timeout=600):
    return subprocess.run([str(binary), "judge", "--task", TASK, "--candidate", CANDIDATE, "--device", "cpu",
                           *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, named", [
    (["--policy", "loose"], "paper, strict, tf32-fair"),
    (["--sanitize", "valgrind"], "memcheck, racecheck, initcheck or synccheck"),
])
def test_bad_choices_are_usage_errors(binary, args, named):
    proc = judge(binary, *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("policy, mode", [("paper", "fixed"), ("tf32-fair", "scaled")])
def test_the_chosen_policy_is_recorded(binary, policy, mode):
    proc = judge(binary, "--policy", policy, "--until", "verify", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["correct"] is True, result["reason"]
    assert result["policy"]["name"] == policy
    assert result["policy"]["tolerance"]["mode"] == mode
    assert result["policy"]["fast_math"] is (policy == "paper")
