"""Input sets from seeds: every process that needs a task's inputs makes them itself.

The reference job (expected outputs), the candidate job (the candidate's outputs) and the profile job
(timed calls) all call `make_input_set(task, seed, device)` with the seeds the judge chose, so no input
ever travels through a file: on CUDA `get_inputs()` runs under `torch.device("cuda")` and a
KernelBench-sized input (several GB) appears on the GPU in milliseconds instead of seconds of CPU
random numbers, a file write and a file read. A task whose `get_inputs()` raises under the device
context is made on the CPU and moved, in every process alike (the same code fails the same way).

The timed calls' input sets: set k of a profile with seed s comes from `timing_set_seed(s, k)`; a
profile uses `input_set_count(...)` sets round-robin (fewer than its calls when they would exceed
the budget), so the reference job can make the very inputs of any timed call (`timed_call_set`).
"""

from __future__ import annotations

from typing import Any

import torch

from .errors import phase
from .nested import as_arg_list, map_tensors, tensor_bytes, to_device

INPUT_BUDGET_BYTES = 2 << 30


def make_input_set(task: Any, seed: int, device: str, what: str = "") -> list[Any]:
    """get_inputs() after manual_seed(seed), on `device` (made there directly on CUDA, see above)."""
    label = f"get_inputs() ({what})" if what else "get_inputs()"
    torch.manual_seed(seed)
    if device == "cuda":
        try:
            with torch.device("cuda"):
                inputs = as_arg_list(task.get_inputs())
            made: list[Any] = to_device(inputs, device)
            return made
        except Exception:  # noqa: BLE001 - some tasks only work with CPU defaults
            torch.manual_seed(seed)
    with phase("task", label):
        made = to_device(as_arg_list(task.get_inputs()), device)
    return made


def transformed(inputs: list[Any], scale: float, shift: float) -> list[Any]:
    """The inputs with every floating tensor mapped to x * scale + shift (other values untouched)."""
    if scale == 1.0 and shift == 0.0:
        return inputs
    mapped: list[Any] = map_tensors(inputs, lambda t: t * scale + shift if t.is_floating_point() else t)
    return mapped


def timing_set_seed(seed: int, k: int) -> int:
    """The seed of input set k of a profile seeded with `seed`."""
    return (seed * 1_000_003 + k * 7_919 + 1) & 0x7FFF_FFFF_FFFF


def input_set_count(set_bytes: int, calls: int, budget_bytes: int = INPUT_BUDGET_BYTES) -> int:
    """How many distinct input sets a profile of `calls` calls keeps: all of them, or as many as fit
    in the budget (at least one); the calls use them round-robin."""
    if set_bytes <= 0:
        return max(1, calls)
    return max(1, min(calls, budget_bytes // set_bytes))


def timed_call_set(call: int, warmup: int, sets: int) -> int:
    """The input set timed call `call` (0-based, after `warmup` warm-up calls) runs on."""
    return (warmup + call) % sets


def make_timing_sets(task: Any, seed: int, calls: int, device: str,
                     budget_bytes: int = INPUT_BUDGET_BYTES) -> list[list[Any]]:
    """The input sets of a profile: set 0 first, then as many more as `input_set_count` allows."""
    first = make_input_set(task, timing_set_seed(seed, 0), device, "input set 0")
    count = input_set_count(tensor_bytes(first), calls, budget_bytes)
    return [first] + [make_input_set(task, timing_set_seed(seed, k), device, f"input set {k}")
                      for k in range(1, count)]
