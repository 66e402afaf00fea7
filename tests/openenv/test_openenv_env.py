"""The OpenEnv environment (python/cuda_agent_openenv) with OpenEnv's own client (`EnvClient`,
`GenericEnvClient` from the `openenv-core` package) against a real `cuda-agent serve` on the CPU:
an episode whose reward arrives with the grading step, bad actions, the turn limit, a judge that
takes too long, 429 back-pressure, many sessions at once, and serve killed and restarted mid-episode.
"""

import asyncio
import json
import threading
import time
import urllib.request
import uuid

import pytest

pytest.importorskip("openenv", reason="openenv-core is not installed (scripts/setup.sh installs it)")
from openenv_stack import TASK, candidate
from openenv import GenericEnvClient

from cuda_agent_openenv import CudaAgentAction, CudaAgentEnv


def health(serve):
    with urllib.request.urlopen(serve.url + "/v1/health", timeout=10) as answer:
        return json.load(answer)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=240))


async def write_all(env, files):
    for args in files:
        r = await env.step(CudaAgentAction(tool="Write", arguments=args))
        assert not r.observation.is_error, r.observation.text
        assert r.done is False and r.reward is None


def test_an_episode_bad_actions_and_misuse(stack):
    _, adapter = stack()

    async def episode():
        async with CudaAgentEnv(base_url=adapter.url) as env:
            with pytest.raises(RuntimeError, match=r"no open episode: call reset\(\) first"):
                await env.step(CudaAgentAction(tool="Read", arguments={"file_path": "model.py"}))
            r = await env.reset(seed=0)
            obs = r.observation
            assert r.done is False and r.reward is None and obs.session_id.startswith("s_")
            assert "model.py" in obs.task_message and obs.system_prompt
            assert {t["name"] for t in obs.tools} >= {"Bash", "Read", "Write", "Edit"}
            r = await env.step(CudaAgentAction(tool="Read", arguments={"file_path": "model.py"}))
            assert "import torch" in r.observation.text and r.observation.calls_used == 1
            # Bad actions: the model sees why, the episode goes on.
            r = await env.step(CudaAgentAction(tool="Nope"))
            assert r.observation.is_error and "unknown tool 'Nope'" in r.observation.text and "Bash" in r.observation.text
            r = await env.step(CudaAgentAction(tool="Read", arguments="{not json"))
            assert r.observation.is_error and "not valid JSON" in r.observation.text and not r.done
            # An action that is not a CudaAgentAction is refused by OpenEnv's validation.
            raw = GenericEnvClient(base_url=adapter.url)
            async with raw:
                await raw.reset()
                with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                    await raw.step({"command": "ls"})
                ok = await raw.step({"tool": "Bash", "arguments": {"command": "echo hi-$((1+2))"}})
                assert "hi-3" in ok.observation["text"]
            state = await env.state()
            assert state.episode_id == obs.session_id and state.step_count == 3 and not state.done
            await write_all(env, candidate("cpu_compile_error", salt=uuid.uuid4().hex))
            r = await env.step(CudaAgentAction(tool="grade"))
            assert r.done is True and r.reward == -1.0 and r.observation.reward == -1.0
            assert r.observation.result["stage"] == "build" and "build failed" in r.observation.text
            state = await env.state()
            assert state.done and state.graded and state.reward == -1.0
            with pytest.raises(RuntimeError, match=r"the episode has ended \(reward -1.0\); call reset\(\)"):
                await env.step(CudaAgentAction(tool="Read", arguments={"file_path": "model.py"}))
            with pytest.raises(RuntimeError, match="serve refused the session.*"):
                await env.reset(task=str(TASK) + ".missing")
            r = await env.reset(task=str(TASK), turn_limit=2)
            assert r.observation.turn_limit == 2
            # The call that spends the turn limit grades: the reward arrives with it.
            r = await env.step(CudaAgentAction(tool="Read", arguments={"file_path": "model.py"}))
            assert not r.done
            r = await env.step(CudaAgentAction(tool="Glob", arguments={"pattern": "*"}))
            assert r.done and r.reward == -1.0 and "turn limit reached" in r.observation.text
            assert r.observation.result["error_kind"] == "missing_model_new"

    run(episode())


def test_a_judge_that_takes_too_long_is_an_explicit_timeout(stack):
    _, adapter = stack(adapter_flags=("--grade-timeout", "1"))

    async def episode():
        async with CudaAgentEnv(base_url=adapter.url) as env:
            await env.reset()
            await write_all(env, candidate("cpu_compile_error", salt=uuid.uuid4().hex))
            start = time.monotonic()
            r = await env.step(CudaAgentAction(tool="grade"))
            assert time.monotonic() - start < 10
            assert r.done is True and r.reward is None
            assert r.observation.error_code == "judge_timeout" and "reward None, not -1" in r.observation.text

    run(episode())


