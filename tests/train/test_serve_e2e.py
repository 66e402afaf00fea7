"""The cuda_agent loop against a real `cuda-agent serve` on the CPU device: the scripted relu_scale
episode (examples/relu_scale/episodes/cpu_scripted.jsonl) played by the fake token server as
Hermes tool calls, the real tools and the real final judgement. Skipped, saying so, while the binary
has no `serve` command (branch h4-serve).

Serve flags as h4-serve's src/cli/serve_command.cc has them: `cuda-agent serve --port PORT
--state-dir DIR`; the device is the session's (`cpu`, sent by the loop); the server is ready when
GET /v1/health answers.
"""

import asyncio
import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cuda_agent_verl.agent_loop import CudaAgentLoop
from fakes import FakeTokenServer, hermes
from verl.experimental.agent_loop.agent_loop import DictConfigWrap

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
TASK = REPO / "examples" / "relu_scale" / "model.py"
SCRIPT = REPO / "examples" / "relu_scale" / "episodes" / "cpu_scripted.jsonl"


def has_serve() -> bool:
    if not BIN.exists():
        return False
    # `--help` is answered by main for any word; an unknown flag reaches the command (or not).
    run = subprocess.run([str(BIN), "serve", "--no-such-flag"], capture_output=True, text=True, timeout=60)
    return "unknown command" not in run.stderr


pytestmark = pytest.mark.skipif(not has_serve(), reason=f"{BIN} has no `serve` command yet (h4-serve)")


@pytest.fixture
def server(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_AGENT_")}
    if os.environ.get("CUDA_AGENT_CACHE_DIR"):
        env["CUDA_AGENT_CACHE_DIR"] = os.environ["CUDA_AGENT_CACHE_DIR"]
    process = subprocess.Popen([str(BIN), "serve", "--port", str(port), "--state-dir", str(tmp_path / "state")],
                               cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/v1/health", timeout=1).read()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(f"serve exited: {process.stdout.read()}")
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def scripted_replies():
    replies = []
    for line in SCRIPT.read_text().splitlines():
        if line.strip() and not line.startswith("//"):
            turn = json.loads(line)
            replies.append(hermes(turn.get("content", ""), turn.get("tool_calls", [])))
    return replies


def test_scripted_episode_on_the_real_server(server, tokenizer):
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {
        "prompt_length": 16384, "response_length": 65536,
        "multi_turn": {"max_assistant_turns": 40, "max_tool_response_length": 30000}}}, "data": {}})

    async def go():
        loop = CudaAgentLoop(trainer_config=DictConfigWrap(config), server_manager=FakeTokenServer(tokenizer, scripted_replies()),
                             tokenizer=tokenizer, processor=None, dataset_cls=None,
                             data_config=DictConfigWrap(OmegaConf.create({})), server_url=server, device="cpu")
        return await loop.run({}, raw_prompt=[], reward_model={"style": "rule", "ground_truth": str(TASK)},
                              extra_info={"device": "cpu"})

    output = asyncio.run(go())
    assert output.extra_fields["stop_reason"] == "model_finished", output.extra_fields
    assert output.extra_fields["reward_null"] is False
    assert output.reward_score >= 1.0, output.extra_fields["judge_reason"]
    assert output.response_mask[-1] == 1
    text = tokenizer.decode(output.response_ids)
    assert "error" in text  # the script's compile error came back as an observation
