"""bench/kernelbench/agreement.py's own logic on the CPU: the disagreement classes and their causes, the
report (agreement where neither side flags a problem, the median speedup ratio and its spread, every
disagreement listed) from fixture JSONL, the real-world whole-judge report, the loader of KernelBench's
evaluation modules (here a stand-in package of our own with the same imports: LLM clients it must not
need), the carried ninja, the device lease KernelBench's evaluations share with our judge, the sample's
choice, the kb-bench run folder (stage-bench), and the whole `run` / `realworld` pipeline as a dry run
with the FAKE evaluators (a deadline that cuts it, a resume, a resume that re-judges only chosen
solutions). The GPU runs themselves are the lead's (bench/gpu_session.sh kb-agreement,
kb-realworld)."""

import argparse
import fcntl
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "kernelbench" / "agreement.py"
sys.path.insert(0, str(REPO / "bench" / "kernelbench"))
import agreement  # noqa: E402

HONEST = {"class": "honest"}
HYBRID = {"class": "hybrid"}


def ours(correct, kind=None, speedup=None, rule=None, outcome="verdict"):
    return {"outcome": outcome, "correct": correct, "error_kind": kind, "speedup": speedup, "rule": rule,
            "reason": f"{kind} reason" if kind else ""}


def theirs(correct, runtime=1.0, ref=1.0, flagged=False, compiled=True):
    return {"compiled": compiled, "correct": correct, "runtime_ms": runtime, "ref_runtime_ms": ref,
            "excessive_speedup": flagged}


def test_classes():
    c = agreement.classify
    assert c(HONEST, ours(True, speedup=2.0), theirs(True, 1.0, 2.05)) == "agree_correct"
    assert c(HONEST, ours(True, speedup=2.0), theirs(True, 1.0, 1.5)) == "timing_difference"
    assert c(HONEST, ours(False, "build"), theirs(False)) == "agree_fail"
    assert c(HYBRID, ours(False, "static_rule"), theirs(True)) == "we_refuse_hybrid"
    assert c(HONEST, ours(False, "static_rule"), theirs(True)) == "we_refuse_honest"
    assert c(HONEST, ours(False, "single_file"), theirs(True)) == "we_refuse_honest"
    assert c(HONEST, ours(False, "timed_mismatch"), theirs(True)) == "we_catch"
    assert c(HONEST, ours(False, "kernel_audit"), theirs(True)) == "we_catch"
    assert c(HONEST, ours(False, "mismatch"), theirs(True)) == "we_fail"
    assert c(HONEST, ours(True, speedup=1.0), theirs(False)) == "they_fail"
    assert c(HONEST, {"error": "not run: deadline"}, theirs(True)) == "not_compared"
    assert c(HONEST, ours(False, "internal", outcome="internal_error"), theirs(True)) == "not_compared"
    assert c(HONEST, ours(True), {"error": "crashed"}) == "not_compared"


def fixture_results(tmp_path: Path) -> Path:
    """A results folder as `run` leaves it: sample.jsonl, ours.jsonl, theirs.jsonl, env.json."""
    cases = [  # id, class, ours, theirs
        ("a", "honest", ours(True, speedup=2.0), theirs(True, 1.0, 2.0)),            # ratio 1.0
        ("b", "honest", ours(True, speedup=1.1), theirs(True, 1.0, 1.0)),            # ratio 1.1
        ("c", "honest", ours(False, "mismatch"), theirs(True)),                     # we_fail
        ("d", "honest", ours(False, "static_rule", rule="torch_compute"), theirs(True)),  # ours flags it
        ("e", "honest", ours(True, speedup=30.0), theirs(True, 1.0, 40.0, flagged=True)),  # theirs flags it
        ("f", "hybrid", {"error": "not run: deadline"}, theirs(True)),              # not run: not listed
        ("g", "hybrid", ours(False, "static_rule", rule="try_except"), theirs(True)),  # KB forbids it too
        ("h", "hybrid", ours(True, speedup=3.0), theirs(True, 1.0, 2.0)),            # ratio 1.5: timing
        ("i", "hybrid", ours(False, "build"), theirs(False, compiled=False)),       # agree_fail
        ("j", "hybrid", ours(False, "internal", outcome="internal_error"), theirs(True)),  # infrastructure
    ]
    res = tmp_path / "results"
    res.mkdir()
    (res / "sample.jsonl").write_text("".join(json.dumps({"id": i, "task_name": "level1/19_ReLU", "class": c}) + "\n"
                                              for i, c, _, _ in cases))
    (res / "ours.jsonl").write_text("".join(json.dumps({"id": i, **o}) + "\n" for i, _, o, _ in cases)
                                    + '{"id": "a", "outcome": "verd')  # a line cut by a kill: ignored
    (res / "theirs.jsonl").write_text("".join(json.dumps({"id": i, **t}) + "\n" for i, _, _, t in cases))
    (res / "env.json").write_text(json.dumps({"gpu": "NVIDIA H200", "date": "2026-11-29", "policy": "kernelbench",
                                              "kernelbench_commit": "423217d9", "jobs": 3, "dry_run": False,
                                              "correct_trials": 5, "perf_trials": 20}))
    return res


