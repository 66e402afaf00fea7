"""Standby profile jobs (src/harness/standby.h): a judgement claims the profile job an earlier one started
for it, and the verdict is the one a fresh job gives.

Standbys are on by default only on CUDA; CUDA_AGENT_PROFILE_STANDBY=1 switches them on here, on the CPU
device, with a cache folder per test (a standby's key holds the hidden cache folder, so tests never claim
each other's). The first judgement offers a standby, the next claims it (its `profile_candidate` job says
`standby: true`) and offers one in turn.
"""

import json
import os
import shutil
import subprocess

import pytest
from build_cache import seeded_cache
from test_judge_cases import REPO, binary, cache_dir  # noqa: F401 - the fixtures

TASK = REPO / "examples/relu_scale/model.py"
CANDIDATE = REPO / "examples/relu_scale/candidates/cpu_correct"

# Right in its first six calls — the checks: five and the repeat — and wrong after them (the warm-up and
# timed calls), when {cheat_when} held as the model was built: always, or only where a file of the
# standby's job folder (its cwd) could give the judgement's secrets away. The spot checks must catch it
# (the sampled checks, which come first and would catch it there, are switched off in these tests).
# The count lives in a default argument, where the model's state check does not look.
TIMING_ONLY_CHEAT = """
import os, sys
import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.cheat = bool({cheat_when})

    def forward(self, x: torch.Tensor, _calls=[0]) -> torch.Tensor:
        _calls[0] += 1
        cheat = self.cheat and _calls[0] > 6
        return cuda_extension.relu_scale_forward(x, self.scale * 2 if cheat else self.scale)
"""

# Wrong whenever it runs in a profile job (the harness names its job in sys.argv).
PROFILE_JOB_CHEAT = TIMING_ONLY_CHEAT.replace("bool({cheat_when})", 'sys.argv[1:2] == ["profile"]').replace(
    "self.cheat and _calls[0] > 6", "self.cheat")


def judge(binary, cache, candidate, *extra, standby="1", testing=False):
    env = dict(os.environ, CUDA_AGENT_PROFILE_STANDBY=standby)
    if testing:
        env["CUDA_AGENT_TESTING"] = "1"
    proc = subprocess.run([str(binary), "judge", "--task", str(TASK), "--candidate", str(candidate),
                           "--device", "cpu", "--cache-dir", str(cache), "--json", "--baselines", "none",
                           "--warmup", "1", "--iters", "4", "--sampled-checks", "0", *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture
def cache(binary, cache_dir, tmp_path):  # noqa: F811 - the fixtures
    """The test's own cache folder, holding the shared test cache's build of the example."""
    return seeded_cache(binary, cache_dir, tmp_path / "cache", TASK, CANDIDATE)


def profile_job(result):
    jobs = [j for j in result["jobs"] if j["name"] == "profile_candidate"]
    assert len(jobs) == 1, result["jobs"]
    return jobs[0]


def waiting_standbys(cache):
    folder = cache / "standby"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def cheat(folder, cheat_when, source=TIMING_ONLY_CHEAT):
    shutil.copytree(CANDIDATE, folder)
    (folder / "model_new.py").write_text(source.replace("{cheat_when}", cheat_when))
    return folder


def test_each_judgement_claims_the_standby_the_one_before_offered_and_keeps_every_check(binary, cache, tmp_path):
    # The static rules are skipped in all three (so that the cheats reach the profile job); the switch
    # is part of the judge's environment, so all three share one standby key.
    first = judge(binary, cache, CANDIDATE, "--test-skip-static", testing=True)
    assert first["correct"] is True, first["reason"]
    assert "standby" not in profile_job(first)
    offered = waiting_standbys(cache)
    assert len(offered) == 1, offered

    # A candidate that cheats in its timed calls is caught through a standby as through a fresh job.
    caught = judge(binary, cache, cheat(tmp_path / "always", "True"), "--test-skip-static", testing=True)
    job = profile_job(caught)
    assert job["standby"] is True and job["standby_waited_s"] > 0
    assert caught["error_kind"] == "timed_mismatch", caught["reason"]
    # Set up long before, it prepared under the reference's lease while the candidate compiled, and
    # the candidate's folders reached it at its second go (harness/standby.h, Go's `at_then`).
    assert "profile_prepared_early_wait" in caught["stage_seconds"], caught["stage_seconds"]
    assert "profile_prepared_wait" not in caught["stage_seconds"], caught["stage_seconds"]
    now = waiting_standbys(cache)
    assert offered[0] not in now and len(now) == 1, now  # the claimed one's folder is gone

    # The go (the timing seed, the spot-checked calls) and the spec are deleted before candidate code
    # runs: a candidate that cheats only when it can see them is judged correct, with its spot checks
    # (its outputs came back to the judgement's folder) and a time.
    peeks = cheat(tmp_path / "peeks", "os.path.exists('go') or os.path.exists('spec.json')")
    result = judge(binary, cache, peeks, "--test-skip-static", testing=True)
    assert profile_job(result).get("standby") is True
    assert result["error_kind"] is None and result["correct"] is True, result["reason"]
    assert "profile_prepared_early_wait" in result["stage_seconds"], result["stage_seconds"]
    assert result["timing"]["spot_checks"] == 2
    assert result["timing"]["candidate"]["time_us"] > 0

    # Switched off, the waiting standby is neither claimed nor joined by another.
    waiting = waiting_standbys(cache)
    off = judge(binary, cache, CANDIDATE, "--test-skip-static", standby="0", testing=True)
    assert off["correct"] is True, off["reason"]
    assert "standby" not in profile_job(off)
    assert waiting_standbys(cache) == waiting


def test_a_candidate_wrong_only_in_its_profile_process_fails_its_checks(binary, cache, tmp_path):
    """With one process for the candidate's checks and its timing (the default) a candidate that tells
    its profile job by the process it runs in is checked in that process: wrong outputs at verification."""
    candidate = cheat(tmp_path / "argv", "", source=PROFILE_JOB_CHEAT)
    one = judge(binary, cache, candidate, "--test-skip-static", standby="0", testing=True)
    assert one["stage"] == "verify" and one["error_kind"] == "mismatch", one["reason"]
