"""The `reference` job (trusted: never loads candidate code): inputs and expected outputs of a task.

Writes to data_dir: init_inputs.pt, state_dict.pt (CPU), and per check seed inputs_{i}.pt (CPU); and to
expected_dir (default: data_dir) expected_{i}.pt (the reference output moved to the CPU). The judge keeps
expected_dir where the candidate's sandbox cannot see it. Every task failure is error_kind "task".
"""

from __future__ import annotations

import os
from collections import OrderedDict

import torch

from ..errors import phase
from ..models import build_reference, synchronize
from ..nested import as_arg_list, signature, to_cpu, to_device
from ..spec import require, require_device
from ..task_module import import_task


def run(spec: dict, result: dict) -> None:
    device = require_device(spec)
    task_path = require(spec, "task_path", str)
    data_dir = require(spec, "data_dir", str)
    init_seed = require(spec, "init_seed", int)
    check_seeds = require(spec, "check_seeds", list)
    result.update({"num_checks": 0, "output_signature": None})
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

    for i, seed in enumerate(check_seeds):
        torch.manual_seed(seed)
        with phase("task", f"get_inputs() (check {i})"):
            inputs = to_cpu(as_arg_list(task.get_inputs()))
        torch.save(inputs, os.path.join(data_dir, f"inputs_{i}.pt"))
        with phase("task", f"Model.forward (check {i})"):
            with torch.no_grad():
                output = model(*to_device(inputs, device))
            synchronize(device)
            output = to_cpu(output)
        torch.save(output, os.path.join(expected_dir, f"expected_{i}.pt"))
        if i == 0:
            result["output_signature"] = signature(output)
        result["num_checks"] = i + 1
