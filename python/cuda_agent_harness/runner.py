"""Runs one job: imports its module, catches every failure into the result, writes the result file.

A job module exposes `run(spec, result)`: it fills `result` as it goes (so a failure half-way still
reports what was done) and raises `JobError` for failures the protocol names. Anything else that escapes
is reported as `error_kind: "internal"` (a harness or judge bug, or an invalid spec).

A spec with "wait_for" is an early job (go.py): the runner does its set-up and waits for the judge's go
before `run`, unless the module waits itself (WAITS_FOR_GO: the profile job starts its profiler first).
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from . import go
from .errors import new_result, run_reporting
from .spec import write_result

JOB_MODULES = {
    "toolchain": "cuda_agent_harness.jobs.toolchain",
    "static": "cuda_agent_harness.jobs.static_check",
    "reference": "cuda_agent_harness.jobs.reference",
    "candidate": "cuda_agent_harness.jobs.candidate",
    "compare": "cuda_agent_harness.jobs.compare",
    "profile": "cuda_agent_harness.jobs.profile",
    "task_check": "cuda_agent_harness.jobs.task_check",
    "ncu_target": "cuda_agent_harness.jobs.ncu_target",
}


def wait_for_go(module: Any, spec: dict[str, Any], result: dict[str, Any]) -> bool:
    if spec.get("wait_for") is None:
        return True
    go.prepare(spec)
    warm_up = getattr(module, "warm_up", None)  # set-up of the job's own that needs none of its inputs
    if warm_up is not None:
        warm_up(spec)
    return go.wait_for_go(spec, result)


def run_job(job: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Runs `job` on `spec`, writes the result to spec["result_path"] and returns it."""
    return run_job_module(JOB_MODULES[job], spec)


def run_job_module(module_name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Runs the job module `module_name` (a harness job's, or another package's that speaks the same
    protocol: cuda_agent_synth.job) as run_job does."""
    result = new_result()
    start = time.perf_counter()

    def work() -> None:
        module = importlib.import_module(module_name)
        if getattr(module, "WAITS_FOR_GO", False) or wait_for_go(module, spec, result):
            module.run(spec, result)

    run_reporting(work, result)
    result["seconds"] = time.perf_counter() - start
    write_result(spec["result_path"], result)
    return result
