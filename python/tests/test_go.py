"""Early jobs (go.py): a job started before its inputs exist waits for its go, takes spec fields from
it, and is called off by `stop` or its time limit."""

import json
import os
import threading
import time

import pytest
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


def test_a_waiting_job_marks_itself_ready_before_its_go(tmp_path):
    """The judge takes the device lease for an early job once its set-up is done: the ready mark must
    exist while the job still waits (not only once it has its go), and it is no go by itself."""
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, GOOD_CANDIDATE)
    spec = waiting(candidate_spec(tmp_path, ref, cand_dir, ext_dir), tmp_path)
    ready = tmp_path / "marks" / "ready"
    ready.parent.mkdir()
    spec["wait_for"]["ready"] = str(ready)
    seen = {}

    def go_once_ready():
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        seen["ready"] = ready.exists()
        time.sleep(0.2)  # still waiting: the mark alone must not start the work
        seen["outputs_before_go"] = os.path.exists(spec["output_dir"])
        (tmp_path / "signals" / "go").write_text("go\n")

    thread = threading.Thread(target=go_once_ready)
    thread.start()
    result = run("candidate", spec)
    thread.join()
    assert seen == {"ready": True, "outputs_before_go": False}
    assert result["ok"], result
    assert result["go_wait_seconds"] >= 0.2


def test_a_ready_mark_that_cannot_be_written_is_an_internal_error(tmp_path):
    spec = waiting({"result_path": str(tmp_path / "r.json"), "expected_paths": [], "actual_paths": [],
                    "tolerance": {}}, tmp_path)
    spec["wait_for"]["ready"] = str(tmp_path / "no such folder" / "ready")
    result = run("compare", spec)
    assert result["error_kind"] == "internal" and "cannot write the mark" in result["reason"]


def preparing(tmp_path, job: str) -> tuple[dict, str]:
    """A job that prepares before its second go (go.py, "then"): the candidate's profile job or its
    verification's `candidate` job; its model_new.py leaves a file behind when imported, the sign
    that candidate code ran."""
    from helpers import profile_spec

    ref = make_reference(tmp_path)
    imported = str(tmp_path / "model_new_was_imported")
    source = f"open({imported!r}, 'w').close()\n" + GOOD_CANDIDATE
    candidate = write_candidate(tmp_path, source)
    spec = profile_spec(tmp_path, ref, "candidate", candidate, iters=3) if job == "profile" else \
        candidate_spec(tmp_path, ref, *candidate)
    spec = waiting(spec, tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    spec["wait_for"].update(ready=str(marks / "ready"), prepared=str(marks / "prepared"),
                            then=str(tmp_path / "signals" / "then"))
    return spec, imported


def wait_until(path, timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.005)
    return os.path.exists(path)


def run_prepared(job: str, spec: dict, tmp_path, after: str) -> dict:
    """Runs a preparing job while a thread plays the judge: the first go once the job is ready, then
    `after` ("then" or "stop") once it is prepared."""
    wait = spec["wait_for"]

    def judge():
        wait_until(wait["ready"])
        (tmp_path / "signals" / "go").write_text("go\n")
        wait_until(wait["prepared"])
        (tmp_path / "signals" / after).write_text(after + "\n")

    thread = threading.Thread(target=judge)
    thread.start()
    result = run(job, spec)
    thread.join()
    return result


# What each job prepares before its second go, and what it does after it.
PREPARED = {"profile": {"weights", "inputs", "pristine", "then_wait", "model", "timed"},
            "candidate": {"weights", "threads", "context", "then_wait", "model", "forward"}}


@pytest.mark.parametrize("job", sorted(PREPARED))
def test_a_job_that_prepares_does_so_after_its_go_and_loads_the_candidate_only_after_then(tmp_path, job):
    spec, imported = preparing(tmp_path, job)
    wait = spec["wait_for"]
    seen = {}

    def judge():
        seen["ready"] = wait_until(wait["ready"])
        seen["prepared_before_go"] = os.path.exists(wait["prepared"])
        (tmp_path / "signals" / "go").write_text("go\n")
        seen["prepared"] = wait_until(wait["prepared"])
        time.sleep(0.2)  # prepared and waiting: no candidate code yet
        seen["imported_before_then"] = os.path.exists(imported)
        (tmp_path / "signals" / "then").write_text("then\n")

    thread = threading.Thread(target=judge)
    thread.start()
    result = run(job, spec)
    thread.join()
    assert seen == {"ready": True, "prepared_before_go": False, "prepared": True,
                    "imported_before_then": False}
    assert result["ok"], result
    assert os.path.exists(imported)
    assert result["then_wait_seconds"] >= 0.2
    if job == "profile":
        assert result["input_sets"] == 2 + 3
    else:
        assert result["checks_run"] == 3
    assert PREPARED[job] <= set(result["phase_seconds"])
    # The waits spend no CPU to speak of: each phase's CPU seconds are its process's, not the wall's.
    assert set(result["phase_cpu_seconds"]) == set(result["phase_seconds"])
    assert result["phase_cpu_seconds"]["then_wait"] < result["phase_seconds"]["then_wait"] / 2


def test_the_profile_job_sets_its_calibration_up_before_then_and_times_it_after(tmp_path, monkeypatch):
    """The calibration's allocations and first runs are preparation (outside the exclusive lease); only
    its timed runs come after the second go."""
    from cuda_agent_harness import timing

    spec, _ = preparing(tmp_path, "profile")
    wait = spec["wait_for"]
    seen = []

    class Recorded(timing.Calibration):
        def __init__(self, *args, **kwargs):
            seen.append(("set up", os.path.exists(wait["then"])))
            super().__init__(*args, **kwargs)

        def measure(self):
            seen.append(("measured", os.path.exists(wait["then"])))
            return super().measure()

    monkeypatch.setattr(timing, "Calibration", Recorded)
    result = run_prepared("profile", spec, tmp_path, "then")
    assert result["ok"], result
    assert seen == [("set up", False), ("measured", True)]
    assert set(result["calibration"]) == {"copy_us", "gemm_us"}


@pytest.mark.parametrize("job", sorted(PREPARED))
def test_a_job_stopped_after_its_preparation_runs_no_candidate_code(tmp_path, job):
    spec, imported = preparing(tmp_path, job)
    result = run_prepared(job, spec, tmp_path, "stop")
    assert result["error_kind"] == "not_started", result
    assert "after its preparation" in result["reason"]
    assert not os.path.exists(imported)


def checking(tmp_path, wrong: bool = False) -> tuple[dict, dict, dict, str]:
    """The candidate's profile job that also verifies it (go.py, "time"): its spec, the go's check
    fields, the reference spec, and the folder its outputs go to."""
    from helpers import WRONG_CANDIDATE, profile_spec

    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, WRONG_CANDIDATE if wrong else GOOD_CANDIDATE)
    spec = waiting(profile_spec(tmp_path, ref, "candidate", candidate, iters=3), tmp_path)
    spec["output_dir"] = str(tmp_path / "out")
    spec["spot_check_calls"] = [1]
    marks = tmp_path / "marks"
    marks.mkdir()
    spec["wait_for"].update(ready=str(marks / "ready"), prepared=str(marks / "prepared"),
                            then=str(tmp_path / "signals" / "then"), checked=str(marks / "checked"),
                            time=str(tmp_path / "signals" / "time"))
    fields = {"check_seeds": list(ref["check_seeds"]), "repeat_first_check": True}
    return spec, fields, ref, spec["output_dir"]


