"""Early jobs: a job the judge starts before its inputs exist does its set-up, then waits for a go.

A job is forked, jailed and gets a CUDA context in about 0.3 s on the H200 machine (a profile job
also starts its profiler: seconds). The judge starts the candidate's `candidate` and `profile` jobs
and the `compare` jobs at the beginning of a judgement, with "wait_for": {"go": PATH, "stop": PATH,
"timeout_s": S} in their spec, so that this set-up overlaps the build; a job waits for `go` before it
loads anything, reads any file or runs any work on the GPU.

The go file is written by the judge (trusted). It holds "go" or a JSON object of spec fields known only
at the go (e.g. the paths a spot-check comparison reads); they are added to the spec. `stop`, or no go
within `timeout_s`, calls the job off: the result says ok false, error_kind "not_started".

A standby (a profile job started for a later judgement, docs/harness-protocol.md "Standby jobs") has its
go file in its own writable folder and "consume": true: its go carries the judgement's secrets (the
timing seed, the spot-checked calls), so the job deletes it as soon as it has read it, before any
candidate code runs.
"""

from __future__ import annotations

import json
import os
import time

from .errors import JobError
from .spec import require

POLL_SECONDS = 0.002


def prepare(spec: dict) -> None:
    """Set-up that needs nothing of the job's inputs: a CUDA context for a job on the GPU."""
    if spec.get("device") == "cuda":
        import torch
        torch.cuda.init()


def wait_for_go(spec: dict, result: dict) -> bool:
    """Waits for the judge's go (see the module doc); without "wait_for" goes at once. Adds the go's
    spec fields to `spec`, records the seconds waited (result["go_wait_seconds"]) and returns whether
    to go."""
    wait = spec.get("wait_for")
    if wait is None:
        return True
    go = require(wait, "go", str)
    stop = require(wait, "stop", str)
    start = time.monotonic()
    deadline = start + float(require(wait, "timeout_s", (int, float), default=3600))
    while time.monotonic() < deadline and not os.path.exists(stop):
        if os.path.exists(go):
            result["go_wait_seconds"] = time.monotonic() - start
            spec.update(go_fields(go))
            if wait.get("consume"):
                os.unlink(go)
            return True
        time.sleep(POLL_SECONDS)
    result.update(ok=False, error_kind="not_started",
                  reason="the judge called the job off before its go (the judgement stopped earlier)")
    return False


def go_fields(path: str) -> dict:
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
