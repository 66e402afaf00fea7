"""The ``cuda_agent`` agent loop for verl (stage 3 and 4, multi-turn agentic PPO).

Per sample: open a session on the environment server (``POST /v1/sessions``) for the row's task;
build the prompt from the session's system prompt, task message and tools (what ``cuda-agent
solve`` shows a model); then, turn by turn, generate with verl's server manager, parse the tool
calls of the reply (``tool_parser``), run each on the server (``POST .../calls``) and append the
observations as context tokens (response mask 0); stop when the model answers without a call, at
the turn limit, or when the response budget is spent; grade the final workspace (``POST
.../grade``) and return its reward, which verl puts on the last response token.

Rules the loop keeps:

- The response always ends on a model token: observation tokens after the last model token are cut,
  or verl would place the outcome reward on a masked token, where PPO never sees it.
- A malformed call is answered with an error observation; a failed server request ends the
  episode with a flagged null reward; nothing here raises into verl's rollout worker.
- A ``null`` reward (no verdict) is never turned into −1: the sample gets reward 0, ``reward_null``
  in its extra fields, and (``null_reward: mask``, the default) an all-zero response mask so it
  trains nothing. ``null_reward: zero`` keeps the mask (reward 0 is then learned as such).

Settings come from the agent-loop YAML entry (``configs/train/agent_loop.yaml``), each with a
``CUDA_AGENT_*`` environment fallback: ``server_url``, ``token``, ``device``, ``policy``,
``max_turns`` (default ``multi_turn.max_assistant_turns``, else 150), ``max_output_tokens``
(per reply, default 8192), ``null_reward``.
"""

from __future__ import annotations

import logging
import os
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer

from cuda_agent_verl.server_client import ServerClient, ServerError, task_of
from cuda_agent_verl.tool_parser import parse_tool_calls

logger = logging.getLogger(__name__)

_END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>")
MALFORMED_HINT = (
    'Call a tool as <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>, '
    "one JSON object per block."
)


def _setting(value: Any, env: str, default: Any) -> Any:
    if value is not None:
        return value
    return os.environ.get(env, default)


