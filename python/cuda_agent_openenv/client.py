"""OpenEnv client of the cuda-agent environment: ``CudaAgentEnv(base_url=...)``.

Async like every ``EnvClient`` (``.sync()`` for a blocking wrapper). One client is one WebSocket
session, hence one ``serve`` session at a time. ``message_timeout_s`` defaults to 1800 s: a grade
runs a whole judgement, and the adapter answers a judge that takes longer than its
``--grade-timeout`` with an explicit ``judge_timeout`` observation well before that.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from cuda_agent_openenv.models import RETRYABLE, CudaAgentAction, CudaAgentObservation, CudaAgentState


class CudaAgentEnv(EnvClient[CudaAgentAction, CudaAgentObservation, CudaAgentState]):
    def __init__(self, base_url: str, message_timeout_s: float = 1800.0, **kwargs: Any):
        super().__init__(base_url, message_timeout_s=message_timeout_s, **kwargs)

    def _step_payload(self, action: CudaAgentAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude={"metadata"} if not action.metadata else set())

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CudaAgentObservation]:
        observation = CudaAgentObservation(
            **payload.get("observation", {}), done=payload.get("done", False), reward=payload.get("reward")
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> CudaAgentState:
        return CudaAgentState(**payload)

    async def step_retrying(
        self, action: CudaAgentAction, max_wait_s: float = 600.0, sleep=asyncio.sleep
    ) -> StepResult[CudaAgentObservation]:
        """``step`` that waits out back-pressure: while the answer is a retryable error (``busy``,
        ``too_many_sessions``, ``stopping``), sleep its ``retry_after_s`` and send the same action
        again, for at most ``max_wait_s`` in all; then the last answer is returned as it is."""
        waited = 0.0
        while True:
            result = await self.step(action)
            obs = result.observation
            if obs.error_code not in RETRYABLE or waited >= max_wait_s:
                return result
            pause = min(max(obs.retry_after_s or 1.0, 0.1), max_wait_s - waited)
            await sleep(pause)
            waited += pause

    async def reset_retrying(self, max_wait_s: float = 600.0, sleep=asyncio.sleep, **kwargs: Any):
        """``reset`` that waits out ``too_many_sessions`` the same way."""
        waited = 0.0
        while True:
            result = await self.reset(**kwargs)
            obs = result.observation
            if obs.error_code not in RETRYABLE or waited >= max_wait_s:
                return result
            pause = min(max(obs.retry_after_s or 1.0, 0.1), max_wait_s - waited)
            await sleep(pause)
            waited += pause
