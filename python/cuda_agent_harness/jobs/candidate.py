"""The `candidate` job (untrusted: runs candidate code; never sees expected outputs).

Loads the judge's files first (before any candidate code runs), then imports model_new, builds ModelNew
with the reference weights, and runs one guarded forward per input file, writing output_{i}.pt.
"""

from __future__ import annotations

import os

import torch

from ..errors import phase
from ..guards import block_functional
from ..models import build_candidate, load_trusted, synchronize
from ..nested import as_arg_list, to_cpu, to_device
from ..spec import require, require_device


def guarded_forward(model: torch.nn.Module, inputs: list, device: str):
    """One forward under no_grad with torch.nn.functional blocked, then a device-wide synchronise."""
    with torch.no_grad():
        with block_functional():
            output = model(*inputs)
    synchronize(device)
    return output


def run(spec: dict, result: dict) -> None:
    device = require_device(spec)
    candidate_dir = require(spec, "candidate_dir", str)
    extension_dir = require(spec, "extension_dir", str)
    init_inputs_path = require(spec, "init_inputs_path", str)
    state_dict_path = require(spec, "state_dict_path", str)
    input_paths = require(spec, "input_paths", list)
    output_dir = require(spec, "output_dir", str)
    result["checks_run"] = 0
    os.makedirs(output_dir, exist_ok=True)

    init_inputs = as_arg_list(load_trusted(init_inputs_path))
    state_dict = load_trusted(state_dict_path)
    input_sets = [as_arg_list(load_trusted(path)) for path in input_paths]

    model = build_candidate(candidate_dir, extension_dir, init_inputs, state_dict, device)
    for i, inputs in enumerate(input_sets):
        with phase("forward", f"check {i}: ModelNew.forward"):
            output = guarded_forward(model, to_device(inputs, device), device)
            torch.save(to_cpu(output), os.path.join(output_dir, f"output_{i}.pt"))
        result["checks_run"] = i + 1
