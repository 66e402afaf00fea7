"""Early jobs (go.py): a job started before its inputs exist waits for its go, takes spec fields from
it, and is called off by `stop` or its time limit."""

import json
import os
import threading
import time

from helpers import GOOD_CANDIDATE, candidate_spec, compare_spec, make_reference, run, write_candidate


def waiting(spec: dict, tmp_path, timeout_s: float = 30) -> dict:
    signals = tmp_path / "signals"
    signals.mkdir(exist_ok=True)
    spec = dict(spec)
    spec["wait_for"] = {"go": str(signals / "go"), "stop": str(signals / "stop"), "timeout_s": timeout_s}
    return spec


def write_later(path, text: str, delay: float = 0.3) -> threading.Thread:
    def write():
        time.sleep(delay)
        tmp = str(path) + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.rename(tmp, path)
    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_early_compare_takes_its_paths_from_the_go(tmp_path):
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, GOOD_CANDIDATE)
    cand = candidate_spec(tmp_path, ref, cand_dir, ext_dir)
    assert run("candidate", cand)["ok"]
    paths = compare_spec(tmp_path, ref, cand)
    spec = waiting({"result_path": paths["result_path"], "tolerance": paths["tolerance"],
                    "expected_paths": [], "actual_paths": []}, tmp_path)
    writer = write_later(tmp_path / "signals" / "go", json.dumps(
        {"expected_paths": paths["expected_paths"], "actual_paths": paths["actual_paths"]}))
    result = run("compare", spec)
    writer.join()
    assert result["ok"], result
    assert len(result["checks"]) == 3, "the go's paths were compared, not the spec's empty lists"
    assert result["go_wait_seconds"] >= 0.2


def run_early_candidate(tmp_path, signal: str) -> tuple[dict, dict]:
    """An early candidate job whose `signal` file ("go" or "stop") appears 0.3 s after it started."""
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, GOOD_CANDIDATE)
    spec = waiting(candidate_spec(tmp_path, ref, cand_dir, ext_dir), tmp_path)
    writer = write_later(tmp_path / "signals" / signal, signal + "\n")
    result = run("candidate", spec)
    writer.join()
    return spec, result


def test_early_candidate_runs_after_a_plain_go(tmp_path):
    _, result = run_early_candidate(tmp_path, "go")
    assert result["ok"], result
    assert result["checks_run"] == 3


def test_stop_calls_an_early_job_off_before_it_loads_anything(tmp_path):
    spec, result = run_early_candidate(tmp_path, "stop")
    assert not result["ok"] and result["error_kind"] == "not_started"
    assert "checks_run" not in result, "nothing of the job ran"
    assert not os.path.exists(spec["output_dir"])


def test_an_early_job_gives_up_after_its_time_limit(tmp_path):
    spec = waiting({"result_path": str(tmp_path / "r.json"), "expected_paths": [], "actual_paths": [],
                    "tolerance": {}}, tmp_path, timeout_s=0.2)
    start = time.monotonic()
    result = run("compare", spec)
    assert result["error_kind"] == "not_started"
    assert time.monotonic() - start < 5


def test_a_go_that_is_no_spec_object_is_an_internal_error(tmp_path):
    spec = waiting({"result_path": str(tmp_path / "r.json"), "expected_paths": [], "actual_paths": [],
                    "tolerance": {}}, tmp_path)
    (tmp_path / "signals" / "go").write_text('{"result_path": "/elsewhere"}')
    result = run("compare", spec)
    assert result["error_kind"] == "internal" and "go file" in result["reason"]
