"""The `profile` job: per-call times of the candidate, or of a baseline (eager / torch.compile).

A candidate process never builds the reference model; a baseline process never imports candidate code.
Input sets are built first (seeded, kept alive), then the model; `warmup` calls, then `iters` timed
calls, each on the next input set, with their outputs kept alive until the end. The candidate's calls run
with torch.nn.functional blocked, as in the `candidate` job, so profiling looks the same as checking.
"""

from __future__ import annotations

import contextlib

import torch

from .. import timing
from ..errors import JobError, phase
from ..guards import block_functional
from ..models import build_candidate, build_reference, load_trusted
from ..nested import as_arg_list
from ..spec import require, require_device
from ..task_module import import_task

TARGETS = ("candidate", "eager", "compile")


def build_model(spec: dict, target: str, task, init_inputs: list, state_dict: dict, device: str):
    """The model to time; a baseline failure is the task's ("task"), a candidate's has its own kinds."""
    if target == "candidate":
        candidate_dir = require(spec, "candidate_dir", str)
        extension_dir = require(spec, "extension_dir", str)
        return build_candidate(candidate_dir, extension_dir, init_inputs, state_dict, device)
    model = build_reference(task, init_inputs, state_dict, device)
    if target == "compile":
        with phase("task", "torch.compile(Model)"):
            model = torch.compile(model)
    return model


def run(spec: dict, result: dict) -> None:
    device = require_device(spec)
    target = require(spec, "target", str)
    if target not in TARGETS:
        raise JobError("internal", f"spec: target must be one of {', '.join(TARGETS)}, not '{target}'")
    task_path = require(spec, "task_path", str)
    seed = require(spec, "seed", int)
    warmup = require(spec, "warmup", int, default=5)
    iters = require(spec, "iters", int, default=20)
    flush_l2 = require(spec, "flush_l2", bool, default=True)
    if target == "compile":
        warmup = max(warmup, 1)  # the first call compiles; it must never be a timed one
    kind = "forward" if target == "candidate" else "task"
    result.update({
        "target": target, "device_us": None, "wall_us": [], "median_device_us": None,
        "median_wall_us": None, "mean_device_us": None, "kernels": [], "warmup": warmup,
        "iters": iters, "num_threads": torch.get_num_threads(),
    })
    if target == "compile":
        result["compile_seconds"] = None

    init_inputs = as_arg_list(load_trusted(require(spec, "init_inputs_path", str)))
    state_dict = load_trusted(require(spec, "state_dict_path", str))
    task = import_task(task_path)
    input_sets = timing.make_input_sets(task.get_inputs, seed, warmup + iters, device)
    result["input_sets"] = len(input_sets)
    model = build_model(spec, target, task, init_inputs, state_dict, device)

    def call(inputs: list):
        return model(*inputs)

    guard = block_functional() if target == "candidate" else contextlib.nullcontext()
    with torch.no_grad(), guard:
        first_seconds = timing.warm_up(call, input_sets, warmup, device, kind)
        if device == "cuda":
            flusher = timing.L2Flusher(flush_l2)
            timings = timing.time_calls_cuda(call, input_sets, warmup, iters, kind, flusher)
        else:
            timings = timing.time_calls_cpu(call, input_sets, warmup, iters, kind)
    if target == "compile":
        result["compile_seconds"] = first_seconds
    result.update({
        "device_us": timings.device_us,
        "wall_us": timings.wall_us,
        "median_device_us": timing.median(timings.device_us),
        "median_wall_us": timing.median(timings.wall_us),
        "mean_device_us": timing.mean(timings.device_us),
        "kernels": timings.kernels,
    })