def test_report_from_fixture_jsonl(tmp_path):
    res = fixture_results(tmp_path)
    s = agreement.write_report(tmp_path / "nowhere", res)
    # compared: all but f (not run) and j (internal error); flagged: d (rule), g (rule), e (theirs' flag)
    assert s["solutions"] == 10 and s["compared"] == 8 and s["neither_flags"] == 5
    # a, b, h agree (correct), i agrees (fail), c disagrees
    assert s["correctness_agreement"] == pytest.approx(4 / 5)
    assert s["both_built"] == 4 and s["correctness_agreement_both_built"] == pytest.approx(3 / 4)
    assert s["median_speedup_ratio_ours_over_theirs"] == pytest.approx(1.1)
    assert (s["ratio_min"], s["ratio_max"]) == (pytest.approx(1.0), pytest.approx(1.5))
    assert s["ratios_within_10pct"] == 2 and s["fake"] is False
    table = (res / "table.md").read_text()
    assert "DRY RUN" not in table
    assert "**80.0%** (4/5; target ≥ 95%)" in table and "**1.100** over 3" in table
    assert "| e | honest | level1/19_ReLU | correct | 30.00 | correct (excessive speedup flagged) | 40.00 | timing_difference |" in table
    dis = table.split("#### Every disagreement")[1]
    listed = {line.split(" | ")[0].strip("| ") for line in dis.splitlines() if line.startswith("| ") and "---" not in line}
    assert listed - {"solution"} == {"c", "d", "e", "g", "h", "j"}  # f (not run) is counted, not listed
    assert "1 solution(s) not run by a side" in dis
    assert "KernelBench's rules forbid it too (try_except)" in dis
    assert "false positive of ours?" in dis.split("| d |")[1].splitlines()[0]
    assert "task/infrastructure error (ours: internal" in dis
    assert "timing difference" in dis.split("| h |")[1].splitlines()[0]
    rows = [json.loads(x) for x in (res / "agreement.jsonl").read_text().splitlines()]
    assert [r["class"] for r in rows if r["id"] in "cdh"] == ["we_fail", "we_refuse_honest", "timing_difference"]


