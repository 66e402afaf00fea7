"""`cuda-agent bench --solver kernelbench:DIR` end to end with the real binary on the CPU.

The suite is a KernelBench-layout folder (level1/1_..., level2/1_...) made from our examples, shrunk;
DIR is a run folder laid out as KernelBench's scripts/generate_samples.py writes one
(level_L_problem_P_sample_S_kernel.py, with a prompt companion), holding our own CPU single-file
solutions (tests/judge/test_single_file_judge.py): a correct one, one whose sources are computed at
run time (refused by the converter), one for a problem the suite lacks and a file with another name.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from test_judge_cases import REPO, binary  # noqa: E402,F401 - the fixture
from test_single_file_judge import CPU_FUNCTIONS  # noqa: E402

COMMON = ["--device", "cpu", "--baselines", "eager", "--warmup", "1", "--iters", "3",
          "--baseline-drift", "100", "--baseline-max-age", "0"]

# The same solution with its sources read from a file at run time: refused, with file:line.
RUNTIME_SOURCES = CPU_FUNCTIONS.replace("cpp_sources=cpp_source", 'cpp_sources=open("k.cpp").read()')


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    relu = (REPO / "examples/relu_scale/model.py").read_text()
    relu = relu.replace("batch_size = 2048", "batch_size = 64").replace("dim = 2048", "dim = 128")
    assert "batch_size = 64" in relu and "dim = 128" in relu
    suite = root / "suite"
    (suite / "level1").mkdir(parents=True)
    (suite / "level2").mkdir()
    (suite / "level1" / "1_ReluScale.py").write_text(relu)
    (suite / "level1" / "2_ReluScaleAgain.py").write_text(relu + "\n# the same program, problem 2\n")
    (suite / "level2" / "1_LinearGelu.py").write_text((REPO / "examples/linear_gelu/model.py").read_text())
    run = root / "runs" / "cpu_run"
    run.mkdir(parents=True)
    (run / "level_1_problem_1_sample_0_kernel.py").write_text(CPU_FUNCTIONS)
    (run / "level_1_problem_1_sample_1_kernel.py").write_text(RUNTIME_SOURCES)
    (run / "level_1_problem_1_sample_0_prompt.txt").write_text("the prompt\n")
    (run / "level_1_problem_2_sample_1_kernel.py").write_text(CPU_FUNCTIONS)  # no sample 0
    (run / "level_1_problem_9_sample_0_kernel.py").write_text(CPU_FUNCTIONS)  # not in the suite
    (run / "scratch.py").write_text("print('not a solution')\n")
    return root


def bench(binary, layout, cache_dir, name, *extra):
    out = layout / name
    argv = [str(binary), "bench", str(layout / "suite"), "--solver",
            f"kernelbench:{layout / 'runs' / 'cpu_run'}", "--store", str(layout / f"{name}.sqlite"),
            "--out", str(out), "--cache-dir", str(cache_dir), *COMMON, *extra]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    return proc, out


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kb-cache")


def test_sample_zero_of_each_problem_is_judged_and_unused_files_are_listed(binary, layout, cache_dir):
    proc, out = bench(binary, layout, cache_dir, "first")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    # Without --levels the run takes the levels the run folder covers: level 1 only.
    assert [t["task"]["name"] for t in report["tasks"]] == ["level1/1_ReluScale", "level1/2_ReluScaleAgain"]
    one, two = report["tasks"]
    assert one["status"] == "correct", one["summary"]
    assert one["sample"] == "0"
    assert one["candidate"]["dir"].endswith("level_1_problem_1_sample_0_kernel.py")
    assert two["status"] == "missing"
    assert "has no sample 0 (it has 1; --sample best judges them all)" in two["reason"]
    # KernelBench's fast_p (vs eager): correct with a speedup > p, over all tasks of the level.
    fast_p = report["metrics"]["levels"][0]["eager"]["fast_p"]
    assert fast_p["0"] == 0.5
    assert set(fast_p) >= {"0", "1", "2"}
    unused = {Path(u["file"]).name: u["reason"] for u in report["solver_inventory"]["unused"]}
    assert set(unused) == {"level_1_problem_9_sample_0_kernel.py", "scratch.py"}, unused
    assert "the suite has no task for level 1 problem 9" in unused["level_1_problem_9_sample_0_kernel.py"]
    assert report["solver_inventory"]["summary"]["companions"] == 1
    md = (out / "report.md").read_text()
    assert "## Files not used" in md and "scratch.py" in md and "## fast_p" in md
    assert "scratch.py: not a KernelBench solution name" in proc.stderr


def test_best_of_samples_judges_every_sample_and_keeps_the_best(binary, layout, cache_dir):
    proc, out = bench(binary, layout, cache_dir, "best", "--sample", "best")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    one, two = report["tasks"]
    assert one["status"] == "correct" and one["sample"] == "0", one["summary"]
    assert one["summary"].startswith("best of 2 (sample 0): correct")
    refused = one["samples"][1]
    assert refused["sample"] == "1" and refused["status"] == "failed"
    assert "level_1_problem_1_sample_1_kernel.py:" in refused["summary"], refused["summary"]
    assert two["status"] == "correct" and two["sample"] == "1"
    assert report["counts"]["correct"] == 2
    assert report["run"]["solver"].endswith("sample=best")


def test_refusals_name_the_allowed_way(binary, layout, cache_dir):
    proc, _ = bench(binary, layout, cache_dir, "bad", "--sample", "gpt-o1")
    assert proc.returncode == 2
    assert "a sample id of the run (0, 1; KernelBench's fast_p takes 0) or best" in proc.stderr
    empty = layout / "empty_run"
    empty.mkdir()
    argv = [str(binary), "bench", str(layout / "suite"), "--solver", f"kernelbench:{empty}", *COMMON]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "level_L_problem_P_sample_S_kernel.py (generate_samples.py)" in proc.stderr
    argv = [str(binary), "bench", str(layout / "suite"), "--solver", f"solutions:{empty}", "--sample", "0",
            *COMMON]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--sample is for --solver kernelbench:<dir>" in proc.stderr
