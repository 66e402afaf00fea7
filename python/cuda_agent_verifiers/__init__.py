"""cuda_agent_verifiers: cuda-agent as a `verifiers` environment (PyPI ``verifiers``, the classic
``vf.Environment`` API that prime-rl and ``vf-eval`` load).

    import verifiers as vf
    env = vf.load_environment("cuda_agent_verifiers", serve_url="http://127.0.0.1:8377",
                              tasks=["examples/relu_scale/model.py"], device="cpu", schedule="paper")

``vf.load_environment(ID)`` imports the module named ID and calls its ``load_environment(**args)``;
this package is that module. Each rollout is one ``cuda-agent serve`` session (docs/server.md): the
prompt is the session's system prompt and task message, the tools are the session's tools (Bash,
Read, Write, ...), each tool call of the model runs in the session's workspace, and the rollout
ends when the model answers without a tool call or the turn limit is spent. The workspace is then
graded once; the rubric's reward is the judge's, under the selected schedule (``paper`` −1/1/2/3,
``binary``, ``speedup``; ``cuda_agent_verl.reward``). A judgement that is not a verdict (task or
internal error, a grade timeout) scores 0 with the metric ``judge_no_verdict`` = 1, never −1.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import verifiers as vf
from datasets import Dataset
from verifiers.types import ToolMessage

from cuda_agent_openenv.server.serve_http import ServeHTTP, error_of, retry_after
from cuda_agent_verl.reward import SCHEDULES, schedule_reward

__all__ = ["CudaAgentVfEnv", "load_environment"]


class CudaAgentVfEnv(vf.MultiTurnEnv):
    def __init__(self, serve: ServeHTTP, device: str | None, policy: str | None, turn_limit: int | None,
                 grade_timeout_s: float, call_timeout_s: float, busy_wait_s: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.serve = serve
        self.device, self.policy, self.turn_limit = device, policy, turn_limit
        self.grade_timeout_s, self.call_timeout_s, self.busy_wait_s = grade_timeout_s, call_timeout_s, busy_wait_s

    async def _request(self, method: str, path: str, body: dict | None, timeout_s: float):
        return await asyncio.to_thread(self.serve.request, method, path, body, timeout_s)

    async def _retrying(self, method: str, path: str, body: dict | None, timeout_s: float):
        """A request whose 429/503 is waited out (Retry-After) for at most ``busy_wait_s``."""
        waited = 0.0
        while True:
            status, headers, answer = await self._request(method, path, body, timeout_s)
            if status not in (429, 503) or waited >= self.busy_wait_s:
                return status, answer
            pause = min(retry_after(headers), self.busy_wait_s - waited)
            await asyncio.sleep(max(pause, 0.1))
            waited += max(pause, 0.1)

    async def setup_state(self, state: vf.State) -> vf.State:
        body: dict[str, Any] = {"task": state["info"]["cuda_task"]}
        for key, value in (("device", self.device), ("policy", self.policy), ("turn_limit", self.turn_limit)):
            if value is not None:
                body[key] = value
        status, answer = await self._retrying("POST", "/v1/sessions", body, 60.0)
        if status != 201:
            code, message = error_of(answer)
            raise vf.Error(f"cuda-agent serve refused the session (HTTP {status} {code}): {message}")
        state["cuda_session"] = answer["session_id"]
        state["cuda_calls_left"] = answer["turn_limit"]
        return await super().setup_state(state)

    @vf.stop
    async def answered_without_a_tool_call(self, state: vf.State) -> bool:
        if not state["trajectory"]:
            return False
        last = state["trajectory"][-1]["completion"][-1]
        return last.role == "assistant" and not getattr(last, "tool_calls", None)

    @vf.stop
    async def turn_limit_spent(self, state: vf.State) -> bool:
        return state.get("cuda_calls_left", 1) <= 0

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        replies = []
        for call in messages[-1].tool_calls or []:
            call_id = call.id or uuid.uuid4().hex
            status, _, answer = await self._request(
                "POST", f"/v1/sessions/{state['cuda_session']}/calls",
                {"call_id": call_id, "tool": call.name, "arguments": call.arguments}, self.call_timeout_s)
            if status == 200:
                text = answer["observation"]["text"]
                state["cuda_calls_left"] = answer["turn_limit"] - answer["calls_used"]
            else:
                code, message = error_of(answer)
                text = f"Error: {message}"
                if code == "turn_limit":
                    state["cuda_calls_left"] = 0
            replies.append(ToolMessage(role="tool", content=text, tool_call_id=call_id))
        return replies

    @vf.cleanup(priority=10)
    async def grade(self, state: vf.State) -> None:
        """Judge the workspace once, when the rollout ends (before the rubric scores it)."""
        session = state.get("cuda_session")
        if not session or "cuda_grade" in state:
            return
        start = time.monotonic()
        try:
            status, answer = await self._retrying("POST", f"/v1/sessions/{session}/grade", {}, self.grade_timeout_s)
        except TimeoutError:
            state["cuda_grade"] = {"reward": None, "result": {"outcome": "timeout", "reason":
                                   f"the judge did not answer within {self.grade_timeout_s:g} s"}}
        else:
            if status == 200:
                state["cuda_grade"] = answer
            else:
                code, message = error_of(answer)
                state["cuda_grade"] = {"reward": None, "result": {"outcome": code, "reason": message}}
        state["cuda_grade_seconds"] = time.monotonic() - start

    @vf.cleanup(priority=0)
    async def close_session(self, state: vf.State) -> None:
        session = state.get("cuda_session")
        if session:
            try:
                await self._request("DELETE", f"/v1/sessions/{session}", None, 10.0)
            except (ConnectionError, TimeoutError):
                pass  # serve's session TTL removes it


def _judge_rubric(schedule: str) -> vf.Rubric:
    async def judge_reward(state: vf.State) -> float:
        grade = state.get("cuda_grade") or {}
        reward = schedule_reward(schedule, grade.get("reward"), grade.get("result"))
        return 0.0 if reward is None else float(reward)

    async def judge_no_verdict(state: vf.State) -> float:
        return 1.0 if (state.get("cuda_grade") or {}).get("reward") is None else 0.0

    async def judge_correct(state: vf.State) -> float:
        return 1.0 if ((state.get("cuda_grade") or {}).get("result") or {}).get("correct") is True else 0.0

    rubric = vf.Rubric(funcs=[judge_reward], weights=[1.0])
    rubric.add_metric(judge_no_verdict)
    rubric.add_metric(judge_correct)
    return rubric


def load_environment(serve_url: str = "http://127.0.0.1:8377", tasks: list | None = None,
                     device: str | None = None, policy: str | None = None, schedule: str = "paper",
                     max_turns: int = 50, turn_limit: int | None = None, token: str | None = None,
                     grade_timeout_s: float = 1200.0, call_timeout_s: float = 900.0, busy_wait_s: float = 600.0,
                     **kwargs: Any) -> vf.Environment:
    """The environment: one dataset row per task (``tasks``: references as ``judge --task`` takes
    them), prompts and tools read from ``serve`` (which must be running)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown reward schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if not tasks:
        raise ValueError("load_environment needs tasks=[...]: task references as `cuda-agent judge --task` takes them")
    serve = ServeHTTP(serve_url, token)
    rows, tool_defs = [], None
    for task in tasks:  # the prompt a rollout sees is the one its session shows; read it once per task
        body = {"task": task, **({"device": device} if device else {}), **({"policy": policy} if policy else {})}
        status, _, answer = serve.request("POST", "/v1/sessions", body, 60.0)
        if status != 201:
            code, message = error_of(answer)
            raise ValueError(f"cuda-agent serve at {serve_url} refused task {task!r} (HTTP {status} {code}): {message}")
        serve.request("DELETE", f"/v1/sessions/{answer['session_id']}", None, 10.0)
        tool_defs = [vf.Tool(name=t["name"], description=t["description"], parameters=t["parameters"])
                     for t in answer["tools"]]
        rows.append({"prompt": [{"role": "system", "content": answer["system_prompt"]},
                                {"role": "user", "content": answer["task_message"]}],
                     "answer": "", "info": {"cuda_task": task}})
    return CudaAgentVfEnv(serve=serve, device=device, policy=policy, turn_limit=turn_limit,
                          grade_timeout_s=grade_timeout_s, call_timeout_s=call_timeout_s, busy_wait_s=busy_wait_s,
                          dataset=Dataset.from_list(rows), eval_dataset=Dataset.from_list(rows), tool_defs=tool_defs,
                          rubric=_judge_rubric(schedule), max_turns=max_turns, **kwargs)
