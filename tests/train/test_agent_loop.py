"""The cuda_agent verl agent loop against a fake token server and a fake environment server
(tests/train/fakes.py): response masks, the response ending on a model token, the reward on the
last token through verl's own post-processing, the turn limit, 429 retries, malformed calls, and
null rewards. The real server: test_serve_e2e.py."""

import asyncio
import json

import pytest
import torch
from omegaconf import OmegaConf

from cuda_agent_verl.agent_loop import CudaAgentLoop
from cuda_agent_verl.server_client import ServerClient
from fakes import FakeEnvServer, FakeTokenServer, hermes
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry

WRITE = {"name": "Write", "arguments": {"file_path": "kernels/k.cpp", "content": "// k\n"}}
COMPILE = {"name": "Bash", "arguments": {"command": "bash utils/compile.sh"}}


def trainer_config(response_length=4096, max_turns=10, max_tool_response_length=2000):
    return OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": 2048, "response_length": response_length,
            "multi_turn": {"max_assistant_turns": max_turns, "max_tool_response_length": max_tool_response_length}}},
        "data": {},
    })


class Sleeps:
    """Records the client's waits instead of sleeping."""

    def __init__(self):
        self.waits = []

    async def __call__(self, seconds):
        self.waits.append(seconds)


def run_episode(tokenizer, env, replies, *, row=None, sleeps=None, loop_settings=None, **settings):
    async def go():
        tokens = FakeTokenServer(tokenizer, replies)
        client = ServerClient(env.base_url, sleep=sleeps or Sleeps())
        loop = CudaAgentLoop(
            trainer_config=DictConfigWrap(trainer_config(**settings)), server_manager=tokens, tokenizer=tokenizer,
            processor=None, dataset_cls=None, data_config=DictConfigWrap(OmegaConf.create({})), client=client,
            **(loop_settings or {}),
        )
        kwargs = row or {"raw_prompt": [{"role": "user", "content": "x"}],
                         "reward_model": {"style": "rule", "ground_truth": "suite#level1/1_x"},
                         "extra_info": {"device": "cpu"}}
        output = await loop.run({"temperature": 1.0}, **kwargs)
        return output, tokens

    return asyncio.run(go())


def segments(mask):
    """The runs of a response mask: [(value, length), ...]."""
    runs = []
    for m in mask:
        if runs and runs[-1][0] == m:
            runs[-1][1] += 1
        else:
            runs.append([m, 1])
    return [tuple(r) for r in runs]


def test_registered_under_cuda_agent():
    assert _agent_loop_registry["cuda_agent"] == {"_target_": "cuda_agent_verl.agent_loop.CudaAgentLoop"}


def test_masks_and_reward_on_the_last_model_token(tokenizer):
    with FakeEnvServer(reward=3) as env:
        output, tokens = run_episode(tokenizer, env, [hermes("Writing.", [WRITE]), hermes("Compiling.", [COMPILE]), "Done."])
    # model, observation, model, observation, model
    assert [v for v, _ in segments(output.response_mask)] == [1, 0, 1, 0, 1]
    assert output.response_mask[-1] == 1
    assert output.reward_score == 3.0
    assert output.extra_fields["stop_reason"] == "model_finished"
    assert output.extra_fields["reward_null"] is False
    # The observation tokens hold the server's answer; the model tokens are exactly what it generated.
    text = tokenizer.decode(output.response_ids)
    assert 'ran Write {"content": "// k\\n", "file_path": "kernels/k.cpp"}' in text
    model_ids = [t for t, m in zip(output.response_ids, output.response_mask) if m]
    assert tokenizer.decode(model_ids).count("<|im_end|>") == 3
    # Each request's prompt is the previous request's prompt plus what followed (one growing sequence).
    assert tokens.prompts[1][: len(tokens.prompts[0])] == tokens.prompts[0]
    assert output.prompt_ids == tokens.prompts[0]
    # The session was created for the row's task, called twice, graded and closed.
    methods = [(m, p.split("/")[-1]) for m, p, _ in env.requests]
    assert methods == [("POST", "sessions"), ("POST", "calls"), ("POST", "calls"), ("POST", "grade"), ("DELETE", "s1")]
    assert env.requests[0][2]["task"] == "suite#level1/1_x" and env.requests[0][2]["device"] == "cpu"
    assert len(output.response_logprobs) == len(output.response_ids)


