"""Early jobs: a job the judge starts before its inputs exist does its set-up, then waits for a go.

The go, stop, ready, then/prepared and time files: docs/harness-protocol.md, "Early jobs".
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from .errors import JobError
from .spec import require

POLL_SECONDS = 0.002


def prepare(spec: dict[str, Any]) -> None:
    """Set-up that needs nothing of the job's inputs: CUDA initialised for a job on the GPU (its
    context comes with its first device call)."""
    if spec.get("device") == "cuda":
        import torch
        torch.cuda.init()


def wait_for_go(spec: dict[str, Any], result: dict[str, Any]) -> bool:
    """Waits for the judge's go (see the module doc); without "wait_for" goes at once. Adds the go's
    spec fields to `spec`, records the seconds waited (result["go_wait_seconds"]) and returns whether
    to go."""
    wait = spec.get("wait_for")
    if wait is None:
        return True
    go = require(wait, "go", str)
    if wait.get("ready") is not None:
        mark(require(wait, "ready", str))
    waited = wait_for_file(go, wait)
    if waited is None:
        result.update(ok=False, error_kind="not_started",
                      reason="the judge called the job off before its go (the judgement stopped earlier)")
        return False
    result["go_wait_seconds"] = waited
    spec.update(go_fields(go))
    if wait.get("consume"):
        os.unlink(go)
    return True


def wait_for_then(spec: dict[str, Any], result: dict[str, Any]) -> bool:
    """The second go of a job that prepares first (docs/harness-protocol.md "Early jobs"): with "then":
    PATH in "wait_for", marks the trusted preparation done ("prepared": PATH) and waits for `then`,
    before which the job runs no candidate code; the judge gives it under the device lease the job's
    further work needs. Records the seconds waited (result["then_wait_seconds"]) and returns whether
    to go on (False, and "not_started", when stopped). Without "then" goes on at once."""
    return next_go(spec, result, "then", "prepared", "its preparation")


def wait_for_time(spec: dict[str, Any], result: dict[str, Any]) -> bool:
    """The third go of a job that checks the candidate before it times it (the candidate's profile job
    when it also verifies, docs/harness-protocol.md "Early jobs"): with "time": PATH in "wait_for", marks
    the checks done ("checked": PATH, once their outputs are written and the device is idle) and waits for
    `time`, which the judge gives under the exclusive lease once the checks' outputs were found right.
    Records the seconds waited (result["time_wait_seconds"]) and returns whether to go on (False, and
    "not_started", when stopped: a mismatch ends the judgement here). Without "time" goes on at once."""
    return next_go(spec, result, "time", "checked", "its checks")


def next_go(spec: dict[str, Any], result: dict[str, Any], go_key: str, done_key: str, done: str) -> bool:
    """A later go (wait_for[go_key]): marks what came before it `done` (wait_for[done_key]), waits for
    it and records the wait as result[go_key + "_wait_seconds"]; False (and "not_started") when stopped."""
    wait = spec.get("wait_for")
    if wait is None or wait.get(go_key) is None:
        return True
    go = require(wait, go_key, str)
    mark(require(wait, done_key, str))
    waited = wait_for_file(go, wait)
    if waited is None:
        result.update(ok=False, error_kind="not_started",
                      reason=f"the judge called the job off after {done} (the judgement stopped earlier)")
        return False
    result[f"{go_key}_wait_seconds"] = waited
    return True


def wait_for_file(path: str, wait: dict[str, Any]) -> float | None:
    """Seconds until `path` exists, or None at wait["stop"] or after wait["timeout_s"]."""
    stop = require(wait, "stop", str)
    start = time.monotonic()
    deadline = start + float(require(wait, "timeout_s", (int, float), default=3600))
    while time.monotonic() < deadline and not os.path.exists(stop):
        if os.path.exists(path):
            return time.monotonic() - start
        time.sleep(POLL_SECONDS)
    return None


def mark(path: str) -> None:
    """Creates the mark `path` ("ready", "prepared": its existence is the signal; the judge only tests
    for it)."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(os.path.basename(path) + "\n")
    except OSError as exc:
        raise JobError("internal", f"cannot write the mark {path}: {exc}") from exc


def go_fields(path: str) -> dict[str, Any]:
    """The spec fields a go file carries: {} for a plain go."""
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    if not text.startswith("{"):
        return {}
    try:
        fields = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JobError("internal", f"go file {path}: not a JSON object: {exc}") from exc
    if not isinstance(fields, dict) or "wait_for" in fields or "result_path" in fields:
        raise JobError("internal", f"go file {path}: must be a JSON object of spec fields "
                                   f"(not wait_for or result_path)")
    return fields
