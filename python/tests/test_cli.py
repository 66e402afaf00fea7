"""End-to-end through `python3 -m cuda_agent_harness` in child processes (each pays the torch import)."""

import os
import subprocess
import sys

from helpers import (
    GOOD_CANDIDATE,
    PYTHON_DIR,
    TASK,
    candidate_spec,
    compare_spec,
    reference_spec,
    run_cli,
    write,
    write_candidate,
)


def test_reference_candidate_compare_pipeline(tmp_path):
    task_path = write(tmp_path / "task" / "model.py", TASK)
    ref = reference_spec(tmp_path, task_path, seeds=(1, 2))
    proc, result = run_cli("reference", ref, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert result["ok"], result

    cand = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, GOOD_CANDIDATE))
    proc, result = run_cli("candidate", cand, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "candidate output on stdout" in proc.stdout      # the candidate printed ...
    assert "candidate output on stderr" in proc.stderr
    assert result["ok"] and result["checks_run"] == 2        # ... and the result is still clean JSON

    proc, result = run_cli("compare", compare_spec(tmp_path, ref, cand), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert result["ok"], result
    assert not any(name.endswith(".tmp") or ".tmp." in name for name in os.listdir(tmp_path))


def test_candidate_thread_cannot_keep_the_process_alive(tmp_path):
    task_path = write(tmp_path / "task" / "model.py", TASK)
    ref = reference_spec(tmp_path, task_path, seeds=(1,))
    proc, _ = run_cli("reference", ref, tmp_path)
    assert proc.returncode == 0, proc.stderr
    source = GOOD_CANDIDATE.replace(
        "import torch\n",
        "import threading, time, torch\n"
        "threading.Thread(target=lambda: time.sleep(600), daemon=False).start()\n", 1)
    cand = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, source))
    proc, result = run_cli("candidate", cand, tmp_path)   # would hit the 120 s timeout otherwise
    assert proc.returncode == 0, proc.stderr
    # The job ends (its result is written) and the thread itself is refused: no thread may start
    # while ModelNew loads (process_watch.py).
    assert not result["ok"] and result["error_kind"] == "spawned_threads", result


def test_unreadable_spec_exits_2_without_result(tmp_path):
    spec_path = tmp_path / "bad.json"
    spec_path.write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "cuda_agent_harness", "static", "--spec", str(spec_path)],
                          env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "cannot read spec" in proc.stderr


def test_unknown_job_is_refused(tmp_path):
    proc, result = run_cli("nonsense", {"result_path": str(tmp_path / "r.json")}, tmp_path)
    assert proc.returncode == 2
    assert result is None


def test_spec_file_is_removed_before_candidate_code_runs(tmp_path):
    """The spec of a job that runs candidate code holds secrets; it must be gone once read."""
    import json
    import subprocess
    import sys

    from helpers import PYTHON_DIR

    spec = tmp_path / "spec.json"
    # An unusable spec for the job: it fails, but only after the spec was read and removed.
    spec.write_text(json.dumps({"result_path": str(tmp_path / "result.json"), "seed": 1234}))
    env = {"PYTHONPATH": PYTHON_DIR, "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "cuda_agent_harness", "profile", "--spec", str(spec)],
                   env=env, capture_output=True, timeout=120)
    assert not spec.exists()
    assert (tmp_path / "result.json").exists()