def test_report_can_fail(tmp_path):
    """The report counts what the JSONL says: flip one verdict and the agreement drops."""
    res = fixture_results(tmp_path)
    rows = [json.loads(x) for x in (res / "theirs.jsonl").read_text().splitlines()]
    rows[0]["correct"] = False  # KernelBench now fails a, which ours passes
    (res / "theirs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = agreement.write_report(tmp_path / "nowhere", res)
    assert s["correctness_agreement"] == pytest.approx(3 / 5)
    assert s["classes"]["they_fail"] == 1


def test_realworld_report(tmp_path):
    res = tmp_path / "rw"
    res.mkdir()
    got = {"a": ours(True, speedup=1.5), "b": ours(False, "static_rule", rule="torch_compute"),
           "c": ours(False, "build"), "d": ours(False, "sampled_mismatch"),
           "e": ours(False, "internal", outcome="internal_error"), "f": ours(False, "single_file")}
    ids = list(got) + ["g"]  # g: never judged (deadline)
    (res / "realworld.jsonl.sample").write_text("".join(json.dumps({"id": i, "task_name": "level1/19_ReLU",
                                                                    "class": "honest"}) + "\n" for i in ids))
    (res / "realworld.jsonl").write_text("".join(json.dumps({"id": i, **o}) + "\n" for i, o in got.items()))
    s = agreement.write_realworld_report(tmp_path / "nowhere", res)
    assert (s["solutions"], s["verdicts"], s["accepted"], s["static_pass"]) == (7, 5, 1, 3)
    cats = s["refusal_categories"]
    assert cats["static rule (false positive? review)"] == 1
    assert cats["build: the solution does not compile here"] == 1
    assert cats["wrong on some inputs (sampled / timed-call checks: flaky or racy)"] == 1
    assert cats["converter: load_inline could not build it either"] == 1
    assert sum(v for k, v in cats.items() if k.startswith("infrastructure")) == 2
    md = (res / "realworld.md").read_text()
    assert "| **accepted by the whole judge** (correct, timed) | **1** |" in md
    assert "[torch_compute] static_rule reason" in md


def test_staging_takes_the_manifests_reviewed_classes(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"entries": [{"id": "a", "class": "hybrid"}, {"id": "b", "class": "honest"}]}))
    rows = [{"id": "a", "class": "honest"}, {"id": "b", "class": "honest"}, {"id": "c", "class": "broken"}]
    got = agreement.with_reviewed_classes(rows, manifest)
    assert [r["class"] for r in got] == ["hybrid", "honest", "broken"]  # c: not in the manifest, as built
    assert rows[0]["class"] == "honest"  # the index rows are not changed in place


def test_pick_spreads_over_tasks_and_avoids():
    pool = [{"id": f"{t}{k}", "task_name": t} for t in "xyz" for k in range(3)]
    assert [r["id"] for r in agreement.pick(pool, 4)] == ["x0", "y0", "z0", "x1"]
    assert [r["id"] for r in agreement.pick(pool, 3, avoid={"x0", "y0"})] == ["x1", "y1", "z0"]
    assert len(agreement.pick(pool, 50)) == 9


