"""`cuda-agent judge` flags that select checks: bad values are usage errors (exit 2) that name the
choices, before anything runs; the chosen precision policy is recorded in the result."""

import json
import os
import sqlite3
import subprocess

import pytest

from test_judge_cases import REPO, binary  # noqa: F401 - the fixture

TASK = "examples/relu_scale/model.py"
CANDIDATE = "examples/relu_scale/candidates/cpu_correct"


def judge_argv(binary, *args):
    return [str(binary), "judge", "--task", TASK, "--candidate", CANDIDATE, "--device", "cpu", *args]


def judge(binary, *args, timeout=600):
    return subprocess.run(judge_argv(binary, *args), cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, named", [
    (["--policy", "loose"], "paper, strict, tf32-fair"),
    (["--sanitize", "valgrind"], "memcheck, racecheck, initcheck or synccheck"),
])
def test_bad_choices_are_usage_errors(binary, args, named):
    proc = judge(binary, *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("value", ["-1", "many", "10001"])
def test_a_bad_sampled_check_count_is_a_usage_error(binary, value):
    proc = judge(binary, "--sampled-checks", value, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "--sampled-checks" in proc.stderr


@pytest.mark.parametrize("until", ["build", "verify"])
def test_the_python_rules_hold_whatever_stage_the_judgement_stops_at(binary, until):
    """issue 46: `--until build` (and `cuda-agent build`, the agent's compile.sh) used to skip
    model_new.py's rules; a static check is the same check whatever stage comes next."""
    proc = subprocess.run([str(binary), "judge", "--task", TASK, "--candidate", "tests/hacks/c1_torch_relu_py",
                           "--device", "cpu", "--json", "--until", until], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    result = json.loads(proc.stdout)
    assert (result["stage"], result["error_kind"], result["reward"]) == ("static", "static_rule", -1)
    assert [v["rule"] for v in result["violations"]] == ["torch_compute"], result["violations"]


def test_a_build_without_model_new_still_builds(binary, tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for f in (REPO / CANDIDATE / "kernels").iterdir():
        (kernels / f.name).write_text(f.read_text())
    proc = subprocess.run([str(binary), "build", "--candidate", str(tmp_path), "--device", "cpu", "--out",
                           str(tmp_path / "ext.so")], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "ext.so").is_file()


@pytest.mark.parametrize("policy, mode", [("paper", "fixed"), ("tf32-fair", "scaled")])
def test_the_chosen_policy_is_recorded(binary, policy, mode):
    proc = judge(binary, "--policy", policy, "--until", "verify", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["correct"] is True, result["reason"]
    assert result["policy"]["name"] == policy
    assert result["policy"]["tolerance"]["mode"] == mode
    assert result["policy"]["fast_math"] is (policy == "paper")


def assert_no_timing_overlaps_the_other(together):
    """Two judgements' leases on one time line: no exclusive lease overlaps any lease of the other."""
    held = [[(r["started_unix_s"] + lease["granted_s"], r["started_unix_s"] + lease["released_s"], lease["mode"])
             for lease in r["leases"]] for r in together]
    for mine, theirs in (held, held[::-1]):
        for start, end, mode in mine:
            if mode != "exclusive":
                continue
            overlapping = [t for t in theirs if t[0] < end and start < t[1]]
            assert not overlapping, (start, end, overlapping)


def test_gathered_timings_never_overlap_and_a_bad_gather_setting_is_named(binary):
    """--lease-gather (src/gpu/lease.h; its mirror CUDA_AGENT_LEASE_GATHER; 4,1 by default, here
    batches of 2): two judgements at once still judge, and neither's timing shares the device with any lease of the other; a malformed
    value is a usage error naming the flag."""
    import os

    args = ("--baselines", "eager", "--iters", "3", "--json", "--baseline-store", "none")
    env = dict(os.environ, CUDA_AGENT_LEASE_GATHER="2,1")
    procs = [subprocess.Popen(judge_argv(binary, *args), cwd=REPO, stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    together = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    for r in together:
        assert r["reward"] in (1, 2, 3), r["reason"]
        assert [lease["mode"] for lease in r["leases"] if lease["for"] == "profile_candidate"] == ["exclusive"]
    assert_no_timing_overlaps_the_other(together)
    bad = subprocess.run(judge_argv(binary, *args), cwd=REPO, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, CUDA_AGENT_LEASE_GATHER="2"))
    assert bad.returncode == 2 and '--lease-gather "2"' in bad.stderr, bad.stderr


def test_baselines_come_from_the_store_the_second_time(binary, tmp_path):
    store = tmp_path / "store.sqlite"
    # CPU timings are noisy: a drift bound of 100x keeps this test about reuse.
    common = ("--baselines", "eager,compile", "--warmup", "1", "--iters", "3", "--json",
              "--baseline-drift", "100", "--baseline-store", str(store))
    # Two judgements at once on an empty store: each baseline is measured by one of them; the other
    # waits for the device lease and then takes what was stored (not a second measurement).
    procs = [subprocess.Popen(judge_argv(binary, *common), cwd=REPO, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    together = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    measured = {}
    for target in ("eager", "compile"):
        states = sorted(r["timing"]["baseline_store"][target] for r in together)
        assert states == ["measured (none stored)", "stored"], states
        by = next(r for r in together if r["timing"]["baseline_store"][target].startswith("measured"))
        assert set(by["timing"][target]["calibration"]) == {"copy_us", "gemm_us"}
        measured[target] = by["timing"][target]["time_us"]
    for r in together:
        assert r["reward"] in (1, 2, 3), r["reason"]
        assert {t: r["timing"][t]["time_us"] for t in measured} == measured
    assert_no_timing_overlaps_the_other(together)
    second = json.loads(judge(binary, *common).stdout)
    assert second["reward"] in (1, 2, 3), second["reason"]
    for target in ("eager", "compile"):
        assert second["timing"]["baseline_store"][target] == "stored"
        assert second["timing"][target]["time_us"] == measured[target]
        assert second["timing"][target]["stored_at"]
    # The rest is the store's logic, the same for both targets: eager only (a CPU torch.compile
    # baseline costs ~15 s each time it is measured).
    eager = ("--baselines", "eager", *common[2:])
    # The judgements so far left their calibrations in the store (three: enough for a level), and
    # the measured baselines carry the level they were measured at.
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM calibrations").fetchone()[0] == 3
        rows = db.execute("SELECT rowid, summary FROM baselines WHERE target = 'eager'").fetchall()
        assert rows
        # A different device: stored as if measured where the calibration ran a million times faster
        # (CPU samples swing up to 30x from one judgement to the next, more beside another test
        # process; the rule reads their noise, and no noise reaches a million).
        for rowid, text in rows:
            summary = json.loads(text)
            assert summary["calibration_reference"]["samples"] >= 1
            for field in ("calibration", "calibration_reference"):
                for key in ("copy_us", "gemm_us"):
                    summary[field][key] /= 1_000_000
            db.execute("UPDATE baselines SET summary = ? WHERE rowid = ?", (json.dumps(summary), rowid))
    moved = json.loads(judge(binary, *eager[:-4], "--baseline-drift", "0.1",
                             "--baseline-store", str(store)).stdout)
    assert moved["timing"]["baseline_store"]["eager"].startswith("measured (the device's"), moved["timing"]
    assert "baselines re-measured" in moved["reason"] and "calibration moved" in moved["reason"]
    assert "median of its last 4 judgements" in moved["reason"], moved["reason"]
    # So do baselines older than --baseline-max-age.
    old = json.loads(judge(binary, *eager, "--baseline-max-age", "0.0000001").stdout)
    assert "h ago" in old["timing"]["baseline_store"]["eager"], old["timing"]["baseline_store"]
    # Other timing settings are another key: measured again.
    third = json.loads(judge(binary, *eager[:-2], "--iters", "4", "--baseline-store", str(store)).stdout)
    assert third["timing"]["baseline_store"]["eager"] == "measured (none stored)"
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


def test_the_jobs_are_recorded_early_jobs_start_early_and_the_reference_serves_the_comparisons(binary):
    """The candidate's profile job also runs its checks: under the verification's shared lease,
    before its timing's go under the exclusive one (one candidate process per judgement)."""
    proc = subprocess.run(judge_argv(binary, "--baselines", "eager", "--iters", "3", "--json",
                                     "--baseline-store", "none"),
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    result = json.loads(proc.stdout)
    assert result["reward"] in (1, 2, 3), result["reason"]
    jobs = {j["name"]: j for j in result["jobs"]}
    checker = "profile_candidate"
    assert {"static", "reference", checker, "compare", "profile_candidate", "compare_spots",
            "eager"} <= set(jobs), sorted(jobs)
    assert "candidate" not in jobs, sorted(jobs)
    reference = jobs["reference"]
    for name in {checker, "profile_candidate"}:
        early = jobs[name]
        assert early["start_s"] < reference["end_s"], f"{name} started with the reference, not after it"
        assert early["go_wait_seconds"] >= 0 and "error_kind" not in early
    # the comparisons are answers of the one reference process (no compare job of their own), each
    # asked once the candidate's outputs exist, with the expected side from the reference's memory
    assert [j["name"] for j in result["jobs"] if j["job"] in ("reference", "compare")] == [
        "reference", "compare", "compare_spots"]
    for name in ("reference", "compare", "compare_spots"):
        assert jobs[name]["job"] == "reference" and jobs[name]["served"] is True
    # the reference is an early job as well: started at once, its work from its go (under the lease)
    assert reference["go_wait_seconds"] >= 0 and reference["start_s"] <= jobs[checker]["start_s"] + 1
    assert "save" not in reference["phase_seconds"] or reference["phase_seconds"]["save"] < 1
    for name in ("compare", "compare_spots"):
        assert set(jobs[name]["phase_seconds"]) == {"load", "compare"} and "error_kind" not in jobs[name]
    for name in ("reference", checker, "compare", "profile_candidate"):  # CPU seconds beside the wall's
        assert set(jobs[name]["phase_cpu_seconds"]) == set(jobs[name]["phase_seconds"]), name
    # How long each lease waited for its early job's set-up (the ready mark): recorded, never negative.
    stages = result["stage_seconds"]
    for key in ("reference_ready_wait", "verify_ready_wait", "profile_ready_wait"):
        assert 0 <= stages[key] <= stages["total"], (key, stages)
    assert [lease["for"] for lease in result["leases"]][:2] == ["reference", "verify"]
    # Its trusted preparation ran under the reference's lease, while the candidate compiled; its
    # checks came before the comparison, its timing after it.
    profile = jobs["profile_candidate"]
    assert 0 <= stages["profile_prepared_early_wait"] <= stages["reference"], stages
    assert {"weights", "then_wait", "model", "forward", "time_wait", "timed"} <= set(profile["phase_seconds"])
    assert "candidate_prepared_wait" not in stages
    assert jobs["compare_spots"]["start_s"] >= jobs["profile_candidate"]["end_s"]
    assert all(j["start_s"] <= j["end_s"] <= result["stage_seconds"]["total"] for j in result["jobs"])
    # the device leases, in the order the stages take them: shared for the reference, verification
    # and the spot checks' comparison, exclusive for the timings; their waits are stage_seconds'
    leases = result["leases"]
    assert [(lease["for"], lease["mode"]) for lease in leases] == [
        ("reference", "shared"), ("verify", "shared"), ("profile_candidate", "exclusive"),
        ("profile_baselines", "exclusive"), ("compare_spots", "shared")], leases
    for lease in leases:
        assert 0 <= lease["asked_s"] <= lease["granted_s"] <= lease["released_s"] <= result["stage_seconds"]["total"]
    assert jobs["profile_candidate"]["end_s"] <= leases[2]["released_s"]
    # the compare was answered under the verification's lease, the timing after it
    assert leases[1]["released_s"] >= jobs["compare"]["end_s"]
    assert jobs["profile_candidate"]["end_s"] >= leases[2]["granted_s"]
    waited = sum(lease["granted_s"] - lease["asked_s"] for lease in leases)
    assert result["stage_seconds"]["lease_wait"] == pytest.approx(waited, abs=0.01)
    assert result["started_unix_s"] > 1.7e9


def test_a_compile_error_calls_the_early_jobs_off(binary):
    proc = subprocess.run([str(binary), "judge", "--task", TASK, "--candidate",
                           "examples/relu_scale/candidates/cpu_compile_error", "--device", "cpu", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    result = json.loads(proc.stdout)
    assert result["reward"] == -1 and result["stage"] == "build", result["reason"]
    early = [j for j in result["jobs"] if j["name"] in ("candidate", "profile_candidate")]
    assert [j["name"] for j in early] == ["profile_candidate"], result["jobs"]  # it also checks
    # the served reference answered its first request and was asked nothing more
    assert [j["name"] for j in result["jobs"] if j["job"] == "reference"] == ["reference"]
    # called off before its (last) go: "not_started", or killed while still setting up (no result)
    assert all(j.get("error_kind", "not_started") == "not_started" for j in early), early
    # it may have done its trusted preparation under the reference's lease (when it was set up by
    # the reference's answer); it did not get its second go
    for job in early:
        assert "then_wait" not in job.get("phase_seconds", {}), job


@pytest.mark.skipif(not __import__("test_judge_cases").cuda_available(), reason="needs a CUDA GPU")
def test_cuda_machine_code_is_read_from_the_device_chains_fat_binary_during_the_build(binary, tmp_path):
    """stages/inspect.cc: each .cu file's fat binary is read while its host side compiles, and the
    library's kernels are joined from it (not read again from the library); then stored."""
    argv = [str(binary), "judge", "--task", "examples/linear_gelu/model.py", "--candidate",
            "examples/linear_gelu/candidates/cuda_correct", "--device", "cuda", "--until", "verify",
            "--json", "--cache-dir", str(tmp_path / "cache")]
    results = []
    for _ in range(2):
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        results.append(json.loads(proc.stdout))
        assert results[-1]["correct"] is True, results[-1]["reason"]
    first, second = (r["build"] for r in results)
    assert first["inspection"] == {"source": "sass", "note": "", "from": "fat binaries"}, first
    assert any("linear_gelu_kernel" in k["name"] for k in first["kernels"]), first["kernels"]
    assert second["inspection"]["from"] == "stored" and second["kernels"] == first["kernels"], second
