"""HTTP client of the cuda-agent environment server (docs/server.md), for the verl plug-in.

Standard library only (urllib); the async methods run the blocking request in a thread so that
many rollouts share one event loop. A ``429`` is retried after its ``Retry-After`` seconds (a
``503`` likewise), at most ``max_attempts`` times; other errors raise ``ServerError`` with the
server's ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class ServerError(Exception):
    """A request the server refused or could not answer (after retries)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass
class ServerClient:
    """Talks to one ``cuda-agent serve`` at ``base_url`` (e.g. ``http://127.0.0.1:8080``)."""

    base_url: str
    token: str | None = None
    timeout_s: float = 1800.0  # a grade or evaluate runs a whole judgement
    max_attempts: int = 8
    max_retry_after_s: float = 60.0
    sleep: Callable[[float], Any] = field(default=asyncio.sleep, repr=False)
    retries: int = 0  # how many 429/503 answers were retried (for metrics and tests)

    def _request_once(self, method: str, path: str, body: dict | None) -> tuple[int, dict, dict]:
        url = self.base_url.rstrip("/") + path
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return response.status, dict(response.headers), json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                payload = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                payload = {"error": {"code": "bad_body", "message": raw[:200].decode(errors="replace")}}
            return error.code, dict(error.headers), payload

    async def request(self, method: str, path: str, body: dict | None = None) -> dict:
        """One API call; 429/503 are waited out (Retry-After), other failures raise ServerError."""
        for attempt in range(1, self.max_attempts + 1):
            status, headers, payload = await asyncio.to_thread(self._request_once, method, path, body)
            if status < 300:
                return payload
            error = payload.get("error", {}) if isinstance(payload, dict) else {}
            if status in (429, 503) and attempt < self.max_attempts:
                self.retries += 1
                await self.sleep(_retry_after(headers, attempt, self.max_retry_after_s))
                continue
            raise ServerError(status, str(error.get("code", "unknown")), str(error.get("message", payload)))
        raise AssertionError("unreachable")

    async def open_session(self, task: Any, device: str | None, policy: str | None, turn_limit: int | None) -> dict:
        body: dict[str, Any] = {"task": task}
        if device:
            body["device"] = device
        if policy:
            body["policy"] = policy
        if turn_limit:
            body["turn_limit"] = int(turn_limit)
        return await self.request("POST", "/v1/sessions", body)

    async def call(self, session_id: str, call_id: str, tool: str, arguments: Any) -> dict:
        return await self.request(
            "POST", f"/v1/sessions/{session_id}/calls", {"call_id": call_id, "tool": tool, "arguments": arguments}
        )

    async def grade(self, session_id: str) -> dict:
        return await self.request("POST", f"/v1/sessions/{session_id}/grade", {})

    async def close(self, session_id: str) -> dict:
        return await self.request("DELETE", f"/v1/sessions/{session_id}")

    async def evaluate(self, task: Any, files: dict[str, str], device: str | None, policy: str | None) -> dict:
        body: dict[str, Any] = {"task": task, "files": files}
        if device:
            body["device"] = device
        if policy:
            body["policy"] = policy
        return await self.request("POST", "/v1/evaluate", body)


def _retry_after(headers: dict, attempt: int, cap: float) -> float:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return min(max(float(value), 0.0), cap)
            except ValueError:
                break
    return min(2.0 ** (attempt - 1), cap)


def task_of(reference: str | None, extra_info: dict | None) -> Any:
    """The ``task`` field of a request: the inline program when the dataset carries it
    (``extra_info.task_source``), else the reference (``SUITE#NAME``, ``FILE.py``, ``DATA.jsonl#ID``)."""
    extra_info = extra_info or {}
    source = extra_info.get("task_source")
    if source:
        return {"source": source, "name": extra_info.get("task_name") or reference}
    return reference