def test_device_lease_is_our_judges_exclusive_lease(tmp_path, monkeypatch):
    """KernelBench's evaluation holds the same flock files our judge's leases use (src/gpu/lease.cc):
    while it does, neither a shared nor an exclusive lease of ours can be granted."""
    monkeypatch.setenv("KB_LEASE_DIR", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    fd, waited = agreement.device_lease()
    assert waited >= 0
    lock = tmp_path / "cuda-0.lock"
    other = os.open(lock, os.O_RDONLY)  # another open file description, as another process has
    with pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
    os.close(fd)
    fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released with its descriptor
    os.close(other)
    assert (tmp_path / "cuda-0.gate").exists()


def fake_kernelbench_package(kb: Path):
    kb.mkdir(parents=True)
    (kb / "utils.py").write_text("from dotenv import load_dotenv\nfrom openai import OpenAI\n"
                                 "from litellm import completion\nfrom tqdm import tqdm\n")
    (kb / "timing.py").write_text("import json\n")
    (kb / "dataset.py").write_text("import re\n")
    (kb / "eval.py").write_text(
        "from pydantic import BaseModel\nfrom . import timing, dataset\n"
        "class KernelExecResult(BaseModel):\n    compiled: bool = False\n    metadata: dict = {}\n"
        "def build_compile_cache(custom_model_src, verbose=False, build_dir=None): pass\n"
        "def eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42, num_correct_trials=1,"
        " num_perf_trials=10, measure_performance=False, timing_method='cuda_event', verbose=False,"
        " build_dir=None, device=None, backend='cuda', precision=None):\n"
        "    return KernelExecResult(compiled=True)\n")
    (kb / "SOURCE.json").write_text(json.dumps({"commit": "0123456789abcdef"}))


def test_kernelbench_modules_load_without_their_llm_clients(tmp_path):
    """A package shaped like KernelBench's (eval.py imports `from . import timing, dataset`, utils.py
    imports the LLM clients) loads in a fresh interpreter where those clients do not exist."""
    kb = tmp_path / "kernelbench"
    fake_kernelbench_package(kb)
    code = ("import importlib.abc\nclass Block(importlib.abc.MetaPathFinder):\n"
            "    def __init__(self, name): self.name = name\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == self.name: raise ImportError(name)\n"
            "import sys; sys.path.insert(0, %r); import agreement\n"
            "for m in ('dotenv', 'openai', 'litellm', 'tqdm'): sys.modules.pop(m, None); sys.meta_path.insert(0, Block(m))\n"
            "ev = agreement.load_kernelbench(__import__('pathlib').Path(%r))\n"
            "r = ev.eval_kernel_against_ref('a', 'b')\n"
            "print(r.compiled, r.metadata, ev.KernelExecResult().metadata is not r.metadata)\n"
            % (str(REPO / "bench" / "kernelbench"), str(kb)))
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True {} True"
    # Another version of the function (a parameter missing) is refused with what to do.
    (kb / "eval.py").write_text((kb / "eval.py").read_text().replace(" num_perf_trials=10,", ""))
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "eval_kernel_against_ref lacks ['num_perf_trials']" in out.stderr


def ninja_wheel(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "ninja-1.13.2-py3-none-manylinux2014_x86_64.whl", "w") as z:
        z.writestr("ninja-1.13.2.data/scripts/ninja", "#!/bin/sh\necho 1.13.2\n")


def test_carried_ninja_goes_on_path_only_when_missing(tmp_path, monkeypatch):
    prepared, out = tmp_path / "prepared", tmp_path / "out"
    ninja_wheel(prepared / "wheels")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = agreement.ensure_ninja(prepared, out)
    assert found == str(out / "ninja-bin" / "ninja")
    assert os.environ["PATH"].split(os.pathsep)[0] == str(out / "ninja-bin")
    assert subprocess.run(["ninja"], check=False, capture_output=True, text=True).stdout.strip() == "1.13.2"
    assert agreement.ensure_ninja(prepared, tmp_path / "again") == found  # now on PATH: kept


def prepared_fixture(tmp_path: Path, n: int) -> Path:
    """A staging folder shaped like `stage`'s, with our own stand-ins (no third-party code)."""
    prep = tmp_path / "prep"
    fake_kernelbench_package(prep / "kernelbench")
    ninja_wheel(prep / "wheels")
    (prep / "solutions").mkdir()
    (prep / "tasks" / "level1").mkdir(parents=True)
    (prep / "tasks" / "level1" / "19_ReLU.py").write_text("# a task\n")
    rows = []
    for k in range(n):
        cls = "honest" if k % 2 == 0 else "hybrid"
        sid = f"s{k:02d}-{cls}"
        (prep / "solutions" / f"{sid}.py").write_text(f"# solution {k}\n")
        rows.append({"id": sid, "task_name": "level1/19_ReLU", "class": cls})
    (prep / "sample.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (prep / "realworld.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["class"] == "honest"))
    return prep


def dry(cmd: str, prep: Path, out: Path, work: Path, *extra: str, seconds="0", timeout=120):
    env = dict(os.environ, KB_FAKE_SECONDS=seconds, KB_LEASE_DIR=str(work / "leases"))
    argv = [sys.executable, str(SCRIPT), cmd, "--prepared", str(prep), "--out", str(out), "--work", str(work),
            "--dry-run", "--fake-ours", *extra]
    p = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return p


def test_dry_run_end_to_end_with_the_fakes(tmp_path):
    prep = prepared_fixture(tmp_path, 8)
    out, work = tmp_path / "out", tmp_path / "work"
    p = dry("run", prep, out, work, "--jobs", "2", "--compile-jobs", "3")
    assert "done:" in p.stdout
    o = [json.loads(x) for x in (out / "ours.jsonl").read_text().splitlines()]
    t = [json.loads(x) for x in (out / "theirs.jsonl").read_text().splitlines()]
    assert len(o) == 8 and len(t) == 8
    assert all(r["judge"] == agreement.FAKE_OURS for r in o)
    assert all(r["evaluator"] == agreement.FAKE_KB for r in t)  # every row names the fake
    assert {r["precompile"].get("fake") for r in t} == {True}
    assert all(r["build_deleted"] for r in t)  # each build folder went as soon as its evaluation ended
    assert not (work / "kb-builds").exists() or not any((work / "kb-builds").iterdir())  # builds deleted
    table = (out / "table.md").read_text()
    assert table.startswith("**DRY RUN: KernelBench's side is a FAKE")
    assert json.loads((out / "summary.json").read_text())["compared"] == 8
    # The report alone, from the results folder alone, gives the same table.
    q = subprocess.run([sys.executable, str(SCRIPT), "report", "--prepared", str(tmp_path / "none"),
                        "--results", str(out)], check=False, capture_output=True, text=True, timeout=60)
    assert q.returncode == 0 and (out / "table.md").read_text() == table


