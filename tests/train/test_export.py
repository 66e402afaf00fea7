"""`cuda-agent export verl`: a suite as verl's RL parquet, read back with pyarrow — the columns
verl's RLHFDataset reads (prompt, data_source, reward_model, extra_info), the single-turn answer
format in the prompt (parsed back by cuda_agent_verl.answer), the agent mode's agent_name."""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
KERNELBENCH = REPO.parent / "shared" / "kernelbench"
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(autouse=True)
def need_binary():
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")
    if "unknown command" in subprocess.run([str(BIN), "export"], capture_output=True, text=True).stderr:
        pytest.skip(f"{BIN} has no export command")


def export(*args):
    run = subprocess.run([str(BIN), "export", "verl", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


def test_kernelbench_single_turn(tmp_path):
    if not KERNELBENCH.is_dir():
        pytest.skip(f"{KERNELBENCH} is not here")
    out = tmp_path / "train.parquet"
    export(KERNELBENCH, "--select", "level1/19_ReLU,level2/1_Conv2D_ReLU_BiasAdd", "--device", "cpu", "--out", out)
    table = pq.read_table(out)
    assert table.num_rows == 2
    assert {"prompt", "data_source", "reward_model", "extra_info", "ability"} <= set(table.column_names)
    rows = table.to_pylist()
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert "class Model" in first["prompt"][1]["content"]
    assert first["reward_model"] == {"style": "rule", "ground_truth": f"{KERNELBENCH}#level1/19_ReLU"}
    assert first["data_source"] == "cuda_agent/kernelbench/level1"
    assert first["extra_info"]["index"] == 0 and first["extra_info"]["device"] == "cpu"
    assert "{{DEVICE}}" not in first["prompt"][0]["content"]
    assert rows[1]["extra_info"]["task_name"] == "level2/1_Conv2D_ReLU_BiasAdd"


def test_the_prompts_answer_format_parses_back(tmp_path):
    from cuda_agent_verl.answer import extract_files

    out = tmp_path / "t.jsonl"
    export(REPO / "examples" / "relu_scale" / "model.py", "--out", out)
    row = json.loads(out.read_text().splitlines()[0])
    prompt = row["prompt"][1]["content"]
    example = prompt[prompt.index("```cuda") : prompt.index("Only kernels/")]
    files, notes = extract_files(example)
    assert sorted(files) == ["kernels/my_op.cu", "kernels/my_op_binding.cpp", "model_new.py"] and not notes
    assert row["reward_model"]["ground_truth"] == str(REPO / "examples" / "relu_scale" / "model.py")


def test_synth_jsonl_agent_mode_inline(tmp_path):
    code = (REPO / "examples" / "relu_scale" / "model.py").read_text()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "synth-00001", "ops": ["relu", "mul"], "data_source": "torch#2", "code": code}) + "\n")
    out = tmp_path / "agent.parquet"
    export(tasks, "--mode", "agent", "--inline", "--out", out)
    row = pq.read_table(out).to_pylist()[0]
    assert row["agent_name"] == "cuda_agent"
    assert row["data_source"] == "cuda_agent/torch#2"
    assert row["reward_model"]["ground_truth"] == f"{tasks}#synth-00001"
    assert row["extra_info"]["task_source"] == code and row["extra_info"]["mode"] == "agent"


def test_bad_arguments(tmp_path):
    run = subprocess.run([str(BIN), "export", "verl", str(tmp_path), "--out", str(tmp_path / "x.csv")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--out must name" in run.stderr
    run = subprocess.run([str(BIN), "export", "verl", str(tmp_path / "none.py"), "--out", str(tmp_path / "x.jsonl")],
                         capture_output=True, text=True)
    assert run.returncode == 3


def test_malformed_tasks_are_skipped_with_a_warning(tmp_path):
    """examples/ holds model.py tasks, candidates' model_new.py (no class Model) and examples/malformed:
    only what `tasks list` calls well-formed is exported, each other one named on stderr."""
    listed = subprocess.run([str(BIN), "tasks", "list", REPO / "examples", "--json"], capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    good = sorted(r["name"] for r in rows if r["problem"] is None)
    bad = [r for r in rows if r["problem"] is not None]
    assert good and bad
    out = tmp_path / "examples.jsonl"
    run = export(REPO / "examples", "--out", out)
    exported = sorted(json.loads(line)["extra_info"]["task_name"] for line in out.read_text().splitlines())
    assert exported == good
    for r in bad:
        assert f"skipped, malformed: {r['problem']}" in run.stderr
    assert f"{len(good)} tasks" in run.stdout and f"{len(bad)} malformed skipped" in run.stdout
    # Nothing well-formed: an error that names how to see the problems.
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "no_model.py").write_text("import torch\n\ndef get_inputs():\n    return []\n")
    run = subprocess.run([str(BIN), "export", "verl", str(tmp_path / "bad"), "--out", str(tmp_path / "none.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and "no well-formed task" in run.stderr and "tasks list" in run.stderr