def test_429_back_pressure_is_retryable_and_too_many_sessions(stack):
    # One judgement at a time and no waiting room: a second grade while one runs is a 429.
    serve, adapter = stack(serve_flags=("--queue-per-device", "0", "--judge-workers", "1", "--max-sessions", "3"))

    async def episode():
        async with CudaAgentEnv(base_url=adapter.url) as slow, CudaAgentEnv(base_url=adapter.url) as fast:
            await slow.reset()
            await write_all(slow, candidate("cpu_compile_error", salt=uuid.uuid4().hex))
            await fast.reset()
            grading = asyncio.create_task(slow.step(CudaAgentAction(tool="grade")))
            deadline = time.monotonic() + 60
            while health(serve)["devices"][0]["running"] < 1:  # the slow grade holds the one worker
                assert time.monotonic() < deadline and not grading.done()
                await asyncio.sleep(0.1)
            r = await fast.step(CudaAgentAction(tool="grade"))
            assert r.observation.error_code == "busy" and r.observation.retry_after_s >= 1
            assert r.done is False and r.reward is None and "--queue-per-device" in r.observation.text
            # The refused grade did not end the episode; retrying waits out the busy judge.
            r = await fast.step_retrying(CudaAgentAction(tool="grade"), max_wait_s=180)
            assert r.done and r.reward == -1.0
            graded = await grading
            assert graded.done and graded.reward == -1.0 and graded.observation.result["stage"] == "build"
            # Sessions: 3 open at most on serve (graded ones are not open); a fourth reset is a
            # retryable refusal.
            more = [CudaAgentEnv(base_url=adapter.url) for _ in range(3)]
            for env in more:
                await env.connect()
                assert (await env.reset()).observation.error_code is None
            extra = CudaAgentEnv(base_url=adapter.url)
            async with extra:
                r = await extra.reset()
                assert r.observation.error_code == "too_many_sessions" and r.observation.retry_after_s >= 1
                with pytest.raises(RuntimeError, match="no open episode"):
                    await extra.step(CudaAgentAction(tool="Read", arguments={}))
                await more[0].close()  # its serve session is closed with the WebSocket
                r = await extra.reset_retrying(max_wait_s=30)
                assert r.observation.error_code is None and r.observation.session_id
            for env in more[1:]:
                await env.close()

    run(episode())


def test_many_concurrent_sessions_by_default(stack):
    serve, adapter = stack()
    n = 8

    async def one(i):
        async with CudaAgentEnv(base_url=adapter.url) as env:
            r = await env.reset(seed=i)
            sid = r.observation.session_id
            await env.step(CudaAgentAction(tool="Write", arguments={"file_path": f"note{i}.txt", "content": f"n{i}"}))
            r = await env.step(CudaAgentAction(tool="Bash", arguments={"command": "ls note*.txt"}))
            assert r.observation.text.split() == [f"note{i}.txt"]  # sessions do not see each other
            # Grades beyond serve's queue (1 running + 8 waiting) are a 429: step_retrying waits them out.
            r = await env.step_retrying(CudaAgentAction(tool="grade"), max_wait_s=150)
            assert r.done and r.reward == -1.0, r.observation.text
            return sid

    async def all_of_them():
        return await asyncio.gather(*(one(i) for i in range(n)))

    start = time.monotonic()
    sids = run(all_of_them())
    assert len(set(sids)) == n
    assert time.monotonic() - start < 200


def test_serve_killed_and_restarted_mid_episode(stack, tmp_path):
    serve, adapter = stack(adapter_flags=("--reconnect", "60"))

    async def episode():
        async with CudaAgentEnv(base_url=adapter.url) as env:
            await env.reset()
            await env.step(CudaAgentAction(tool="Write", arguments={"file_path": "kept.txt", "content": "kept"}))
            serve.kill()
            restarted = []
            threading.Timer(1.5, lambda: restarted.append(stack.serve(port=serve.port))).start()
            r = await env.step(CudaAgentAction(tool="Read", arguments={"file_path": "kept.txt"}))
            assert restarted, "the step answered before serve was back"
            assert "kept" in r.observation.text and r.observation.calls_used == 2
            r = await env.step(CudaAgentAction(tool="grade"))
            assert r.done and r.reward == -1.0

    run(episode())
