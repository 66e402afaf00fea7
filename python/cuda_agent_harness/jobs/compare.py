"""The `compare` job (trusted): expected outputs against the candidate's, by comparison.compare.

An actual output that torch.load(weights_only=True) refuses is error_kind "output_type"; any failed
check makes the job's error_kind "mismatch". Every check is reported, passing or not. With "device":
"cuda" both sides are moved to the GPU first (the comparison's passes over a GiB-sized output take
milliseconds there, seconds on a CPU); the device check of the comparison then sees both alike. As an
early job on the GPU it warms the comparison's kernels up while it waits for its go (warm_up).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

import torch

from ..comparison import Floors, Report, Tolerance, compare
from ..errors import JobError, describe
from ..models import load_trusted
from ..nested import to_device
from ..output_files import load_output
from ..phases import PhaseClock
from ..spec import require


def load_actual(path: str) -> tuple[object, Report | None]:
    """The candidate's output (output_files.load_output: mapped, weights_only=True), or a failed report
    when it cannot be loaded."""
    try:
        return load_output(path), None
    except BaseException as exc:  # noqa: BLE001 - any load failure is the candidate's
        report = Report()
        report.fail("output", f"{os.path.basename(path)} cannot be loaded with weights_only=True: "
                              f"{describe(exc)}")
        return None, report


def check_entry(index: int, report: Report) -> dict[str, Any]:
    entry = {"index": index}
    entry.update(report.to_dict())
    return entry


def warm_up(spec: dict[str, Any]) -> None:
    """An early compare job on the GPU, while it waits for its go: one comparison of two small float32
    tensors, so that the CUDA kernels the comparison launches are loaded (CUDA loads each on its first
    launch) before the judgement waits on this job. Never fails the job: the real comparison would
    meet the same error."""
    if spec.get("device") != "cuda":
        return
    try:
        tol = tolerance_of(spec)
        sample = torch.linspace(-1.0, 1.0, 64, device="cuda")
        compare(sample, sample.clone(), tol)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a warm-up only (a JobError of a bad tolerance included)
        pass


def tolerance_of(spec: dict[str, Any]) -> Tolerance:
    try:
        return Tolerance.from_spec(require(spec, "tolerance", dict))
    except ValueError as exc:
        raise JobError("internal", f"spec: {exc}") from exc


def compare_device(spec: dict[str, Any]) -> str:
    device = spec.get("device") or "cpu"
    if device not in ("cpu", "cuda"):
        raise JobError("internal", f"spec: device must be 'cpu' or 'cuda', not {device!r}")
    return device


# Beside an expected output's file (trusted, private): its noise floors (noise.py), when it has any.
FLOORS_SUFFIX = ".floors.json"


def save_floors(expected_path: str, floors: Floors) -> None:
    if floors:
        with open(expected_path + FLOORS_SUFFIX, "w", encoding="utf-8") as f:
            json.dump(floors, f)


def load_floors(expected_path: str) -> Floors:
    """The noise floors saved beside an expected output's file ({} when there are none)."""
    try:
        with open(expected_path + FLOORS_SUFFIX, encoding="utf-8") as f:
            raw = json.load(f)
    except FileNotFoundError:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, (int, float))
                                            and not isinstance(v, bool) for k, v in raw.items()):
        raise JobError("internal", f"{expected_path}{FLOORS_SUFFIX}: not a map of tensor paths to numbers")
    return {k: float(v) for k, v in raw.items()}


def compare_all(expected: list[Callable[[], object]], actual_paths: list[str], tol: Tolerance,
                device: str, result: dict[str, Any], floors: list[Floors] | None = None) -> None:
    """Compares each expected output (`expected[i]()` gives it) with the candidate's output in
    `actual_paths[i]` (with `floors[i]`, the reference's noise floors of that output, when given);
    fills result["checks"] and, when a check fails, the failure fields."""
    if len(expected) != len(actual_paths):
        raise JobError("internal", f"spec: {len(expected)} expected outputs but "
                                   f"{len(actual_paths)} actual_paths")
    checks: list[dict[str, Any]] = []
    result["checks"] = checks
    unloadable = False
    clock = PhaseClock(result)
    for i, (expected_of, actual_path) in enumerate(zip(expected, actual_paths, strict=False)):
        reference = expected_of()
        actual, report = load_actual(actual_path)
        clock.lap("load")
        if report is None:
            if device != "cpu":
                reference, actual = to_device(reference, device), to_device(actual, device)
            report = compare(reference, actual, tol,
                             floors=floors[i] if floors is not None and i < len(floors) else None)
        else:
            unloadable = True
        checks.append(check_entry(i, report))
        clock.lap("compare")

    failed = [c for c in checks if not c["ok"]]
    if failed:
        result["ok"] = False
        result["error_kind"] = "output_type" if unloadable else "mismatch"
        first = failed[0]
        result["reason"] = (f"check {first['index']}: {first['reason']} "
                            f"({len(failed)} of {len(checks)} checks failed)")


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    expected_paths = require(spec, "expected_paths", list)
    actual_paths = require(spec, "actual_paths", list)
    tol = tolerance_of(spec)
    device = compare_device(spec)
    compare_all([functools.partial(load_trusted, path) for path in expected_paths], actual_paths,
                tol, device, result, [load_floors(path) for path in expected_paths])
