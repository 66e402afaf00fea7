"""Job failures: one exception type carrying the protocol's `error_kind`, and helpers to describe errors.

Jobs raise `JobError(kind, reason)`; the runner turns it into `ok: false` in the result. `phase()` wraps a
step so that anything it raises (SystemExit from candidate code included) becomes a `JobError` of the
step's kind, with the original exception kept as `__cause__` for the traceback.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable, Iterator
from typing import Any

MAX_REASON_CHARS = 300
TRACEBACK_LINES = 40


class JobError(Exception):
    """A failure the job reports in its result: `kind` is the error_kind, `reason` one line."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """Collapses whitespace (newlines included) and cuts the text to `limit` characters."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        return flat[: limit - 3] + "..."
    return flat


def describe(exc: BaseException) -> str:
    """`ValueError: message` on one line; the bare type name when the message is empty."""
    message = one_line(str(exc))
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


def traceback_tail(exc: BaseException | None, lines: int = TRACEBACK_LINES) -> str:
    """The last `lines` lines of the formatted traceback of `exc` ("" when there is none)."""
    if exc is None:
        return ""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def phase(kind: str, what: str) -> Iterator[None]:
    """Turns any exception raised inside into `JobError(kind, "<what> raised <Type>: <message>")`."""
    try:
        yield
    except JobError:
        raise
    except BaseException as exc:  # candidate code may raise SystemExit or KeyboardInterrupt
        raise JobError(kind, f"{what} raised {describe(exc)}") from exc


def new_result() -> dict[str, Any]:
    """The fields every result has."""
    return {"ok": True, "error_kind": None, "reason": "", "traceback": ""}


def mark_failed(result: dict[str, Any], kind: str, reason: str, tb: str = "") -> None:
    """Sets the failure fields of `result`."""
    result["ok"] = False
    result["error_kind"] = kind
    result["reason"] = reason
    result["traceback"] = tb


def run_reporting(work: Callable[[], None], result: dict[str, Any]) -> None:
    """Runs `work`; whatever it raises becomes the failure fields of `result` (a JobError its kind,
    anything else "internal": a harness or judge bug, or an invalid spec)."""
    try:
        work()
    except JobError as exc:
        mark_failed(result, exc.kind, exc.reason, traceback_tail(exc.__cause__))
    except BaseException as exc:  # noqa: BLE001 - every failure must end up in the result
        mark_failed(result, "internal", f"harness error: {describe(exc)}", traceback_tail(exc))
