"""`cuda-agent bench` and `cuda-agent baselines` end to end, with the real binary on the CPU.

The suite is a folder of task files made from examples/ (shrunk to small inputs) and a solutions
folder that mirrors it: two correct candidates (the same sources, so a cold cache builds them once),
one that fails, and one task without a candidate.
One run is killed with SIGKILL after its first stored result and then resumed; its report must equal
an uninterrupted run's report in everything that does not depend on measured times (the
deterministic fake-judge test in src/eval/bench_test.cc compares whole reports). The HTML report is
rendered by a real headless browser (Debian's chromium) and the screenshot must show the charts.
"""

import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from test_judge_cases import REPO, binary  # noqa: E402,F401 - the fixture

# Small enough that a CPU judgement is quick; timings do not matter here.
COMMON = ["--device", "cpu", "--baselines", "eager", "--warmup", "1", "--iters", "3",
          "--baseline-drift", "100", "--baseline-max-age", "0"]


def shrink(source, sizes):
    text = source.read_text()
    for old, new in sizes.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """$CUDA_AGENT_TEST_CACHE_DIR, else scripts/test.sh's $CUDA_AGENT_CACHE_DIR, else a fresh folder."""
    configured = os.environ.get("CUDA_AGENT_TEST_CACHE_DIR") or os.environ.get("CUDA_AGENT_CACHE_DIR")
    if configured:
        Path(configured).mkdir(parents=True, exist_ok=True)
        return Path(configured)
    return tmp_path_factory.mktemp("bench-cache")


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    tasks, solutions = root / "suite", root / "solutions"
    tasks.mkdir()
    source = REPO / "examples/relu_scale/model.py"
    relu = shrink(source, {"batch_size = 2048": "batch_size = 128", "dim = 2048": "dim = 256"})
    (tasks / "relu_scale.py").write_text(relu)
    (tasks / "relu_scale_wide.py").write_text(shrink(source, {"batch_size = 2048": "batch_size = 16"}))
    (tasks / "relu_scale_broken.py").write_text(relu + "\n# the same task, judged with a broken candidate\n")
    (tasks / "linear_gelu.py").write_text((REPO / "examples/linear_gelu/model.py").read_text())
    for name, candidate in [("relu_scale", "cpu_correct"), ("relu_scale_wide", "cpu_correct"),
                            ("relu_scale_broken", "cpu_syntax_error")]:
        shutil.copytree(REPO / "examples/relu_scale/candidates" / candidate, solutions / name)
    return root


def bench_argv(binary, suite, cache_dir, store, out, *extra):
    return [str(binary), "bench", str(suite / "suite"), "--solver", f"solutions:{suite / 'solutions'}",
            "--store", str(store), "--out", str(out), "--cache-dir", str(cache_dir), *COMMON, *extra]


def stored_results(store):
    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store, timeout=10) as db:
            return db.execute("SELECT COUNT(*) FROM bench_results").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not made yet
        return 0


def timing_free(report):
    """The report without what depends on measured times or on when it was made."""
    r = json.loads(json.dumps(report))
    r.pop("generated_at")
    for group in r["metrics"]["levels"] + [r["metrics"]["overall"]]:
        for baseline in ("eager", "compile"):
            if group.get(baseline):
                group[baseline] = {"with_speedup": group[baseline]["with_speedup"]}
    for task in r["tasks"]:
        for key in ("candidate_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile",
                    "judge_seconds", "reward"):
            task.pop(key, None)
        if task["status"] == "correct":
            task.pop("reason")
            task.pop("summary")
        else:  # failure reasons quote numbers measured from random inputs
            task["reason"] = task["reason"][:40]
            task["summary"] = task["summary"][:40]
    return r


@pytest.fixture(scope="module")
def runs(binary, suite, cache_dir):
    """An uninterrupted run, and a run killed after its first result and then resumed."""
    whole = subprocess.run(bench_argv(binary, suite, cache_dir, suite / "whole.sqlite", suite / "whole",
                                      "--jobs", "2"),
                           cwd=REPO, capture_output=True, text=True, timeout=900)
    assert whole.returncode == 0, whole.stderr[-3000:]

    argv = bench_argv(binary, suite, cache_dir, suite / "killed.sqlite", suite / "killed")
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.time() + 600
    while stored_results(suite / "killed.sqlite") < 1 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed: " + proc.stderr.read()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = stored_results(suite / "killed.sqlite")
    resumed = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return {"whole": whole, "killed_at": killed_at, "resumed": resumed}


