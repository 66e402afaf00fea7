"""`cuda-agent rft` on the fixture corpus (tests/rft/corpus, written by make_corpus.py): the count
each filter removes, the SFT rows of the kept episodes (OpenAI chat form), bad input reported by
file:line (skipped by default, fatal with --strict), and the parquet step read back with pyarrow.

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
CORPUS = HERE / "corpus"
# A folder tree of episodes and a JSONL of two episodes back to back.
INPUTS = [CORPUS / "episodes", CORPUS / "combined.jsonl"]
sys.path.insert(0, str(HERE))
from make_corpus import EXPECTED  # noqa: E402


@pytest.fixture(autouse=True)
def need_binary():
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")
    if "unknown command" in subprocess.run([str(BIN), "rft"], capture_output=True, text=True).stderr:
        pytest.skip(f"{BIN} has no rft command")


def rft(*args):
    return subprocess.run([str(BIN), "rft", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_counts_per_filter(tmp_path):
    run = rft(*INPUTS, "--out", tmp_path, "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["trajectories"] == EXPECTED["trajectories"]
    assert report["kept"] == EXPECTED["kept"]
    for name, count in EXPECTED["removed"].items():
        assert report["removed"][name] == count, (name, report["removals"])
    assert sum(report["removed"].values()) + report["kept"] == report["trajectories"]
    by_task = {r["task"]: r for r in report["removals"]}
    assert by_task["suite#repeated"]["reason"].startswith("3 identical consecutive Bash calls")
    assert "unknown tool 'WebSearch'" in by_task["suite#unknown_tool"]["reason"]
    assert by_task["suite#loop"]["filter"] == "loop"
    assert json.loads((tmp_path / "report.json").read_text()) == report


def test_bad_input_is_reported_by_file_and_line(tmp_path):
    run = rft(*INPUTS, "--out", tmp_path)
    assert run.returncode == 0, run.stderr
    truncated = CORPUS / "episodes" / "truncated" / "trajectory.jsonl"
    newer = CORPUS / "episodes" / "newer_version" / "trajectory.jsonl"
    assert f"{truncated}:4: not a JSON object" in run.stderr
    assert f"{newer}:3: unknown schema version 2" in run.stderr
    strict = rft(*INPUTS, "--out", tmp_path / "strict", "--strict")
    assert strict.returncode == 3
    assert ":4: not a JSON object" in strict.stderr or ":3: unknown schema version" in strict.stderr
    assert not (tmp_path / "strict" / "sft.jsonl").exists()


def test_sft_rows_are_openai_chat(tmp_path):
    assert rft(*INPUTS, "--out", tmp_path).returncode == 0
    rows = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert sorted(r["meta"]["task"] for r in rows) == ["suite#combined_good", "suite#good_correct", "suite#good_fast"]
    row = next(r for r in rows if r["meta"]["task"] == "suite#good_fast")
    roles = [m["role"] for m in row["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    first = row["messages"][2]
    assert first["tool_calls"][0]["type"] == "function"
    assert first["tool_calls"][0]["function"]["name"] == "Write"
    assert json.loads(first["tool_calls"][0]["function"]["arguments"])["file_path"] == "kernels/k.cpp"
    assert row["messages"][3]["tool_call_id"] == first["tool_calls"][0]["id"]
    assert row["messages"][-1] == {"role": "assistant", "content": "Done."}
    assert {t["function"]["name"] for t in row["tools"]} == {"Bash", "Read", "Write", "Edit"}
    assert row["meta"]["reward"] == 3


def test_thresholds_change_the_counts(tmp_path):
    # Keep every verdict: the two failed episodes pass the outcome filter (and are kept).
    run = rft(*INPUTS, "--out", tmp_path, "--min-reward", "-1", "--json")
    report = json.loads(run.stdout)
    assert report["removed"]["outcome"] == 0 and report["kept"] == EXPECTED["kept"] + 2
    # Four identical calls allowed: the repeated episode is kept.
    run = rft(*INPUTS, "--out", tmp_path / "b", "--max-identical-calls", "4", "--json")
    assert json.loads(run.stdout)["removed"]["repeated_calls"] == 0
    assert rft(*INPUTS, "--out", tmp_path / "c", "--loop-repeats", "1").returncode == 2


def test_missing_input_fails(tmp_path):
    run = rft(tmp_path / "nowhere", "--out", tmp_path / "o")
    assert run.returncode == 3 and "does not exist" in run.stderr


def test_parquet_reads_back(tmp_path):
    pa = pytest.importorskip("pyarrow.parquet")
    run = rft(*INPUTS, "--out", tmp_path, "--parquet")
    assert run.returncode == 0, run.stderr
    # The summary names every file it wrote, the parquet included, and nothing else.
    listed = {line.strip() for line in run.stdout.splitlines()[1:]}
    assert listed == {str(p) for p in tmp_path.iterdir()}, run.stdout
    table = pa.read_table(tmp_path / "sft.parquet")
    assert table.num_rows == EXPECTED["kept"]
    assert set(table.column_names) >= {"messages", "tools", "task", "reward"}
    messages = json.loads(table.column("messages")[0].as_py())
    assert messages[0]["role"] == "system"
