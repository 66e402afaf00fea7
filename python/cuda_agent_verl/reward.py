"""Single-turn reward function for verl (stage 1): ``custom_reward_function.path`` = this file,
``name`` = ``compute_score``.

The answer's files (``answer.extract_files``) are judged by the environment server's one-shot
``POST /v1/evaluate`` on the task of ``reward_model.ground_truth`` (or the inline program in
``extra_info.task_source``). The score is a dict: ``score`` plus fields verl logs per sample.

Schedules (``reward_kwargs.schedule`` in the config, or ``$CUDA_AGENT_REWARD_SCHEDULE``):

- ``paper`` (default): the server's milestone reward −1 / 1 / 2 / 3 (PAPER.md §3) unchanged;
- ``binary``: 1 when correct, −1 otherwise;
- ``speedup``: the speedup over ``torch.compile`` when correct, −1 otherwise (the paper's ablation).

A judgement that is not a verdict (the server's ``reward: null``: task or internal error) is
never turned into −1: the score is 0 and ``reward_null`` is 1, so the sample can be told apart
(see docs/training.md, "Null rewards"). An answer without files scores −1 without a request.
"""

from __future__ import annotations

import os
from typing import Any

from cuda_agent_verl.answer import extract_files
from cuda_agent_verl.server_client import ServerClient, ServerError, task_of

SCHEDULES = ("paper", "binary", "speedup")


def schedule_reward(schedule: str, reward: float | None, result: dict | None) -> float | None:
    """The reward of a judgement under ``schedule``; None when it is not a verdict."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown reward schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if reward is None:
        return None
    if schedule == "paper":
        return float(reward)
    correct = bool((result or {}).get("correct"))
    if schedule == "binary":
        return 1.0 if correct else -1.0
    if not correct:
        return -1.0
    speedup = ((result or {}).get("timing") or {}).get("speedup_vs_compile")
    return float(speedup) if isinstance(speedup, (int, float)) else 1.0


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict | None = None,
    server_url: str | None = None,
    schedule: str | None = None,
    device: str | None = None,
    policy: str | None = None,
    token: str | None = None,
    **_: Any,
) -> dict[str, Any]:
    """verl's reward-function signature (async: verl awaits it); the extra keyword arguments come
    from ``custom_reward_function.reward_kwargs``."""
    extra_info = extra_info or {}
    schedule = schedule or os.environ.get("CUDA_AGENT_REWARD_SCHEDULE", "paper")
    server_url = server_url or os.environ.get("CUDA_AGENT_SERVER_URL", "http://127.0.0.1:8080")
    device = device or extra_info.get("device")
    token = token or os.environ.get("CUDA_AGENT_SERVER_TOKEN")
    files, notes = extract_files(solution_str)
    base = {"reward_null": 0, "correct": 0, "files": len(files), "judge_reason": "", "data_source": data_source}
    if not files:
        reason = "the answer names no model_new.py or kernels/ file" + (f" ({'; '.join(notes)})" if notes else "")
        return {**base, "score": -1.0, "judge_reason": reason}
    client = ServerClient(server_url, token=token)
    try:
        answer = await client.evaluate(task_of(ground_truth, extra_info), files, device, policy)
    except ServerError as error:
        # The environment failed or refused the request: not a verdict on the answer.
        return {**base, "score": 0.0, "reward_null": 1, "judge_reason": str(error)}
    result = answer.get("result") or {}
    reward = schedule_reward(schedule, answer.get("reward"), result)
    if reward is None:
        return {**base, "score": 0.0, "reward_null": 1, "judge_reason": str(result.get("reason", "no verdict"))}
    return {**base, "score": reward, "correct": int(bool(result.get("correct"))),
            "judge_reason": str(result.get("reason", ""))}