@pytest.mark.parametrize("after", ["time", "stop"])
def test_the_profile_job_checks_the_candidate_before_its_timing_go(tmp_path, monkeypatch, after):
    """One process for the candidate's verification and its timing: after `then` it writes the checks'
    outputs (the same as the `candidate` job's: the reference's compare job passes them), marks them
    done, and times nothing before `time` (nothing at all when stopped there instead)."""
    from helpers import compare_spec

    from cuda_agent_harness import timing

    spec, fields, ref, out = checking(tmp_path)
    wait = spec["wait_for"]
    seen = {}
    timed_after_time = []
    real_time_calls = timing.time_calls_cpu

    def recorded(*args, **kwargs):
        timed_after_time.append(os.path.exists(wait["time"]))
        return real_time_calls(*args, **kwargs)

    monkeypatch.setattr(timing, "time_calls_cpu", recorded)

    def judge():
        wait_until(wait["ready"])
        (tmp_path / "signals" / "go").write_text(json.dumps(fields))
        wait_until(wait["prepared"])
        seen["outputs_before_then"] = os.path.exists(os.path.join(out, "output_0.pt"))
        (tmp_path / "signals" / "then").write_text("then\n")
        seen["checked"] = wait_until(wait["checked"])
        seen["outputs"] = sorted(os.listdir(out))
        with open(os.path.join(out, "weights.json")) as f:
            seen["weights"] = json.load(f)  # how it loaded the weights, for the judge's record
        # The served reference's comparison happens here; the reference's compare job stands in.
        compare = compare_spec(tmp_path, ref, {"output_dir": out})
        seen["compared"] = run("compare", compare)["ok"]
        time.sleep(0.2)
        (tmp_path / "signals" / after).write_text(after + "\n")

    thread = threading.Thread(target=judge)
    thread.start()
    result = run("profile", spec)
    thread.join()
    assert seen == {"outputs_before_then": False, "checked": True, "compared": True,
                    "outputs": ["output_0.pt", "output_1.pt", "output_2.pt", "output_3.pt", "weights.json"],
                    "weights": {"weights": "by_name"}}
    assert result["verification"]["checks_run"] == 3 and result["verification"]["repeated_check"]
    if after == "stop":
        assert result["error_kind"] == "not_started" and "after its checks" in result["reason"], result
        assert timed_after_time == []
        return
    assert result["ok"], result
    assert timed_after_time == [True]
    assert result["time_wait_seconds"] >= 0.2
    assert [s["call"] for s in result["spot_checks"]] == [1]
    assert os.path.exists(os.path.join(out, "timed_output_1.pt"))


def test_a_profile_job_whose_checks_fail_ends_there_and_a_wrong_one_is_compared_wrong(tmp_path):
    from helpers import TORCH_OPS_CANDIDATE, compare_spec, profile_spec

    # A guard refuses the candidate in its checks: the job ends with that error, before any mark.
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, TORCH_OPS_CANDIDATE)
    spec = profile_spec(tmp_path, ref, "candidate", candidate, iters=3)
    spec.update(output_dir=str(tmp_path / "out"), check_seeds=list(ref["check_seeds"]))
    result = run("profile", spec)
    assert not result["ok"] and result["error_kind"] == "forbidden_op", result
    assert result["verification"]["checks_run"] == 0
    # A wrong one runs its checks (and is timed: no "wait_for", no third go); their outputs fail the
    # comparison.
    (tmp_path / "wrong").mkdir()
    spec, fields, ref, out = checking(tmp_path / "wrong", wrong=True)
    spec.pop("wait_for")
    spec.update(fields)
    result = run("profile", spec)
    assert result["ok"], result
    assert not run("compare", compare_spec(tmp_path / "wrong", ref, {"output_dir": out}))["ok"]