@register("cuda_agent")
class CudaAgentLoop(AgentLoopBase):
    """verl agent loop that drives a ``cuda-agent serve`` session per sample."""

    def __init__(
        self,
        *args: Any,
        server_url: str | None = None,
        token: str | None = None,
        device: str | None = None,
        policy: str | None = None,
        max_turns: int | None = None,
        max_output_tokens: int | None = None,
        null_reward: str | None = None,
        tools: Any = None,  # verl passes its own tool list; the server's tools are used instead
        name: str | None = None,  # the registry entry's name, passed along by hydra
        client: ServerClient | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        del tools, name
        multi_turn = self.rollout_config.multi_turn
        self.response_length = int(self.rollout_config.response_length)
        self.max_turns = int(_setting(max_turns, "CUDA_AGENT_MAX_TURNS", multi_turn.max_assistant_turns or 150))
        self.max_output_tokens = int(_setting(max_output_tokens, "CUDA_AGENT_MAX_OUTPUT_TOKENS", 8192))
        self.max_observation_chars = int(multi_turn.max_tool_response_length or 0)
        self.device = _setting(device, "CUDA_AGENT_DEVICE", None)
        self.policy = _setting(policy, "CUDA_AGENT_POLICY", None)
        self.null_reward = str(_setting(null_reward, "CUDA_AGENT_NULL_REWARD", "mask"))
        if self.null_reward not in ("mask", "zero"):
            raise ValueError(f"null_reward must be 'mask' or 'zero', got {self.null_reward!r}")
        self.client = client or ServerClient(
            str(_setting(server_url, "CUDA_AGENT_SERVER_URL", "http://127.0.0.1:8080")),
            token=_setting(token, "CUDA_AGENT_SERVER_TOKEN", None),
        )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        extra_info = dict(kwargs.get("extra_info") or {})
        reward_model = dict(kwargs.get("reward_model") or {})
        reference = reward_model.get("ground_truth") or extra_info.get("task")
        device = self.device or extra_info.get("device")
        episode = _Episode(request_id=uuid4().hex)
        session_id: str | None = None
        try:
            session = await self.client.open_session(task_of(reference, extra_info), device, self.policy,
                                                     self.max_turns)
            session_id = session["session_id"]
            await self._turns(session, sampling_params, episode)
            with simple_timer("compute_score", episode.metrics):
                graded = await self.client.grade(session_id)
            episode.reward = graded.get("reward")
            episode.judge_reason = str((graded.get("result") or {}).get("reason", ""))
        except ServerError as error:
            episode.stop_reason = episode.stop_reason or f"server_error: {error}"
            episode.reward = None
            episode.judge_reason = str(error)
        except Exception as error:  # never kill verl's rollout worker
            logger.exception("cuda_agent episode failed")
            episode.stop_reason = f"loop_error: {type(error).__name__}: {error}"
            episode.reward = None
        finally:
            if session_id is not None:
                try:
                    await self.client.close(session_id)
                except Exception:  # noqa: BLE001 — a session left open expires by its TTL
                    logger.warning("could not close session %s", session_id)
        return self._output(episode, session_id)

    async def _turns(self, session: dict, sampling_params: dict[str, Any], episode: _Episode) -> None:
        server_tools = list(session.get("tools") or [])
        tool_specs = [{"type": "function", "function": tool} for tool in server_tools]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.get("system_prompt", "")},
            {"role": "user", "content": session.get("task_message", "")},
        ]
        episode.prompt_ids = await self.ct_build_initial_tokens(messages, tools=tool_specs)
        episode.runtime = list(episode.prompt_ids)
        for turn in range(1, self.max_turns + 1):
            remaining = self.response_length - len(episode.mask)
            params = dict(sampling_params)
            params["max_tokens"] = max(1, min(self.max_output_tokens, remaining))
            with simple_timer("generate_sequences", episode.metrics):
                output = await self.server_manager.generate(
                    request_id=episode.request_id, prompt_ids=episode.runtime, sampling_params=params
                )
            logprobs = episode.logprobs if (episode.logprobs or output.log_probs) else None
            merged, episode.mask, new_logprobs = await self.ct_merge_assistant_token(
                episode.runtime, output.token_ids, episode.mask, logprobs,
                assistant_logprobs=output.log_probs or None,
            )
            episode.runtime = merged.token_ids
            if new_logprobs is not None:
                episode.logprobs = new_logprobs
            episode.assistant_turns = turn
            if len(episode.mask) >= self.response_length:
                episode.stop_reason = "response_budget"
                return
            text = self._decode(output.token_ids)
            content, calls = parse_tool_calls(text, server_tools)
            if not calls:
                episode.stop_reason = "model_finished"
                return
            previous = list(messages)
            messages.append(self._assistant_message(content, calls, turn))
            with simple_timer("tool_calls", episode.metrics):
                for index, call in enumerate(calls):
                    call_id = f"{episode.request_id}-{turn}-{index + 1}"
                    text, is_error, stop = await self._call(session["session_id"], call_id, call, episode)
                    messages.append({"role": "tool", "tool_call_id": call_id, "name": call.name or "invalid",
                                     "content": text})
                    if stop:
                        episode.stop_reason = stop
                        return
            if turn == self.max_turns:
                episode.stop_reason = "max_turns"
                return
            merged, mask, new_logprobs = await self.ct_merge_context_msg(
                previous, messages, episode.runtime, episode.mask, episode.logprobs or None, tools=tool_specs
            )
            if len(mask) >= self.response_length:
                episode.stop_reason = "response_budget"
                return
            episode.runtime, episode.mask = merged.token_ids, mask
            if episode.logprobs:
                episode.logprobs = new_logprobs or []
            episode.tool_turns += 1
        episode.stop_reason = "max_turns"

    async def _call(self, session_id: str, call_id: str, call: Any, episode: _Episode) -> tuple[str, bool, str | None]:
        """Runs one call: (observation text, is_error, stop reason or None)."""
        episode.tool_calls += 1
        if call.error is not None:
            episode.malformed_calls += 1
            episode.tool_errors += 1
            return f"error: {call.error}. {MALFORMED_HINT}", True, None
        try:
            answer = await self.client.call(session_id, call_id, call.name, call.arguments)
        except ServerError as error:
            if error.status == 409:  # the server's turn limit, or the session is closed/expired
                return f"error: {error.message}", True, "server_turn_limit"
            raise
        observation = answer.get("observation") or {}
        text = str(observation.get("text", ""))
        if self.max_observation_chars and len(text) > self.max_observation_chars:
            half = self.max_observation_chars // 2
            text = text[:half] + f"\n[... {len(text) - 2 * half} characters cut ...]\n" + text[-half:]
        is_error = bool(observation.get("is_error"))
        episode.tool_errors += int(is_error)
        return text, is_error, None

    def _decode(self, token_ids: list[int]) -> str:
        tokenizer: Any = self.tokenizer  # whatever verl handed over: a transformers tokenizer
        text = tokenizer.decode(token_ids, skip_special_tokens=False)
        for marker in (*_END_MARKERS, getattr(self.tokenizer, "eos_token", None) or "</s>"):
            text = text.replace(marker, "")
        return text

    @staticmethod
    def _assistant_message(content: str, calls: list, turn: int) -> dict[str, Any]:
        tool_calls = [
            {"id": f"call_{turn}_{i + 1}", "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in enumerate(calls)
            if c.error is None
        ]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return message

    def _output(self, episode: _Episode, session_id: str | None) -> AgentLoopOutput:
        mask = list(episode.mask)
        response_len = len(mask)
        response_ids = episode.runtime[len(episode.runtime) - response_len :] if response_len else []
        prompt_ids = (episode.runtime[: len(episode.runtime) - response_len] if episode.runtime
                      else list(episode.prompt_ids))
        # End on a model token: cut whatever follows the last token the model generated.
        end = max((i + 1 for i, m in enumerate(mask) if m), default=0)
        end = min(end, self.response_length)
        response_ids, mask = response_ids[:end], mask[:end]
        logprobs = episode.logprobs[:end] if episode.logprobs else None
        reward_null = episode.reward is None or end == 0
        reward = 0.0 if reward_null or episode.reward is None else float(episode.reward)
        if reward_null and self.null_reward == "mask":
            mask = [0] * len(mask)
        if not prompt_ids:
            prompt_ids = [getattr(self.tokenizer, "pad_token_id", None) or 0]
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids,
            response_mask=mask,
            response_logprobs=logprobs,
            reward_score=reward,
            num_turns=episode.assistant_turns + episode.tool_turns + 1,
            metrics=episode.metrics,  # type: ignore[arg-type]  # a dict: verl's pydantic model validates it
            extra_fields={
                "turn_scores": [],
                "tool_rewards": [],
                "reward_null": reward_null,
                "stop_reason": episode.stop_reason,
                "session_id": session_id or "",
                "judge_reason": episode.judge_reason,
                "tool_calls": episode.tool_calls,
                "tool_errors": episode.tool_errors,
                "malformed_calls": episode.malformed_calls,
                "server_retries": self.client.retries,
            },
        )


class _Episode:
    """The state of one rollout."""

    def __init__(self, request_id: str):
        self.request_id = request_id
        self.prompt_ids: list[int] = []
        self.runtime: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.metrics: dict[str, Any] = {}
        self.assistant_turns = 0
        self.tool_turns = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.malformed_calls = 0
        self.stop_reason = ""
        self.reward: float | None = None
        self.judge_reason = ""
