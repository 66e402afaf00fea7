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


def test_baselines_come_from_the_store_the_second_time(binary, tmp_path):
    store = tmp_path / "store.sqlite"
    # CPU timings are noisy: a drift bound of 100x keeps this test about reuse.
    common = ("--baselines", "eager,compile", "--warmup", "1", "--iters", "3", "--json",
              "--baseline-drift", "100", "--baseline-store", str(store))
    first = json.loads(judge(binary, *common).stdout)
    assert first["reward"] in (1, 2, 3), first["reason"]
    for target in ("eager", "compile"):
        assert first["timing"]["baseline_store"][target] == "measured (none stored)"
        assert set(first["timing"][target]["calibration"]) == {"copy_us", "gemm_us"}
    second = json.loads(judge(binary, *common).stdout)
    assert second["reward"] in (1, 2, 3), second["reason"]
    for target in ("eager", "compile"):
        assert second["timing"]["baseline_store"][target] == "stored"
        assert second["timing"][target]["time_us"] == first["timing"][target]["time_us"]
        assert second["timing"][target]["stored_at"]
    # A device calibration that moved beyond the bound re-measures both, with a note.
    strict = json.loads(judge(binary, *common[:-4], "--baseline-drift", "1e-9",
                              "--baseline-store", str(store)).stdout)
    assert strict["timing"]["baseline_store"]["eager"].startswith("measured (the device's")
    assert strict["timing"]["baseline_store"]["compile"].startswith("measured")
    assert "baselines re-measured" in strict["reason"] and "calibration moved" in strict["reason"]
    # So do baselines older than --baseline-max-age.
    old = json.loads(judge(binary, *common, "--baseline-max-age", "0.0000001").stdout)
    assert "h ago" in old["timing"]["baseline_store"]["eager"], old["timing"]["baseline_store"]
    # Other timing settings are another key: measured again.
    third = json.loads(judge(binary, *common[:-2], "--iters", "4", "--baseline-store", str(store)).stdout)
    assert third["timing"]["baseline_store"]["compile"] == "measured (none stored)"
    off = json.loads(judge(binary, "--baselines", "eager", "--iters", "3", "--json",
                           "--baseline-store", "none").stdout)
    assert "baseline_store" not in off["timing"]


def test_an_unusable_store_is_a_note_not_a_failure(binary, tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database, only text that is long enough to have a header")
    proc = judge(binary, "--baselines", "eager", "--iters", "3", "--json", "--baseline-store", str(junk))
    result = json.loads(proc.stdout)
    assert result["reward"] in (1, 2, 3), result["reason"]
    assert "baseline store unavailable" in result["reason"] and "junk.sqlite" in result["reason"]
