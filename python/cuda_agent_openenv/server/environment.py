"""``CudaAgentEnvironment``: OpenEnv's ``Environment`` over one ``cuda-agent serve`` session.

OpenEnv's server makes one instance per WebSocket session and runs its ``reset``/``step`` in a thread
of that session, so each instance is a plain blocking client of ``serve`` (``/v1``, docs/server.md).

- ``reset(task=..., seed=...)`` closes the previous episode's session and opens a new one: the
  observation carries the system prompt, the task message and the tools.
- ``step(CudaAgentAction(tool, arguments))`` runs one tool call; ``tool="grade"`` judges the
  workspace and ends the episode with the judge's reward; so does the call that spends the turn
  limit (the reward always arrives with the step that ends the episode).
- Back-pressure (``429``, ``503``) is an observation with ``error_code`` ``busy`` /
  ``too_many_sessions`` / ``stopping`` and ``retry_after_s``, the episode still open: send the same
  action again after that (``CudaAgentEnv.step_retrying`` does).
- A grade that does not answer within ``grade_timeout_s`` ends the episode with ``error_code
  judge_timeout`` and no reward, never a hang; a call likewise (``call_timeout``).
- ``serve`` restarting is survived: a request that cannot reach it is retried with the same
  ``call_id`` for ``reconnect_s`` (``serve`` answers a repeated ``call_id`` from its store and
  reopens open sessions from its state folder).
- Misuse (a step before ``reset``, after the episode ended) raises with what to do instead.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from cuda_agent_openenv.models import GRADE, CudaAgentAction, CudaAgentObservation, CudaAgentState
from cuda_agent_openenv.server.serve_http import ServeHTTP, error_of, retry_after
from cuda_agent_verl.reward import SCHEDULES, schedule_reward


@dataclass
class AdapterConfig:
    serve_url: str
    token: str | None = None
    tasks: list[Any] = field(default_factory=list)  # what reset() picks from when it names no task
    device: str | None = None  # None: serve's --device
    policy: str | None = None
    turn_limit: int | None = None  # None: serve's --turn-limit
    reward_schedule: str = "paper"  # paper (the judge's −1/1/2/3), binary, speedup
    call_timeout_s: float = 900.0
    grade_timeout_s: float = 1200.0
    reconnect_s: float = 30.0
    request_timeout_s: float = 60.0  # opening and closing sessions

    def __post_init__(self):
        if self.reward_schedule not in SCHEDULES:
            raise ValueError(f"unknown reward schedule {self.reward_schedule!r}; choose one of {', '.join(SCHEDULES)}")
        for name in ("call_timeout_s", "grade_timeout_s", "request_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


class EpisodeError(RuntimeError):
    """A step the environment cannot take (misuse): the message says what to do instead."""


class CudaAgentEnvironment(Environment[CudaAgentAction, CudaAgentObservation, CudaAgentState]):
    SUPPORTS_CONCURRENT_SESSIONS = True  # each instance is its own serve session

    def __init__(self, config: AdapterConfig):
        super().__init__()
        self.config = config
        self.http = ServeHTTP(config.serve_url, config.token)
        self._state = CudaAgentState()
        self._session: str | None = None
        self._lock = threading.Lock()

    # -- OpenEnv API -------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, task: Any = None,
              device: str | None = None, policy: str | None = None, turn_limit: int | None = None,
              **kwargs: Any) -> CudaAgentObservation:
        if kwargs:
            raise EpisodeError(f"reset() does not take {', '.join(sorted(kwargs))}; it takes seed, episode_id, "
                               "task, device, policy, turn_limit")
        with self._lock:
            self._close_session()
            task = task if task is not None else self._pick_task(seed)
            body: dict[str, Any] = {"task": task}
            for key, value in (("device", device or self.config.device), ("policy", policy or self.config.policy),
                               ("turn_limit", turn_limit or self.config.turn_limit)):
                if value is not None:
                    body[key] = value
            status, headers, answer = self._with_reconnect(
                lambda: self.http.request("POST", "/v1/sessions", body, self.config.request_timeout_s))
            self._state = CudaAgentState(task=task, device=body.get("device"))
            if status in (429, 503):
                code, message = error_of(answer)
                return CudaAgentObservation(text=message, is_error=True, error_code=_retry_code(status, code),
                                            retry_after_s=retry_after(headers))
            if status != 201:
                code, message = error_of(answer)
                raise EpisodeError(f"serve refused the session (HTTP {status} {code}): {message}")
            self._session = answer["session_id"]
            self._state = CudaAgentState(episode_id=self._session, task=task, device=body.get("device"),
                                         turn_limit=answer["turn_limit"])
            return CudaAgentObservation(text=answer["task_message"], session_id=self._session,
                                        turn_limit=answer["turn_limit"], system_prompt=answer["system_prompt"],
                                        task_message=answer["task_message"], tools=answer["tools"])

    def step(self, action: CudaAgentAction, timeout_s: float | None = None, **kwargs: Any) -> CudaAgentObservation:
        with self._lock:
            if self._session is None:
                raise EpisodeError("no open episode: call reset() first")
            if self._state.done:
                raise EpisodeError(f"the episode has ended (reward {self._state.reward}); call reset() for a new one")
            self._state.step_count += 1
            if action.tool == GRADE:
                return self._grade(prefix="", timeout_s=timeout_s)
            return self._call(action, timeout_s)

    @property
    def state(self) -> CudaAgentState:
        return self._state

    def close(self) -> None:
        with self._lock:
            self._close_session()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="cuda_agent", version="1",
            description="Write CUDA kernels for a PyTorch program in a sandboxed workspace; the cuda-agent judge "
                        "grades the workspace (reward -1/1/2/3: fails, correct, faster than eager, faster than "
                        "torch.compile).")

    # -- the episode -------------------------------------------------------------------------------

    def _call(self, action: CudaAgentAction, timeout_s: float | None) -> CudaAgentObservation:
        call_id = action.call_id or f"{self._session}-{self._state.step_count}"
        body = {"call_id": call_id, "tool": action.tool, "arguments": action.arguments}
        timeout = timeout_s or self.config.call_timeout_s
        try:
            status, headers, answer = self._with_reconnect(
                lambda: self.http.request("POST", f"/v1/sessions/{self._session}/calls", body, timeout))
        except TimeoutError:
            return self._end(None, f"the {action.tool} call did not answer within {timeout:g} s; the episode ends "
                             "without a verdict (reward None)", error_code="call_timeout")
        if status == 200:
            self._state.calls_used = answer["calls_used"]
            obs = answer["observation"]
            if answer["calls_used"] >= answer["turn_limit"]:
                return self._grade(prefix=obs["text"] + "\n\n[turn limit reached: the workspace is graded]\n",
                                   timeout_s=None, call_is_error=obs["is_error"])
            return self._observation(text=obs["text"], is_error=obs["is_error"])
        code, message = error_of(answer)
        if status in (429, 503):
            self._state.step_count -= 1
            return self._observation(text=message, is_error=True, error_code=_retry_code(status, code),
                                     retry_after_s=retry_after(headers))
        if status == 409 and code == "turn_limit":
            return self._grade(prefix="[turn limit reached: the workspace is graded]\n", timeout_s=None)
        if status == 409:  # graded, expired, interrupted or closed by someone else
            return self._end(None, message, error_code=code)
        if status == 400:  # the action itself: the model sees why
            self._state.step_count -= 1
            return self._observation(text=f"{message}", is_error=True, error_code="bad_action")
        return self._end(None, f"serve answered HTTP {status} {code}: {message}", error_code="server_error")

    def _grade(self, prefix: str, timeout_s: float | None, call_is_error: bool = False) -> CudaAgentObservation:
        timeout = timeout_s or self.config.grade_timeout_s
        try:
            status, headers, answer = self._with_reconnect(
                lambda: self.http.request("POST", f"/v1/sessions/{self._session}/grade", {}, timeout))
        except TimeoutError:
            return self._end(None, prefix + f"the judge did not answer within {timeout:g} s (grade timeout); the "
                             "episode ends without a verdict (reward None, not -1)", error_code="judge_timeout")
        if status in (429, 503):
            code, message = error_of(answer)
            self._state.step_count -= 1
            return self._observation(text=prefix + message, is_error=True, error_code=_retry_code(status, code),
                                     retry_after_s=retry_after(headers))
        if status != 200:
            code, message = error_of(answer)
            return self._end(None, prefix + f"grade failed (HTTP {status} {code}): {message}", error_code=code)
        result = answer.get("result") or {}
        reward = schedule_reward(self.config.reward_schedule, answer.get("reward"), result)
        text = prefix + f"reward: {answer.get('reward')}\noutcome: {result.get('outcome')}\nstage: " \
                        f"{result.get('stage')}\nreason: {result.get('reason')}"
        self._state.graded = True
        return self._end(reward, text, result=result, is_error=call_is_error)

    def _end(self, reward: float | None, text: str, error_code: str | None = None,
             result: dict | None = None, is_error: bool = False) -> CudaAgentObservation:
        self._state.done = True
        self._state.reward = reward
        return self._observation(text=text, is_error=is_error or error_code is not None, error_code=error_code,
                                 result=result, done=True, reward=reward)

    def _observation(self, **fields: Any) -> CudaAgentObservation:
        return CudaAgentObservation(session_id=self._session, calls_used=self._state.calls_used,
                                    turn_limit=self._state.turn_limit, **fields)

    # -- plumbing ----------------------------------------------------------------------------------

    def _pick_task(self, seed: int | None) -> Any:
        if not self.config.tasks:
            raise EpisodeError("reset() needs a task: pass reset(task='SUITE#level1/19_ReLU' or a file) or start the "
                               "server with --task")
        if seed is None:
            return random.choice(self.config.tasks)
        return self.config.tasks[seed % len(self.config.tasks)]

    def _with_reconnect(self, send):
        """``send()``; while serve cannot be reached, again (same body, so the same call_id) until
        ``reconnect_s`` has passed."""
        deadline = time.monotonic() + self.config.reconnect_s
        while True:
            try:
                return send()
            except ConnectionError as error:
                if time.monotonic() >= deadline:
                    raise ConnectionError(f"cuda-agent serve is unreachable for {self.config.reconnect_s:g} s "
                                          f"(--reconnect): {error}") from error
                time.sleep(0.25)

    def _close_session(self) -> None:
        if self._session is None:
            return
        session, self._session = self._session, None
        try:
            self.http.request("DELETE", f"/v1/sessions/{session}", None, 10.0)
        except (ConnectionError, TimeoutError):
            pass  # serve's TTL removes it


def _retry_code(status: int, code: str) -> str:
    return "stopping" if status == 503 else code