def test_verl_puts_the_reward_on_the_last_model_token(tokenizer):
    """verl's own batching (AgentLoopWorker._postprocess) places reward_score at the last response
    token; with our output that token is a model token (mask 1)."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, _InternalAgentLoopOutput

    with FakeEnvServer(reward=2, turn_limit=1) as env:
        # The turn limit stops after the first call: the trailing observation must be cut.
        output, _ = run_episode(tokenizer, env, [hermes("Writing.", [WRITE]), hermes("Again.", [WRITE])], max_turns=1)
    assert output.extra_fields["stop_reason"] == "max_turns"
    assert output.response_mask and set(output.response_mask) == {1}
    worker = AgentLoopWorker.__new__(AgentLoopWorker)
    worker.tokenizer = tokenizer
    worker.reward_loop_worker_handles = None
    prompt_len, response_len = 2048, 64
    response = torch.full((1, response_len), tokenizer.pad_token_id)
    response[0, : len(output.response_ids)] = torch.tensor(output.response_ids)
    mask = torch.zeros((1, response_len), dtype=torch.long)
    mask[0, : len(output.response_mask)] = torch.tensor(output.response_mask)
    attention = torch.cat([torch.ones((1, prompt_len), dtype=torch.long), (mask > 0).long()], dim=1)
    attention[0, prompt_len : prompt_len + len(output.response_ids)] = 1
    internal = _InternalAgentLoopOutput(
        prompt_ids=torch.zeros((1, prompt_len), dtype=torch.long), response_ids=response,
        input_ids=torch.zeros((1, prompt_len + response_len), dtype=torch.long),
        position_ids=torch.zeros((1, prompt_len + response_len), dtype=torch.long),
        response_mask=mask, attention_mask=attention, reward_score=output.reward_score,
        num_turns=output.num_turns, metrics=output.metrics, extra_fields=dict(output.extra_fields),
    )
    batch = worker._postprocess([internal])
    rm = batch.batch["rm_scores"][0]
    last = int(rm.nonzero()[-1])
    assert rm[last] == 2.0 and batch.batch["response_mask"][0, last] == 1


def test_turn_limit_ends_on_a_model_token(tokenizer):
    with FakeEnvServer(reward=1) as env:
        output, tokens = run_episode(tokenizer, env, [hermes(f"turn {i}", [COMPILE]) for i in range(10)], max_turns=3)
    assert output.extra_fields["stop_reason"] == "max_turns"
    assert len(tokens.prompts) == 3
    assert output.response_mask[-1] == 1
    assert [v for v, _ in segments(output.response_mask)] == [1, 0, 1, 0, 1]
    assert output.extra_fields["tool_calls"] == 3  # the last turn's call ran (its effect counts), unseen


def test_server_turn_limit_409_stops_cleanly(tokenizer):
    with FakeEnvServer(reward=1, turn_limit=2) as env:
        output, _ = run_episode(tokenizer, env, [hermes(f"turn {i}", [COMPILE]) for i in range(10)])
    assert output.extra_fields["stop_reason"] == "server_turn_limit"
    assert output.reward_score == 1.0 and output.response_mask[-1] == 1


def test_response_budget(tokenizer):
    with FakeEnvServer(reward=2) as env:
        output, tokens = run_episode(tokenizer, env, [hermes("x" * 400, [COMPILE]) for _ in range(10)], response_length=300)
    assert output.extra_fields["stop_reason"] == "response_budget"
    assert len(output.response_ids) <= 300 and output.response_mask[-1] == 1
    assert tokens.sampling[0]["max_tokens"] == 300


def test_429_is_retried_after_retry_after(tokenizer):
    sleeps = Sleeps()
    with FakeEnvServer(reward=2, faults_429=2, retry_after="3") as env:
        output, _ = run_episode(tokenizer, env, ["Done."], sleeps=sleeps)
    assert sleeps.waits == [3.0, 3.0]
    assert output.reward_score == 2.0 and output.extra_fields["server_retries"] == 2


def test_malformed_calls_become_error_observations(tokenizer):
    replies = [
        "Broken: <tool_call>{\"name\": \"Bash\", \"arguments\": {\"command\": </tool_call>",
        hermes("Unknown tool.", [{"name": "Browse", "arguments": {"url": "x"}}]),
        "Unclosed <tool_call>{\"name\": \"Bash\"",
    ]
    with FakeEnvServer(reward=-1) as env:
        output, _ = run_episode(tokenizer, env, replies + ["Done."])
    text = tokenizer.decode(output.response_ids)
    assert "error: the tool call is not JSON" in text
    assert "error: unknown tool 'Browse'" in text  # the server's answer
    assert "error: a <tool_call> block without its </tool_call>" in text
    assert output.extra_fields["malformed_calls"] == 2  # answered here; the server never sees them
    assert output.extra_fields["tool_errors"] == 3
    assert output.reward_score == -1.0 and output.extra_fields["stop_reason"] == "model_finished"
    calls = [b for m, p, b in env.requests if p.endswith("/calls")]
    assert [c["tool"] for c in calls] == ["Browse"]


@pytest.mark.parametrize("setting, trains", [("mask", False), ("zero", True)])
def test_null_reward_is_not_minus_one(tokenizer, setting, trains):
    with FakeEnvServer(reward=None) as env:
        output, _ = run_episode(tokenizer, env, [hermes("w", [WRITE]), "Done."], loop_settings={"null_reward": setting})
    assert output.reward_score == 0.0 and output.extra_fields["reward_null"] is True
    assert (1 in output.response_mask) is trains


def test_a_dead_server_does_not_raise(tokenizer):
    env = FakeEnvServer()
    with env:
        url = env.base_url
    async def go():
        loop = CudaAgentLoop(
            trainer_config=DictConfigWrap(trainer_config()), server_manager=FakeTokenServer(tokenizer, ["x"]),
            tokenizer=tokenizer, processor=None, dataset_cls=None, data_config=DictConfigWrap(OmegaConf.create({})),
            server_url=url,
        )
        return await loop.run({}, raw_prompt=[], reward_model={"ground_truth": "t"}, extra_info={})
    output = asyncio.run(go())
    assert output.extra_fields["reward_null"] is True and output.reward_score == 0.0
    assert output.extra_fields["stop_reason"].startswith("loop_error: URLError")
    json.dumps(output.extra_fields)  # plain values only
