"""The verifiers environment (python/cuda_agent_verifiers), loaded with the real `verifiers` package
(`vf.load_environment`) and evaluated through its own rollout and scoring code against a real
`cuda-agent serve` on the CPU. The model is a FAKE: `FakeScriptedModel`, a verifiers `Client` that
answers each turn with the next scripted message (no LLM runs here)."""

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
TASK = str(REPO / "examples" / "relu_scale" / "model.py")
CANDIDATES = REPO / "examples" / "relu_scale" / "candidates"

vf = pytest.importorskip("verifiers")
from verifiers.clients.client import Client  # noqa: E402
from verifiers.types import Response, ResponseMessage, ToolCall  # noqa: E402


class FakeScriptedModel(Client):
    """A fake LLM: per rollout (keyed by the task message), turn i answers ``script[i]``
    (``(text, [(tool, arguments), ...])``); it records the tools and prompts it was given."""

    def __init__(self, script):
        super().__init__(object())
        self.script = script
        self.turns: dict[str, int] = {}
        self.seen_tools = []
        self.seen_prompts = []

    def setup_client(self, config):
        return object()

    async def to_native_tool(self, tool):
        return tool

    async def to_native_prompt(self, messages):
        return messages, {}

    async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
        self.seen_tools.append(tools)
        self.seen_prompts.append(prompt)
        key = str(len(self.seen_prompts))
        turn = sum(1 for m in prompt if getattr(m, "role", None) == "assistant")
        text, calls = self.script[min(turn, len(self.script) - 1)]
        tool_calls = [ToolCall(id=f"c{key}-{j}", name=n, arguments=a if isinstance(a, str) else json.dumps(a))
                      for j, (n, a) in enumerate(calls)] or None
        return Response(id=f"r{key}", created=int(time.time()), model=model,
                        message=ResponseMessage(content=text, tool_calls=tool_calls,
                                                finish_reason="tool_calls" if tool_calls else "stop",
                                                is_truncated=False))

    async def raise_from_native_response(self, response):
        return None

    async def from_native_response(self, response):
        return response

    async def close(self):
        return None


@pytest.fixture
def serve(tmp_path):
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_AGENT_")}
    proc = subprocess.Popen([str(BIN), "serve", "--port", "0", "--device", "cpu", "--state-dir", str(tmp_path / "s")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    assert match, (line, proc.stderr.read())
    yield match.group(1)
    proc.kill()
    proc.wait()


def writes(name):
    folder = CANDIDATES / name
    return [("Write", {"file_path": str(f.relative_to(folder)), "content": f.read_text()})
            for f in sorted(folder.rglob("*")) if f.is_file()]


def test_load_environment_and_a_scripted_rollout_scored_by_the_judge(serve):
    env = vf.load_environment("cuda_agent_verifiers", serve_url=serve, tasks=[TASK], device="cpu",
                              schedule="binary", max_turns=6)
    assert isinstance(env, vf.MultiTurnEnv)
    with pytest.raises(RuntimeError, match="unknown reward schedule 'nope'; choose one of paper, binary, speedup"):
        vf.load_environment("cuda_agent_verifiers", serve_url=serve, tasks=[TASK], schedule="nope")
    with pytest.raises(RuntimeError, match="refused task"):
        vf.load_environment("cuda_agent_verifiers", serve_url=serve, tasks=[TASK + ".missing"])
    # Turn 1 reads and makes a bad call; turn 2 writes kernels without model_new.py (a quick verdict: -1
    # at the static stage); turn 3 stops.
    script = [("look", [("Read", {"file_path": "model.py"}), ("Nope", {})]),
              ("write", writes("cpu_missing_model_new")),
              ("done", [])]
    model = FakeScriptedModel(script)
    results = asyncio.run(env.evaluate(client=model, model="fake-scripted", num_examples=1, rollouts_per_example=2))
    outputs = results["outputs"]
    assert len(outputs) == 2
    for out in outputs:
        assert out["reward"] == -1.0 and out["metrics"]["judge_no_verdict"] == 0.0
        assert out["metrics"]["judge_correct"] == 0.0
        tool_texts = [m["content"] if isinstance(m, dict) else m.content for m in out["completion"]
                      if (m["role"] if isinstance(m, dict) else m.role) == "tool"]
        assert any("import torch" in t for t in tool_texts)
        assert any("unknown tool 'Nope'" in t for t in tool_texts)
    assert {t.name for t in model.seen_tools[0]} >= {"Bash", "Read", "Write"}
    assert "model.py" in str(model.seen_prompts[0])