def test_dry_run_cut_by_its_deadline_keeps_a_table_and_resumes(tmp_path):
    prep = prepared_fixture(tmp_path, 12)
    out, work = tmp_path / "out", tmp_path / "work"
    # Each fake judgement/build takes 2 s, 1 at a time, nothing starts after 15 s (from the process's
    # start: torch's import counts, as on the GPU): 12 cannot all be judged.
    dry("run", prep, out, work, "--jobs", "1", "--compile-jobs", "1", "--deadline-s", "15", "--grace-s", "5",
        seconds="2")
    o = {r["id"]: r for r in (json.loads(x) for x in (out / "ours.jsonl").read_text().splitlines())}
    assert len(o) == 12
    done = [i for i, r in o.items() if r.get("outcome") == "verdict"]
    assert 1 <= len(done) <= 8
    assert sum(1 for r in o.values() if r.get("error") == "not run: deadline") == 12 - len(done)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["classes"]["not_compared"] >= 12 - len(done)
    # The sample was interleaved: the first judged are honest, hybrid, honest, ...
    assert [o_id.split("-")[1] for o_id in done[:2]] == ["honest", "hybrid"][: len(done[:2])]
    out2 = tmp_path / "out2"
    dry("run", prep, out2, work, "--jobs", "4", "--compile-jobs", "4", "--resume", str(out))
    o2 = {r["id"]: r for r in (json.loads(x) for x in (out2 / "ours.jsonl").read_text().splitlines())}
    assert all(o2[i].get("resumed_from") == str(out) for i in done)
    assert all(r.get("outcome") == "verdict" for r in o2.values()) and len(o2) == 12


