"""`cuda-agent tasks check` through the binary, on the CPU: the examples, a suite whose tasks crash,
hang and ignore their input (each death costs the job a restart), resumption and usage errors.

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
"""

import json
import subprocess
import textwrap

import pytest

from test_judge_cases import REPO, judge_binary

NORMAL = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 48)
    def forward(self, x):
        return self.lin(x)
def get_inputs():
    return [torch.randn(32, 64)]
def get_init_inputs():
    return []
"""

CONSTANT = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 32))
    def forward(self, x):
        return self.w * 3.0
def get_inputs():
    return [torch.randn(16, 32)]
def get_init_inputs():
    return []
"""

SEGFAULT = NORMAL.replace("return self.lin(x)", "import ctypes; return ctypes.string_at(0)")
HANG = NORMAL.replace("return self.lin(x)", "import time; time.sleep(120)")


@pytest.fixture(scope="module")
def binary():
    path = judge_binary()
    if not path.is_file():
        pytest.skip(f"judge binary not built: {path}")
    return path


def tasks_check(binary, *args, timeout=300):
    return subprocess.run([str(binary), "tasks", "check", *map(str, args)], cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def by_name(report):
    return {t["name"]: t for t in report["tasks"]}


def test_examples_on_cpu(binary, tmp_path):
    out = tmp_path / "report.md"
    proc = tasks_check(binary, "examples", "--device", "cpu", "--cache-dir", tmp_path / "cache", "--json",
                       "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["complete"] and report["device"] == "cpu"
    assert report["policies"] == ["strict", "tf32-fair", "paper"]
    assert report["counts"] == {"tasks": 28, "checked": 3, "failed": 2, "malformed": 23, "flagged": 0,
                                "pending": 0}
    tasks = by_name(report)
    for name in ("relu_scale/model", "linear_gelu/model", "rowwise_softmax/model"):
        assert tasks[name]["status"] == "checked" and not tasks[name]["flagged"], tasks[name]
    assert tasks["malformed/raises_in_forward"]["status"] == "failed"
    assert "broken on purpose" in tasks["malformed/raises_in_forward"]["reason"]
    assert tasks["malformed/no_model"]["status"] == "malformed"
    assert tasks["malformed/no_model"]["reason"] == "task defines no class Model"
    md = out.read_text()
    assert "## Flagged tasks\n\nNone." in md
    assert "| malformed/syntax_error | task | importing the task file raised SyntaxError" in md
    assert "[28/28]" in proc.stderr


def test_crashes_and_hangs_fail_their_task_only(binary, tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name, source in {"1_normal": NORMAL, "2_segfault": SEGFAULT, "3_constant": CONSTANT, "4_hang": HANG,
                         "5_normal": NORMAL}.items():
        (suite / f"{name}.py").write_text(textwrap.dedent(source))
    progress = tmp_path / "progress.jsonl"
    args = [suite, "--device", "cpu", "--cache-dir", tmp_path / "cache", "--task-timeout", "5", "--json",
            "--progress", progress]
    proc = tasks_check(binary, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    tasks = by_name(report)
    assert report["counts"] == {"tasks": 5, "checked": 3, "failed": 2, "malformed": 0, "flagged": 1,
                                "pending": 0}
    assert tasks["2_segfault"]["error_kind"] == "crash"
    assert "SIGSEGV" in tasks["2_segfault"]["reason"] or "139" in tasks["2_segfault"]["reason"]
    assert tasks["4_hang"]["error_kind"] == "timeout"
    assert "5 s" in tasks["4_hang"]["reason"]
    assert tasks["3_constant"]["flagged"]
    assert all(tasks["3_constant"]["answers"]["independent"]["pass"].values())
    assert report["summary"]["strict"]["independent"] == 1
    assert tasks["5_normal"]["status"] == "checked" and not tasks["5_normal"]["flagged"]

    # The progress file holds every task: a second run checks nothing and reports the same.
    lines = [json.loads(line) for line in progress.read_text().splitlines()]
    assert sorted(line["name"] for line in lines) == sorted(tasks)
    again = tasks_check(binary, *args, timeout=60)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["counts"] == report["counts"]
    assert "[1/" not in again.stderr


@pytest.mark.parametrize("args, status", [
    (["examples", "--policy", "loose"], 2),
    (["examples", "--device", "tpu"], 2),
    ([], 2),
    (["examples", "--select", "no_such_task"], 2),
    (["no/such/suite"], 3),
])
def test_usage_errors_and_unreadable_suites(binary, args, status):
    proc = tasks_check(binary, *args, timeout=60)
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == ""
