"""Where a job's time goes: seconds per named phase, in result["phase_seconds"], and the process's CPU
seconds (all its threads) in the same phases, in result["phase_cpu_seconds"] — a phase whose CPU time
is far below its wall time waited (for the GPU, the driver, a lock), one near or above it computed (the
judge copies both into its result's `jobs`, docs/judge-result.md)."""

from __future__ import annotations

import time
from typing import Any


class PhaseClock:
    """lap(name) adds the seconds since the previous lap (or the start) to phase `name`: a phase that
    recurs (one per check) sums."""

    def __init__(self, result: dict[str, Any]):
        self.phases = result.setdefault("phase_seconds", {})
        self.cpu = result.setdefault("phase_cpu_seconds", {})
        self.last = time.perf_counter()
        self.last_cpu = time.process_time()

    def lap(self, name: str) -> None:
        now, now_cpu = time.perf_counter(), time.process_time()
        self.phases[name] = self.phases.get(name, 0.0) + (now - self.last)
        self.cpu[name] = self.cpu.get(name, 0.0) + (now_cpu - self.last_cpu)
        self.last, self.last_cpu = now, now_cpu