def test_realworld_dry_run(tmp_path):
    prep = prepared_fixture(tmp_path, 6)
    out, work = tmp_path / "rw", tmp_path / "work"
    dry("realworld", prep, out, work)
    rows = [json.loads(x) for x in (out / "realworld.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["judge"] == agreement.FAKE_OURS for r in rows)
    md = (out / "realworld.md").read_text()
    assert md.startswith("**DRY RUN") and "| honest solutions in the sample | 3 |" in md


def test_rejudge_judges_only_the_chosen_and_keeps_the_rest(tmp_path):
    prep = prepared_fixture(tmp_path, 10)
    first, work = tmp_path / "first", tmp_path / "work"
    dry("run", prep, first, work, "--jobs", "3", "--compile-jobs", "3")
    # The earlier call's verdicts made known: s01 refused for its weights where KernelBench passes it
    # (disagreed and kind:state_dict), s02 wrong where KernelBench passes it (disagreed).
    o1 = {r["id"]: r for r in (json.loads(x) for x in (first / "ours.jsonl").read_text().splitlines())}
    t1 = {r["id"]: r for r in (json.loads(x) for x in (first / "theirs.jsonl").read_text().splitlines())}
    for i, kind in (("s01-hybrid", "state_dict"), ("s02-honest", "mismatch"), ("s04-honest", "state_dict")):
        o1[i].update(correct=False, error_kind=kind)
        t1[i].update(correct=True, compiled=True, excessive_speedup=False)
    t1["s04-honest"].update(correct=False)  # both fail: agree_fail, chosen by kind only
    for i in set(o1) - {"s01-hybrid", "s02-honest", "s04-honest"}:
        o1[i].update(correct=True, error_kind=None, speedup=1.0)
        t1[i].update(correct=True, compiled=True, runtime_ms=1.0, ref_runtime_ms=1.0, excessive_speedup=False)
    (first / "ours.jsonl").write_text("".join(json.dumps(r) + "\n" for r in o1.values()))
    (first / "theirs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in t1.values()))
    sample = {s["id"]: s for s in agreement.jsonl(prep / "sample.jsonl")}
    disagreed = {i for i in o1 if agreement.classify(sample[i], o1[i], t1[i]) in agreement.DISAGREEING}
    assert disagreed == {"s01-hybrid", "s02-honest"}
    kind = "state_dict"
    wanted = {"s01-hybrid", "s02-honest", "s04-honest", "s00-honest"}
    again = tmp_path / "again"
    dry("run", prep, again, work, "--resume", str(first), "--rejudge", f"disagreed,kind:{kind},s00-honest")
    o2 = {r["id"]: r for r in (json.loads(x) for x in (again / "ours.jsonl").read_text().splitlines())}
    t2 = [json.loads(x) for x in (again / "theirs.jsonl").read_text().splitlines()]
    assert {i for i, r in o2.items() if "resumed_from" not in r} == wanted  # judged again: those only
    assert all(o2[i]["resumed_from"] == str(first) for i in set(o1) - wanted) and len(o2) == 10
    assert len(t2) == 10 and all(r["resumed_from"] == str(first) for r in t2)  # KernelBench's all kept
    env = json.loads((again / "env.json").read_text())
    assert set(env["rejudge"]["ids"]) == wanted
    assert "ours judged again for" in (again / "table.md").read_text()
    # An id the sample lacks, or a rejudge without a resume, stops the run saying what is allowed.
    for extra in (["--resume", str(first), "--rejudge", "nope"], ["--rejudge", "disagreed"]):
        argv = [sys.executable, str(SCRIPT), "run", "--prepared", str(prep), "--out", str(tmp_path / "x"),
                "--work", str(work), "--dry-run", "--fake-ours", *extra]
        p = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, KB_LEASE_DIR=str(work / "leases")))
        assert p.returncode != 0 and "--rejudge" in p.stderr, p.stderr


def test_stage_bench_writes_a_kernelbench_run_folder(tmp_path):
    prep = prepared_fixture(tmp_path, 4)
    (prep / "tasks" / "level2").mkdir()
    (prep / "tasks" / "level2" / "7_Conv_Add.py").write_text("# a task\n")
    (prep / "tasks" / "level2" / "9_Big.py").write_text("# a task\n")
    rows = agreement.jsonl(prep / "sample.jsonl")
    for r in rows:
        r["task_mib"] = 10.0
    rows += [{"id": "l2-a-hybrid", "task_name": "level2/7_Conv_Add", "class": "hybrid", "task_mib": 5.0},
             {"id": "l2-b-honest", "task_name": "level2/7_Conv_Add", "class": "honest", "task_mib": 5.0},
             {"id": "l2-big", "task_name": "level2/9_Big", "class": "honest", "task_mib": 900.0}]
    for r in rows[-3:]:
        (prep / "solutions" / f"{r['id']}.py").write_text(f"# {r['id']}\n")
    (prep / "sample.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    info = agreement.stage_bench(prep, 5, 300)
    run = sorted(p.name for p in (prep / "bench" / "run").iterdir())
    # One solution per problem, the lightest first, honest before hybrid; the task over the size left out.
    assert run == ["level_1_problem_19_sample_0_kernel.py", "level_2_problem_7_sample_0_kernel.py"]
    assert [f["id"] for f in info["files"]] == ["l2-b-honest", "s00-honest"]
    assert (prep / "bench" / "run" / run[1]).read_text() == "# l2-b-honest\n"
    assert sorted(str(p.relative_to(prep / "bench" / "suite")) for p in (prep / "bench" / "suite").rglob("*.py")) \
        == ["level1/19_ReLU.py", "level2/7_Conv_Add.py"]
    assert json.loads((prep / "bench" / "BENCH.json").read_text())["files"][0]["task_name"] == "level2/7_Conv_Add"


def test_gpu_session_modes_exist():
    text = (REPO / "bench" / "gpu_session.sh").read_text()
    assert "kb-agreement|kb-realworld)" in text and "--prepared .gpu/kb" in text
    assert "  kb-bench)" in text and "--solver kernelbench:.gpu/kb/bench/run --policy kernelbench" in text
    assert '--rejudge "$KB_REJUDGE"' in text
    args = argparse.Namespace  # noqa: F841 - the parser is exercised by the dry runs above
