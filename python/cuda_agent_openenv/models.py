"""The action, observation and state of the cuda-agent OpenEnv environment (OpenEnv's pydantic types).

An episode is one `cuda-agent serve` session (docs/server.md): `reset()` opens it, each `step()` runs
one tool call in its workspace, and the step whose action is ``grade`` (or the call that spends the
turn limit) judges the workspace and ends the episode with the judge's reward.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

GRADE = "grade"

# error_code values a trainer may retry after `retry_after_s` (the episode is not over).
RETRYABLE = frozenset({"busy", "too_many_sessions", "stopping"})


class CudaAgentAction(Action):
    """One tool call: ``tool`` is one of the session's tools (Bash, Read, Write, Edit, MultiEdit,
    Glob, Grep, TodoWrite, BashOutput, KillBash) or ``grade`` (judge the workspace, end the episode).
    ``arguments``: a JSON object, or the string a model emitted (a string that is not JSON is an
    error observation the model sees). ``call_id``: optional; by default ``<session>-<step>``, so a
    retried step is answered from the server's store instead of running twice."""

    tool: str = Field(..., min_length=1, description="a tool of the session, or 'grade'")
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    call_id: str | None = Field(default=None, max_length=200)


class CudaAgentObservation(Observation):
    """What a step answers. ``reward`` (OpenEnv's field) is set only on the step that ends the
    episode: −1, 1, 2, 3 from the judge, or ``None`` when there was no verdict (``error_code`` or
    ``result.outcome`` says why; a trainer must not turn it into −1)."""

    text: str = ""
    is_error: bool = False
    # Set when something other than the tool answered: busy / too_many_sessions / stopping
    # (retryable, see retry_after_s), judge_timeout, call_timeout, turn_limit, session_closed,
    # server_unreachable, server_error.
    error_code: str | None = None
    retry_after_s: float | None = None
    session_id: str | None = None
    calls_used: int = 0
    turn_limit: int = 0
    # Only on reset: what `cuda-agent solve` gives a model first.
    system_prompt: str | None = None
    task_message: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    # Only on the step that graded: the judge's JudgeResult (docs/judge-result.md).
    result: dict[str, Any] | None = None


class CudaAgentState(State):
    """``episode_id`` is the server's session id; ``step_count`` the steps of this episode."""

    task: Any | None = None
    device: str | None = None
    calls_used: int = 0
    turn_limit: int = 0
    done: bool = False
    reward: float | None = None
    graded: bool = False
