"""Served jobs: a job that answers more than once (docs/harness-protocol.md "Served jobs").

A trusted job whose spec has "serve": {"answers_dir", "go_dir", "stop", "timeout_s", "requests"} writes
its main result as an answer (answers_dir/<first request>.json) once its main work is done, and goes
on: for each further request name in order it waits for the judge's go file go_dir/go_<name> (go.py:
"go" or a JSON object of fields), handles it and writes answers_dir/<name>.json, a result object of its
own (ok, error_kind, reason, ..., seconds). `stop`, or no go within `timeout_s`, ends the serving; the
job then writes its final result as any job does. Every answer is written atomically, so the judge,
which polls for it, never reads half a file. An exception while handling a request becomes that
answer's failure (JobError: its kind; anything else: "internal"), not the job's.

The reference job serves the comparisons of one judgement this way: the expected outputs stay in its
memory instead of travelling through files, and the judgement creates no CUDA context per comparison.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from . import go
from .errors import JobError, new_result, run_reporting
from .spec import require, write_result


class Serving:
    """The "serve" section of a spec, or none (`active` false: the job answers only at its end)."""

    def __init__(self, spec: dict[str, Any]):
        serve = spec.get("serve")
        self.active = serve is not None
        self.failed: list[str] = []  # the requests whose handling raised (not a mismatch: an error)
        if not self.active:
            return
        if not isinstance(serve, dict):
            raise JobError("internal", f"spec: serve must be an object, not {serve!r}")
        self.answers_dir = require(serve, "answers_dir", str)
        self.go_dir = require(serve, "go_dir", str)
        self.stop = require(serve, "stop", str)
        self.timeout_s = float(require(serve, "timeout_s", (int, float)))
        self.requests = require(serve, "requests", list)
        if not self.requests or not all(isinstance(r, str) and r.isidentifier() for r in self.requests):
            raise JobError("internal", f"spec: serve.requests must be names, not {self.requests!r}")

    def answer(self, name: str, answer: dict[str, Any]) -> None:
        """Writes the answer to the request `name`."""
        write_result(os.path.join(self.answers_dir, f"{name}.json"), answer)

    def serve(self, handle: Callable[[str, dict[str, Any], dict[str, Any]], None]) -> list[str]:
        """Waits for the go of each request after the first and answers it with
        `handle(name, fields, answer)`; returns the names answered. Ends at `stop` or a go's timeout."""
        answered = []
        for name in self.requests[1:]:
            answer = new_result()
            waiting = {"wait_for": {"go": os.path.join(self.go_dir, f"go_{name}"), "stop": self.stop,
                                    "timeout_s": self.timeout_s}}
            if not go.wait_for_go(waiting, answer):
                break
            fields = {k: v for k, v in waiting.items() if k != "wait_for"}
            start = time.perf_counter()

            def handled(name: str = name, fields: dict[str, Any] = fields, answer: dict[str, Any] = answer) -> None:
                try:
                    handle(name, fields, answer)
                except BaseException:
                    self.failed.append(name)
                    raise

            run_reporting(handled, answer)
            answer["seconds"] = time.perf_counter() - start
            self.answer(name, answer)
            answered.append(name)
        return answered

