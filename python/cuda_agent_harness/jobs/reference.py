"""The `reference` job (trusted: never loads candidate code): inputs and expected outputs of a task.

Writes to data_dir: init_inputs.pt, state_dict.pt (CPU), and per check seed inputs_{i}.pt (CPU); and to
expected_dir (default: data_dir) expected_{i}.pt (the reference output moved to the CPU). The judge keeps
expected_dir where the candidate's sandbox cannot see it. Every task failure is error_kind "task".

"input_scales" and "input_shifts" (optional, one number per check each) map the floating inputs of a check
to x * scale + shift, so a closed form that only matches the task's own input distribution fails (HACKS
B9), and a task whose inputs are all non-negative (where ReLU-like tasks are the identity, B7) also sees
negative values.
Where the task does not allow it (the forward raises, or gives NaN/Inf where the unscaled check 0 gave
none), that check falls back to the task's own inputs; `input_scales` and `input_shifts` in the result
say what was used.
The result's `float_dtypes` lists every floating dtype among inputs, weights and outputs (the judge's
precision check needs to know an fp32 task).
"""

from __future__ import annotations

import os
from collections import OrderedDict

import torch

from ..errors import JobError, phase
from ..models import build_reference, synchronize
from ..nested import as_arg_list, map_tensors, named_tensors, signature, to_cpu, to_device
from ..precision import apply_backend_flags
from ..spec import require, require_device
from ..task_module import import_task


def transformed(inputs: list, scale: float, shift: float) -> list:
    """The inputs with every floating tensor mapped to x * scale + shift (other values untouched)."""
    if scale == 1.0 and shift == 0.0:
        return inputs
    return map_tensors(inputs, lambda t: t * scale + shift if t.is_floating_point() else t)


def all_finite(value) -> bool:
    return all(bool(torch.isfinite(t).all()) for _, t in named_tensors(value, "output")
               if t.is_floating_point() or t.is_complex())


def float_dtypes(*values) -> list[str]:
    names = set()
    for value in values:
        for _, t in named_tensors(value, "value"):
            if t.is_floating_point() or t.is_complex():
                names.add(str(t.dtype).replace("torch.", ""))
    return sorted(names)


def run_forward(model, inputs: list, device: str, what: str):
    with phase("task", f"Model.forward ({what})"):
        with torch.no_grad():
            output = model(*to_device(inputs, device))
        synchronize(device)
        return to_cpu(output)


def per_check(spec: dict, key: str, count: int, default: float, positive: bool) -> list[float]:
    values = require(spec, key, list, default=[default] * count)
    if len(values) != count or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                       and (v > 0 or not positive) for v in values):
        raise JobError("internal", f"spec: {key} must hold {count} numbers"
                                   f"{' > 0' if positive else ''}, not {values!r}")
    return [float(v) for v in values]


def run(spec: dict, result: dict) -> None:
    device = require_device(spec)
    task_path = require(spec, "task_path", str)
    data_dir = require(spec, "data_dir", str)
    init_seed = require(spec, "init_seed", int)
    check_seeds = require(spec, "check_seeds", list)
    result.update({"num_checks": 0, "output_signature": None})
    scales = per_check(spec, "input_scales", len(check_seeds), 1.0, positive=True)
    shifts = per_check(spec, "input_shifts", len(check_seeds), 0.0, positive=False)
    result["backend_flags"] = apply_backend_flags(spec.get("backend_flags"))
    result["input_scales"] = []
    result["input_shifts"] = []
    expected_dir = spec.get("expected_dir") or data_dir
    os.makedirs(data_dir, exist_ok=True)
    os.makedirs(expected_dir, exist_ok=True)

    task = import_task(task_path)
    torch.manual_seed(init_seed)
    with phase("task", "get_init_inputs()"):
        init_inputs = as_arg_list(task.get_init_inputs())
    model = build_reference(task, init_inputs, None, device)
    with phase("task", "Model.state_dict()"):
        state_dict = OrderedDict((k, v.detach().cpu()) for k, v in model.state_dict().items())
    torch.save(to_cpu(init_inputs), os.path.join(data_dir, "init_inputs.pt"))
    torch.save(state_dict, os.path.join(data_dir, "state_dict.pt"))

    unscaled_finite = True
    for i, seed in enumerate(check_seeds):
        torch.manual_seed(seed)
        with phase("task", f"get_inputs() (check {i})"):
            inputs = to_cpu(as_arg_list(task.get_inputs()))
        scale, shift = (scales[i], shifts[i]) if i > 0 else (1.0, 0.0)
        output = None
        if scale != 1.0 or shift != 0.0:
            moved = transformed(inputs, scale, shift)
            try:
                output = run_forward(model, moved, device, f"check {i}, inputs x {scale:g} + {shift:g}")
            except JobError:
                output = None
            if output is not None and unscaled_finite and not all_finite(output):
                output = None
            if output is None:
                scale, shift = 1.0, 0.0  # the task does not allow this transform
            else:
                inputs = moved
        if output is None:
            output = run_forward(model, inputs, device, f"check {i}")
        if i == 0:
            unscaled_finite = all_finite(output)
            result["output_signature"] = signature(output)
            result["float_dtypes"] = float_dtypes(inputs, init_inputs, state_dict, output)
        torch.save(inputs, os.path.join(data_dir, f"inputs_{i}.pt"))
        torch.save(output, os.path.join(expected_dir, f"expected_{i}.pt"))
        result["input_scales"].append(scale)
        result["input_shifts"].append(shift)
        result["num_checks"] = i + 1
