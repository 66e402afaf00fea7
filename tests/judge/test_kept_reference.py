"""Kept reference jobs (src/harness/kept_jobs.h): the reference process of a candidate's judgement waits
in the fork server after it, and the next judgement of the same task claims it for its own round
instead of starting one — each judgement a separate `cuda-agent judge` process, as a worker runs them.

Each test has a cache folder of its own: a kept job's key holds the judge's sandbox policy, which names
the cache folder, so tests never claim each other's jobs. The verdicts must be the ones a fresh
reference gives (the reference re-imports the task and rebuilds its model from the round's seeds).
"""

import json
import os
import shutil
import subprocess
import time

import pytest

from build_cache import seeded_cache
from test_judge_cases import REPO, binary, cache_dir, cuda_available  # noqa: F401 - the fixtures

TASK = REPO / "examples/relu_scale/model.py"
CANDIDATES = REPO / "examples/relu_scale/candidates"


def judge(binary, cache, candidate, task=TASK, exit_code=0, device="cpu", **env_extra):
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([str(binary), "judge", "--task", str(task), "--candidate", str(candidate),
                           "--device", device, "--cache-dir", str(cache), "--json", "--baselines", "none",
                           "--warmup", "1", "--iters", "4"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == exit_code, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def reference_job(result):
    jobs = [j for j in result["jobs"] if j["name"] == "reference"]
    assert len(jobs) == 1, result["jobs"]
    return jobs[0]


def kept_folders(cache):
    folder = cache / "kept"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def cache(binary, cache_dir, tmp_path):  # noqa: F811 - the fixtures
    """The test's own cache folder, holding the shared test cache's build of the example."""
    return seeded_cache(binary, cache_dir, tmp_path / "cache", TASK, CANDIDATES / "cpu_correct")


def wait_until(condition, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_next_judgements_of_a_task_are_served_by_the_reference_the_first_kept(binary, cache):
    first = judge(binary, cache, CANDIDATES / "cpu_correct")
    assert first["correct"] is True and first["reward"] is not None, first["reason"]
    assert reference_job(first)["kept_round"] == 0 and first["env"]["reference_kept"] is True
    folders = kept_folders(cache)
    assert len(folders) == 1, folders

    # A wrong candidate is caught by the kept reference as by a fresh one (its comparison reads the
    # candidate's outputs through the round's own folder), and the job serves on after it.
    wrong = judge(binary, cache, CANDIDATES / "cpu_wrong_output")
    assert wrong["correct"] is False and wrong["stage"] == "verify", wrong["reason"]
    assert reference_job(wrong)["kept_round"] == 1 and wrong["env"]["reference_kept"] is True

    again = judge(binary, cache, CANDIDATES / "cpu_correct")
    assert again["correct"] is True and again["reward"] == first["reward"], again["reason"]
    assert reference_job(again)["kept_round"] == 2
    assert kept_folders(cache) == folders  # one process served all three
    assert again["timing"]["spot_checks"] == first["timing"]["spot_checks"]


def test_another_task_gets_a_reference_of_its_own(binary, cache, tmp_path):
    other = tmp_path / "other_task.py"
    other.write_text(TASK.read_text() + "\n# another task: another content, another key\n")
    assert reference_job(judge(binary, cache, CANDIDATES / "cpu_correct"))["kept_round"] == 0
    second = judge(binary, cache, CANDIDATES / "cpu_correct", task=other)
    assert second["correct"] is True, second["reason"]
    assert reference_job(second)["kept_round"] == 0
    assert len(kept_folders(cache)) == 2


def test_a_device_keeps_at_most_its_maximum_and_ends_the_least_recently_used(binary, cache, tmp_path):
    """Kept references of any task share the device's memory: with CUDA_AGENT_KEEP_REFERENCE_MAX=1 the
    second task's kept reference ends the first's (a bench over 250 tasks keeps 8, not 250)."""
    other = tmp_path / "other_task.py"
    other.write_text(TASK.read_text() + "\n# another task\n")
    judge(binary, cache, CANDIDATES / "cpu_correct", CUDA_AGENT_KEEP_REFERENCE_MAX="1")
    first = kept_folders(cache)
    assert len(first) == 1
    second = judge(binary, cache, CANDIDATES / "cpu_correct", task=other, CUDA_AGENT_KEEP_REFERENCE_MAX="1")
    assert second["correct"] is True and second["env"]["reference_kept"] is True, second["reason"]
    wait_until(lambda: len(kept_folders(cache)) == 1 and kept_folders(cache) != first)
    again = judge(binary, cache, CANDIDATES / "cpu_correct", CUDA_AGENT_KEEP_REFERENCE_MAX="1")
    assert reference_job(again)["kept_round"] == 0, "the first task's reference was ended"


def test_a_kept_reference_that_waits_too_long_is_ended_and_its_folder_removed(binary, cache):
    first = judge(binary, cache, CANDIDATES / "cpu_correct", CUDA_AGENT_KEEP_REFERENCE_IDLE="1")
    assert first["env"]["reference_kept"] is True
    wait_until(lambda: kept_folders(cache) == [])  # the fork server ended it after 1 s unclaimed
    second = judge(binary, cache, CANDIDATES / "cpu_correct", CUDA_AGENT_KEEP_REFERENCE_IDLE="1")
    assert reference_job(second)["kept_round"] == 0 and second["correct"] is True


def test_a_round_whose_task_fails_ends_its_reference(binary, cache, tmp_path):
    broken = tmp_path / "broken_task.py"
    broken.write_text(TASK.read_text().replace("def forward(self, x", "def forward(self, x, missing"))
    result = judge(binary, cache, CANDIDATES / "cpu_correct", task=broken, exit_code=3)  # a task error
    assert result["outcome"] == "task_error", result["reason"]
    assert reference_job(result)["kept_round"] == 0 and result["env"]["reference_kept"] is False
    wait_until(lambda: kept_folders(cache) == [])


def test_switched_off_each_judgement_runs_its_own_reference(binary, cache):
    result = judge(binary, cache, CANDIDATES / "cpu_correct", CUDA_AGENT_KEEP_REFERENCE="0")
    assert result["correct"] is True, result["reason"]
    assert "kept_round" not in reference_job(result) and "reference_kept" not in result["env"]
    assert kept_folders(cache) == []


def test_a_stale_task_copy_is_never_served(binary, cache, tmp_path):
    """The task's content is part of the key: an edited task file at the same path gets a new job."""
    task = tmp_path / "task.py"
    shutil.copy(TASK, task)
    assert reference_job(judge(binary, cache, CANDIDATES / "cpu_correct", task=task))["kept_round"] == 0
    task.write_text(task.read_text().replace("torch.relu(x) * self.scale", "torch.relu(x) * self.scale * 2"))
    edited = judge(binary, cache, CANDIDATES / "cpu_correct", task=task)
    assert reference_job(edited)["kept_round"] == 0
    assert edited["correct"] is False, "the candidate no longer matches the edited task"


@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
def test_cuda_judgements_of_a_task_share_a_kept_reference_on_the_gpu(binary, cache):
    verdicts = []
    for r, name in enumerate(["cuda_correct", "cuda_wrong_output", "cuda_correct"]):
        result = judge(binary, cache, CANDIDATES / name, device="cuda")
        assert reference_job(result)["kept_round"] == r, result["jobs"]
        verdicts.append((result["correct"], result["stage"]))
    assert verdicts == [(True, "done"), (False, "verify"), (True, "done")]
    assert len(kept_folders(cache)) == 1
