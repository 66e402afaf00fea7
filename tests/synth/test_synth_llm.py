"""`cuda-agent synth --composer llm:<spec>` on the CPU (docs/synth.md, "LLM composer"): the model's
answers are played by the replay client (`llm:replay:FILE`, one JSONL line per answer) or by
tests/fakes/fake_llm_server.py (which records the prompts). Each answer's ```python block is filtered
like any candidate; an answer without one is dropped at stage "compose"; a rerun with the same --out
asks for nothing already written; an LLM error ends the run with exit status 4, decisions kept."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_judge_cases import binary  # noqa: E402,F401 - the fixture
from fake_llm_server import FakeLlmServer  # noqa: E402

GOOD = """import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 256
features = 1024


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        x = self.linear(x)
        x = F.softsign(x)
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
"""
SYNTAX_ERROR = GOOD.replace("def forward(self, x):", "def forward(self, x)")
DROPOUT = GOOD.replace("self.linear = nn.Linear(features, features)",
                       "self.linear = nn.Linear(features, features)\n        self.drop = nn.Dropout(0.5)") \
              .replace("x = F.softsign(x)", "x = self.drop(F.softsign(x))")


def fenced(code: str) -> str:
    return f"Here is the program.\n\n```python\n{code}```\n\nIt applies the operations in order."


ANSWERS = {  # in the order the replay script plays them: candidate k gets answer k
    "good": fenced(GOOD),
    "no_block": "I would write a Linear layer followed by a softsign, then a cumulative sum.",
    "syntax_error": fenced(SYNTAX_ERROR),
    "dropout": fenced(DROPOUT),
}


def script(path: Path, answers) -> Path:
    path.write_text("".join(json.dumps({"content": a}) + "\n" for a in answers))
    return path


def synth(binary, out, composer, *extra, env=None):
    return subprocess.run([str(binary), "synth", "--out", str(out), "--device", "cpu", "--seed", "5",
                           "--min-ms", "0", "--composer", composer, *extra],
                          capture_output=True, text=True, timeout=300, env=env)


def lines(path: Path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def catalog(binary, tmp_path_factory):
    """The op catalog, built once (a synth run builds it in its --out when absent; the tests copy it)."""
    root = tmp_path_factory.mktemp("catalog")
    run = synth(binary, root / "out", "llm:replay:" + str(script(root / "s.jsonl", [fenced(GOOD)])), "--count", "1")
    assert run.returncode == 0, run.stderr
    return root / "out" / "catalog.json"


def fresh_out(tmp: Path, catalog: Path) -> Path:
    out = tmp / "out"
    out.mkdir(parents=True)
    shutil.copy(catalog, out / "catalog.json")
    return out


@pytest.fixture(scope="module")
def four(binary, catalog, tmp_path_factory):
    """Four answers for --count 4: one kept, three dropped; the fifth request finds the script exhausted."""
    root = tmp_path_factory.mktemp("four")
    out = fresh_out(root, catalog)
    run = synth(binary, out, "llm:replay:" + str(script(root / "s.jsonl", ANSWERS.values())), "--count", "4")
    decisions = [d for d in lines(out / "decisions.jsonl") if "index" in d]
    by_name = {name: next(d for d in decisions if d["index"] == k) for k, name in enumerate(ANSWERS)}
    return run, by_name, out


@pytest.mark.parametrize("name, stage", [("good", None), ("no_block", "compose"), ("syntax_error", "parse"),
                                         ("dropout", "stochastic_static")])
def test_each_answer_is_kept_or_dropped(four, name, stage):
    _, by_name, _ = four
    d = by_name[name]
    if stage is None:
        assert d["status"] == "kept", d
    else:
        assert d["status"] == "dropped" and d["stage"] == stage, d
    assert d["name"] == f"llm-{list(ANSWERS).index(name)}"


def test_no_block_reason_is_counted(four):
    run, by_name, out = four
    assert by_name["no_block"]["reason"] == "the model's answer holds no ```python block"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stages"]["compose"]["dropped"] == 1
    assert summary["stages"]["compose"]["reasons"] == {"the model's answer holds no ```python block": 1}
    assert summary["config"]["composer"].startswith("llm:replay:")
    assert summary["candidates"] == 4 and summary["kept"] == 1


def test_exhausted_script_ends_with_status_4_and_keeps_decisions(four):
    run, by_name, out = four
    assert run.returncode == 4, (run.returncode, run.stderr)
    assert "replay script exhausted" in run.stderr and "candidate 4" in run.stderr, run.stderr
    assert "run the same command again to resume" in run.stderr
    assert len(lines(out / "llm_candidates.jsonl")) == 4
    assert len(by_name) == 4


def test_rows_carry_sampled_ops(four):
    _, _, out = four
    rows = lines(out / "llm_candidates.jsonl")
    assert all(1 <= len(r["ops"]) <= 5 and len(set(r["ops"])) == len(r["ops"]) for r in rows)
    assert "compose_error" in rows[1] and "code" not in rows[1]
    assert rows[0]["code"] == GOOD
    kept = lines(out / "tasks.jsonl")
    assert len(kept) == 1 and kept[0]["ops"] == rows[0]["ops"]
    assert kept[0]["data_source"] == f"torch#{len(rows[0]['ops'])}"


def test_rerun_does_not_ask_again(binary, catalog, tmp_path):
    out = fresh_out(tmp_path, catalog)
    answers = script(tmp_path / "s.jsonl", [fenced(GOOD)])
    composer = "llm:replay:" + str(answers)
    first = synth(binary, out, composer, "--count", "1")
    assert first.returncode == 0, first.stderr
    decisions = (out / "decisions.jsonl").read_text()
    answers.write_text("")  # asking again would now fail: the script is empty
    again = synth(binary, out, composer, "--count", "1")
    assert again.returncode == 0, again.stderr
    assert (out / "decisions.jsonl").read_text() == decisions
    assert len(lines(out / "llm_candidates.jsonl")) == 1
    more = synth(binary, out, composer, "--count", "2")
    assert more.returncode == 4 and "replay script exhausted" in more.stderr, more.stderr
    assert (out / "decisions.jsonl").read_text() == decisions
    other = synth(binary, out, "random", "--count", "2")
    assert other.returncode == 2 and "another configuration" in other.stderr and "composer" in other.stderr


def test_same_seed_samples_the_same_ops(binary, catalog, tmp_path):
    rows = []
    for k in range(2):
        out = fresh_out(tmp_path / str(k), catalog)
        answers = script(tmp_path / f"s{k}.jsonl", ["no code"] * 3)
        run = synth(binary, out, "llm:replay:" + str(answers), "--count", "1", "--max-candidates", "3")
        assert run.returncode == 3, run.stderr  # none kept of the 3 allowed
        rows.append([r["ops"] for r in lines(out / "llm_candidates.jsonl")])
    assert len(rows[0]) == 3 and rows[0] == rows[1]


def test_prompt_names_the_sampled_ops(binary, catalog, tmp_path):
    out = fresh_out(tmp_path, catalog)
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy") and not k.startswith("OPENAI_")}
    with FakeLlmServer(script=[{"content": fenced(GOOD)}]) as server:
        run = synth(binary, out, f"llm:openai:{server.base_url}/v1#m", "--count", "1", env=env)
        requests = list(server.requests)
    assert run.returncode == 0, run.stderr
    assert len(requests) == 1
    body = requests[0]["body"]
    assert body["model"] == "m" and not body.get("tools")
    user = [m for m in body["messages"] if m["role"] == "user"]
    assert len(user) == 1
    prompt = user[0]["content"] if isinstance(user[0]["content"], str) else json.dumps(user[0]["content"])
    ops = lines(out / "llm_candidates.jsonl")[0]["ops"]
    assert ops and all(op in prompt for op in ops), (ops, prompt)
    assert "```python" in prompt and "get_init_inputs" in prompt and "`Model(nn.Module)`" in prompt