def test_a_killed_run_resumes_to_the_report_of_an_uninterrupted_one(runs, suite):
    assert 1 <= runs["killed_at"] < 4
    assert f"{runs['killed_at']} already finished (resumed from the store)" in runs["resumed"].stderr
    whole = json.loads((suite / "whole" / "report.json").read_text())
    resumed = json.loads((suite / "killed" / "report.json").read_text())
    assert resumed["complete"] and whole["complete"]
    assert resumed["run"]["run_id"] == whole["run"]["run_id"]
    assert timing_free(resumed) == timing_free(whole)


def test_the_solutions_run_reports_every_task(runs, suite):
    report = json.loads((suite / "whole" / "report.json").read_text())
    assert report["counts"] == {"tasks": 4, "correct": 2, "failed": 1, "missing": 1, "task_error": 0,
                                "internal_error": 0, "pending": 0}
    status = {t["task"]["name"]: t["status"] for t in report["tasks"]}
    assert status == {"linear_gelu": "missing", "relu_scale": "correct", "relu_scale_broken": "failed",
                      "relu_scale_wide": "correct"}
    overall = report["metrics"]["overall"]
    assert overall["pass_rate"] == 0.5
    assert report["metrics"]["levels"][0]["level"] == 0
    assert overall["compile"] is None  # only eager was measured
    correct = [t for t in report["tasks"] if t["status"] == "correct"]
    logs = 1.0
    for t in correct:
        assert t["speedup_vs_eager"] == pytest.approx(t["eager_us"] / t["candidate_us"])
        logs *= t["speedup_vs_eager"]
    assert overall["eager"]["geomean_all"] == pytest.approx(logs ** (1 / 4))
    assert overall["eager"]["geomean_correct"] == pytest.approx(logs ** (1 / 2))
    md = (suite / "whole" / "report.md").read_text()
    assert "| overall | 4 | 50.0% |" in md
    assert "[relu_scale](<../solutions/relu_scale/>)" in md
    assert "no candidate" in md
    html = (suite / "whole" / "report.html").read_text()
    assert html.count("<svg") == 3
    assert 'href="../solutions/relu_scale_wide/"' in html
    assert "overall: pass 50.0%" in runs["whole"].stdout


