"""`cuda-agent synth` end to end on the CPU (docs/synth.md): every filter drops the programs it must drop
and keeps the ones it must keep (programs given with --candidates), the random composer is
deterministic per seed, and a rerun with the same --out resumes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from test_judge_cases import REPO, binary  # noqa: E402,F401 - the fixture

KERNELBENCH = REPO.parent / "shared" / "kernelbench"
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"


def program(init: str, forward: str, inputs: str, init_args: str = "", init_inputs: str = "[]") -> str:
    return (HEADER + "class Model(nn.Module):\n"
            f"    def __init__(self{init_args}):\n        super().__init__()\n{init}\n"
            f"    def forward(self, x):\n{forward}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\n"
            f"def get_init_inputs():\n    return {init_inputs}\n")


BIG = "torch.randn(256, 1024)"
LINEAR = "        self.linear = nn.Linear(1024, 1024)"

# name -> (stage that must drop it, or None to keep it; code)
CASES = {
    "keep_linear_softsign_cumsum": (None, program(
        LINEAR, "        x = self.linear(x)\n        x = F.softsign(x)\n        return torch.cumsum(x, dim=1)", BIG)),
    "keep_conv_groupnorm": (None, program(
        "        self.conv = nn.Conv2d(8, 32, 3)\n        self.norm = nn.GroupNorm(4, 32)",
        "        return torch.tanh(self.norm(self.conv(x)))", "torch.randn(8, 8, 48, 48)")),
    "missing_get_inputs": ("parse", HEADER + "class Model(nn.Module):\n    def forward(self, x):\n        return x\n\n\n"
                                            "def get_init_inputs():\n    return []\n"),
    "dropout_inside": ("stochastic_static", program(
        LINEAR + "\n        self.drop = nn.Dropout(0.5)", "        return self.drop(self.linear(x))", BIG)),
    "random_at_call_time": ("stochastic", program(
        LINEAR + "\n        self.noise = torch.randn_like", "        y = self.linear(x)\n        return y + self.noise(y)", BIG)),
    "near_copy_of_kernelbench": ("contamination", (KERNELBENCH / "level1" / "19_ReLU.py").read_text()
                                 .replace("batch_size = 4096", "B = 64").replace("dim = 393216", "D = 256")
                                 .replace("batch_size, dim", "B, D")),
    "does_not_run": ("eager", program("        self.linear = nn.Linear(10, 20)", "        return self.linear(x)", BIG)),
    "nan_output": ("eager", program(LINEAR, "        return torch.log(self.linear(x) - 1000.0)", BIG)),
    "constant_output": ("trivial", program(LINEAR, "        return self.linear(x) * 0.0 + 3.0", BIG)),
    "zero_output": ("trivial", program(LINEAR, "        return torch.relu(-torch.abs(self.linear(x)))", BIG)),
    "independent_of_input": ("trivial", program(
        LINEAR, "        return self.linear.weight[:256] * torch.ones_like(x)", BIG)),
    "returns_its_input": ("trivial", program(LINEAR, "        return x + 0.0 * self.linear(x)", BIG)),
    "too_fast": ("runtime", program("", "        return torch.sigmoid(x) * 2.0", "torch.randn(4, 8)")),
    # A program that kills the process filtering it, and one that never returns: each is dropped as a
    # crash (its worker is replaced) and the candidates after it are still filtered.
    "kills_its_process": ("crash", program(LINEAR, "        import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)\n"
                                                   "        return self.linear(x)", BIG)),
    "never_returns": ("crash", program(LINEAR, "        import time\n        time.sleep(3600)\n        return self.linear(x)", BIG)),
}


@pytest.fixture(scope="module")
def filtered(binary, tmp_path_factory):
    """One synth run over CASES (kept in order of the file), two candidates at a time."""
    root = tmp_path_factory.mktemp("synth")
    rows = [{"name": name, "code": code, "ops": []} for name, (_, code) in CASES.items()]
    cases = root / "cases.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = root / "out"
    run = subprocess.run([str(binary), "synth", "--out", str(out), "--candidates", str(cases), "--device", "cpu",
                          "--count", "100", "--min-ms", "0.3", "--max-ms", "5000", "--jobs", "2",
                          "--candidate-timeout", "20", "--decontaminate", str(KERNELBENCH), "--json"],
                         capture_output=True, text=True, timeout=400)
    decisions = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    by_name = {d["name"]: d for d in decisions if "name" in d}
    return run, by_name, out


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_filter_keeps_or_drops(filtered, name):
    _, by_name, _ = filtered
    stage, _ = CASES[name]
    d = by_name[name]
    if stage is None:
        assert d["status"] == "kept", d
    else:
        assert d["status"] == "dropped" and d["stage"] == stage, d


def test_crashes_say_what_happened(filtered):
    _, by_name, _ = filtered
    assert "worker process died (killed by SIGKILL)" in by_name["kills_its_process"]["reason"]
    assert "per-candidate timeout (20 s)" in by_name["never_returns"]["reason"]


def test_outputs_and_summary(filtered):
    run, by_name, out = filtered
    # Fewer kept than --count: exit status 3, and the summary says so.
    assert run.returncode == 3, run.stderr
    summary = json.loads(run.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    kept = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert summary["kept"] == len(kept) == sum(1 for s, _ in CASES.values() if s is None)
    for row in kept:
        assert {"id", "ops", "data_source", "code", "seed", "eager_ms", "compile_ms", "device", "filters"} <= set(row)
        assert row["compile_ms"] is None and row["device"] == "cpu" and row["eager_ms"] >= 0.3
        assert row["filters"]["compile"] == "skipped"
    assert summary["stages"]["trivial"]["dropped"] == 4
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(out / "tasks.parquet").to_pylist()
    assert [(r["id"], r["ops"], r["data_source"], r["code"]) for r in table] == \
        [(r["id"], r["ops"], r["data_source"], r["code"]) for r in kept]
    assert summary["parquet"] == f"{len(kept)} rows in tasks.parquet"
    assert "dropout_inside" not in {r.get("name") for r in kept}


def synth(binary, out, *extra):
    # No time bound: on a busy machine a forward over the default --max-ms (100) would drop a program
    # and make the rows depend on the load, not on the seed.
    return subprocess.run([str(binary), "synth", "--out", str(out), "--device", "cpu", "--seed", "11",
                           "--min-ms", "0", "--max-ms", "1000000", *extra], capture_output=True, text=True,
                          timeout=300)


def programs(out):
    rows = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    return [(r["id"], r["seed"], r["ops"], r["data_source"], r["code"]) for r in rows]


def test_composer_is_deterministic_and_resumes(binary, tmp_path):
    first = synth(binary, tmp_path / "a", "--count", "3")
    assert first.returncode == 0, first.stderr
    again = synth(binary, tmp_path / "b", "--count", "3")
    rows_a = programs(tmp_path / "a")
    assert len(rows_a) == 3 and rows_a == programs(tmp_path / "b")  # timings aside, the same rows
    resumed = synth(binary, tmp_path / "a", "--count", "5")
    assert resumed.returncode == 0, resumed.stderr
    rows = programs(tmp_path / "a")
    assert len(rows) == 5 and rows[:3] == rows_a
    decisions = [json.loads(x) for x in (tmp_path / "a" / "decisions.jsonl").read_text().splitlines()]
    indices = [d["index"] for d in decisions if "index" in d]
    assert len(indices) == len(set(indices)), "a decided candidate was filtered again"
    other = synth(binary, tmp_path / "a", "--count", "5", "--max-ops", "3")
    assert other.returncode == 2 and "another configuration" in other.stderr


def test_time_limit_stops_and_a_rerun_finishes(binary, tmp_path):
    """--time-limit stops a run early (exit 3, the summary says why); the same command without it
    resumes: candidates in flight at the stop are filtered again, none is taken for a crash."""
    stopped = synth(binary, tmp_path / "t", "--count", "40", "--jobs", "2", "--time-limit", "2", "--json")
    assert stopped.returncode == 3, stopped.stderr
    first = json.loads(stopped.stdout)
    assert "--time-limit 2 s reached" in first["run"]["stopped"] and first["kept"] < 40
    done = synth(binary, tmp_path / "t", "--count", "40", "--jobs", "2", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["kept"] == 40 and "stopped" not in summary["run"]
    assert "crash" not in summary["stages"]
    lines = [json.loads(x) for x in (tmp_path / "t" / "decisions.jsonl").read_text().splitlines()]
    decided = [d["index"] for d in lines if "index" in d]
    assert len(decided) == len(set(decided))
    assert all(r in decided for r in (d["released"] for d in lines if "released" in d))


def test_op_count_quotas_are_met_in_parallel(binary, tmp_path):
    """A mix of 1- and 3-op programs, 12 tasks, 2 workers: exactly the quotas are kept (6 and 6) and
    the summary says how many candidates were dropped because their count's quota was full."""
    run = synth(binary, tmp_path / "mix", "--count", "12", "--mix", "1:50,3:50", "--jobs", "2", "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["op_count_quotas"] == {"1": 6, "3": 6}
    assert summary["op_count_histogram"] == {"1": 6, "3": 6}
    assert summary["run"]["workers"] == 2 and summary["run"]["kept"] == 12
    rows = [json.loads(x) for x in (tmp_path / "mix" / "tasks.jsonl").read_text().splitlines()]
    assert sorted(len(r["ops"]) for r in rows) == [1] * 6 + [3] * 6


def test_transformers_ops_are_single_tasks_of_their_share(binary, tmp_path):
    """--mix 2:50,t:50: half the kept tasks are one transformers op each (data_source transformers#1),
    the other half 2-op torch programs with no transformers op in them."""
    pytest.importorskip("transformers")
    run = synth(binary, tmp_path / "t", "--count", "6", "--mix", "2:50,t:50", "--jobs", "2", "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["op_count_quotas"] == {"2": 3, "transformers": 3}
    assert summary["op_count_histogram"] == {"2": 3, "transformers": 3}
    assert summary["op_count_requested_percent"]["transformers"] == 50.0
    rows = [json.loads(x) for x in (tmp_path / "t" / "tasks.jsonl").read_text().splitlines()]
    single = [r for r in rows if r["data_source"] == "transformers#1"]
    assert len(single) == 3 and all(len(r["ops"]) == 1 and r["ops"][0].startswith("transformers.") for r in single)
    assert all("from transformers" in r["code"] for r in single)
    chained = [r for r in rows if r["data_source"] == "torch#2"]
    assert len(chained) == 3 and not any(o.startswith("transformers.") for r in chained for o in r["ops"])


@pytest.mark.parametrize("args, message", [
    (["--count", "3"], "--out is required"),
    (["--out", "X", "--mix", "7:1"], "--mix entry"),
    (["--out", "X", "--composer", "llm:x"], "--composer llm:x"),
    (["--out", "X", "--composer", "bogus"], "'llm:<model spec>'"),
    (["--out", "X", "--max-ops", "9"], "--max-ops must be 1..5"),
    (["--out", "X", "--jobs", "-1"], "--jobs expects a non-negative integer"),
    (["--out", "X", "--decontaminate", "/nonexistent/suite"], "--decontaminate"),
])
def test_bad_input(binary, tmp_path, args, message):
    args = [a.replace("X", str(tmp_path / "o")) for a in args]
    r = subprocess.run([str(binary), "synth", "--device", "cpu", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and message in r.stderr, r.stderr
