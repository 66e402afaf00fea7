"""Where a job's time goes: seconds per named phase, in result["phase_seconds"] (the judge copies them
into its result's `jobs`, docs/judge-result.md)."""

from __future__ import annotations

import time


class PhaseClock:
    """lap(name) adds the seconds since the previous lap (or the start) to phase `name`: a phase that
    recurs (one per check) sums."""

    def __init__(self, result: dict):
        self.phases = result.setdefault("phase_seconds", {})
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = self.phases.get(name, 0.0) + (now - self.last)
        self.last = now