def test_report_only_rebuilds_the_same_report_from_the_store(binary, runs, suite, cache_dir):
    proc = subprocess.run(bench_argv(binary, suite, cache_dir, suite / "whole.sqlite", suite / "again",
                                     "--report-only"),
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first = json.loads((suite / "whole" / "report.json").read_text())
    again = json.loads((suite / "again" / "report.json").read_text())
    first.pop("generated_at")
    again.pop("generated_at")
    assert first == again


def read_png(path):
    """Width, height and the RGB rows of an 8-bit RGB or RGBA PNG (stdlib only)."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, []
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour_type in (2, 6), (depth, colour_type)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + size
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    prev, rows, at = bytearray(stride), [], 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for x in range(stride) if kind else ():
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for i, v in enumerate(line) if i % 4 != 3))
        prev = line
    return width, height, rows


def count_colours(rows, colours):
    wanted = {bytes.fromhex(c.lstrip("#")): c for c in colours}
    counts = dict.fromkeys(colours, 0)
    for row in rows:
        for x in range(0, len(row), 3):
            hit = wanted.get(row[x:x + 3])
            if hit:
                counts[hit] += 1
    return counts


def test_the_html_report_shows_its_charts_in_a_browser(runs, suite, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (scripts/setup.sh installs it)")
    shot = tmp_path / "report.png"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--screenshot={shot}", "--window-size=1000,1150",
                           (suite / "whole" / "report.html").as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, height, rows = read_png(shot)
    assert (width, height) == (1000, 1150)
    counts = count_colours(rows, ["#2e7d32", "#1565c0", "#ef6c00", "#6a1b9a", "#9e9e9e", "#00897b",
                                  "#c62828"])
    # Per-level bars: pass 50% is a bar about 110 px high; the faster-than-eager bar and the legend.
    assert counts["#2e7d32"] > 5000, counts
    assert counts["#1565c0"] > 150, counts
    assert counts["#ef6c00"] > 150, counts  # the legend at least (compile was not measured)
    # The speedup distribution: two correct tasks in purple, two failed ones in grey.
    assert counts["#6a1b9a"] > 3000, counts
    assert counts["#9e9e9e"] > 3000, counts
    # The fastest/slowest chart: at least one bar, above or below 1x.
    assert counts["#00897b"] + counts["#c62828"] > 300, counts
    # Sanity: most of the page is white, not one colour everywhere.
    white = sum(row.count(b"\xff\xff\xff") for row in rows)
    assert white > width * height // 2


def test_usage_errors(binary, suite, cache_dir):
    base = [str(binary), "bench", str(suite / "suite"), "--device", "cpu", "--cache-dir", str(cache_dir)]
    for extra, message in [([], "--solver is required"),
                           (["--solver", "model:x"], "--solver expects"),
                           (["--solver", f"solutions:{suite}", "--levels", "one"], "--levels expects"),
                           (["--solver", f"solutions:{suite}", "--levels", "1"], "no task"),
                           (["--solver", f"solutions:{suite / 'nope'}"], "solutions folder not found")]:
        proc = subprocess.run(base + extra, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (extra, proc.stderr)
        assert message in proc.stderr, (extra, proc.stderr)


def test_agent_solver_is_unavailable_until_solve_exists(binary, suite, cache_dir):
    probe = subprocess.run([str(binary), "solve"], capture_output=True, text=True, timeout=60)
    if "unknown command" not in probe.stderr:
        pytest.skip("this cuda-agent has a solve command: the agent solver is tested with it")
    proc = subprocess.run([str(binary), "bench", str(suite / "suite"), "--solver", "agent:replay:none",
                           "--device", "cpu", "--cache-dir", str(cache_dir), "--store",
                           str(suite / "agent.sqlite")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4, proc.stderr
    assert "agent solver unavailable" in proc.stderr


def test_baselines_resume_list_what_cannot_run_and_travel_as_jsonl(binary, suite, cache_dir, tmp_path):
    (suite / "broken").mkdir(exist_ok=True)
    shutil.copy(suite / "suite" / "relu_scale.py", suite / "broken" / "relu_scale.py")
    shutil.copy(REPO / "examples/malformed/raises_in_forward.py", suite / "broken" / "raises.py")
    store = tmp_path / "baselines.sqlite"
    argv = [str(binary), "baselines", str(suite / "broken"), "--baseline-store", str(store),
            "--cache-dir", str(cache_dir), *COMMON, "--json"]
    first = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    summary = lines[-1]["summary"]
    assert summary["measured"] == 1 and summary["pending"] == 0
    assert [c["task"] for c in summary["cannot_run"]] == ["raises"]
    assert summary["cannot_run"][0]["reason"].startswith("task error")
    assert lines[1]["eager_us"] > 0 and lines[1]["task"]["name"] == "relu_scale"

    second = subprocess.run(argv[:-1], capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "2 already finished (resumed from the store)" in second.stderr
    assert "tasks that cannot run:\n  raises: task error" in second.stdout

    exported = subprocess.run([str(binary), "baselines", "export", "--baseline-store", str(store)],
                              capture_output=True, text=True, timeout=60)
    assert exported.returncode == 0, exported.stderr
    entries = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [e["target"] for e in entries] == ["eager"]
    assert entries[0]["summary"]["time_us"] == lines[1]["eager_us"]
    jsonl = tmp_path / "baselines.jsonl"
    jsonl.write_text(exported.stdout)
    other = tmp_path / "other.sqlite"
    imported = subprocess.run([str(binary), "baselines", "import", str(jsonl), "--baseline-store", str(other)],
                              capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("1 baselines imported")
    # The imported store answers: the task needs no measurement there.
    third = subprocess.run([*argv[:3], "--baseline-store", str(other), *argv[5:-1], "--select", "relu_scale"],
                           capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stderr
    assert "(stored earlier)" in third.stdout
