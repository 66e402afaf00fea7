"""Shared helpers for the harness tests: tiny tasks and candidates, and ways to run jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import torch

from cuda_agent_harness.runner import run_job

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Model = Linear, then x * 2 + 1: there is a state_dict to load, and inputs mix a tensor and an int.
TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x, offset):
        return self.lin(x) * 2 + 1 + offset

def get_inputs():
    return [torch.randn(16, 8), 3]

def get_init_inputs():
    return [8]
"""

# The candidates below stand in for a kernel with NumPy: on the CPU the arithmetic then happens outside
# torch's dispatcher, as it would in a C++ kernel, so the op guard allows it (only creation, metadata and
# the wrapping `lift_fresh` of torch.from_numpy are dispatched).
GOOD_CANDIDATE = """
import numpy as np
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x, offset):
        print("candidate output on stdout")
        print("candidate output on stderr", file=__import__("sys").stderr)
        w = self.lin.weight.detach().numpy()
        b = self.lin.bias.detach().numpy()
        y = x.numpy() @ w.T + b
        return torch.from_numpy(y * 2 + 1 + offset)
"""

WRONG_CANDIDATE = GOOD_CANDIDATE.replace("y * 2 + 1 + offset", "y * 2 + 1.5 + offset")

# Computes with torch (aten.mm, aten.add, ...): refused by the op guard, though the output is right.
TORCH_OPS_CANDIDATE = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x, offset):
        y = torch.matmul(x, self.lin.weight.t()) + self.lin.bias
        return y * 2 + 1 + offset
"""

FUNCTIONAL_CANDIDATE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x, offset):
        y = F.relu(x)
        return y
"""


def write(path, text: str) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))
    return str(path)


def read_strict_json(path) -> dict:
    """The result file, parsed as strict JSON (NaN/Infinity literals are refused)."""
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    with open(path, encoding="utf-8") as f:
        return json.load(f, parse_constant=refuse)


def run(job: str, spec: dict) -> dict:
    """Runs a job in this process and returns the result as read back from its file."""
    returned = run_job(job, spec)
    written = read_strict_json(spec["result_path"])
    assert written["ok"] == returned["ok"]
    return written


def run_cli(job: str, spec: dict, tmp_path, preload: str = "",
            env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Runs `python3 -m cuda_agent_harness JOB --spec` in a child process; `preload`, Python code run
    first in that process (the harness's process watch then sees what it did as its own baseline);
    `env`, variables added to its environment."""
    spec_path = os.path.join(str(tmp_path), f"{job}.spec.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, **(env or {}))
    start = ["-m", "cuda_agent_harness"]
    if preload:
        start = ["-c", preload + "\nimport runpy\nrunpy.run_module('cuda_agent_harness', run_name='__main__', "
                 "alter_sys=True)"]
    proc = subprocess.run([sys.executable, *start, job, "--spec", spec_path],
                          env=env, capture_output=True, text=True, timeout=120)
    result = None
    if os.path.exists(spec["result_path"]):
        result = read_strict_json(spec["result_path"])
    return proc, result


def reference_spec(tmp_path, task_path: str, seeds=(101, 102, 103)) -> dict:
    return {
        "result_path": str(tmp_path / "reference.json"),
        "task_path": task_path,
        "device": "cpu",
        "data_dir": str(tmp_path / "data"),
        "init_seed": 7,
        "check_seeds": list(seeds),
    }


def make_reference(tmp_path, task_source: str = TASK, seeds=(101, 102, 103)) -> dict:
    """Writes the task and runs the reference job; returns its spec (asserting it succeeded)."""
    task_path = write(tmp_path / "task" / "model.py", task_source)
    spec = reference_spec(tmp_path, task_path, seeds)
    result = run("reference", spec)
    assert result["ok"], result
    return spec


def write_candidate(tmp_path, source: str, name: str = "cand") -> tuple[str, str]:
    """A candidate dir holding model_new.py, and an empty extension dir."""
    candidate_dir = tmp_path / name
    write(candidate_dir / "model_new.py", source)
    extension_dir = tmp_path / f"{name}_ext"
    extension_dir.mkdir(exist_ok=True)
    return str(candidate_dir), str(extension_dir)


def candidate_spec(tmp_path, ref_spec: dict, candidate_dir: str, extension_dir: str,
                   name: str = "cand") -> dict:
    data = ref_spec["data_dir"]
    return {
        "result_path": str(tmp_path / f"{name}_result.json"),
        "device": "cpu",
        "candidate_dir": candidate_dir,
        "extension_dir": extension_dir,
        "init_inputs_path": os.path.join(data, "init_inputs.pt"),
        "state_dict_path": os.path.join(data, "state_dict.pt"),
        "task_path": ref_spec["task_path"],
        "check_seeds": list(ref_spec["check_seeds"]),
        "output_dir": str(tmp_path / f"{name}_out"),
    }


def compare_spec(tmp_path, ref_spec: dict, cand_spec: dict, atol=0.01, rtol=0.01) -> dict:
    n = len(ref_spec["check_seeds"])
    return {
        "result_path": str(tmp_path / "compare.json"),
        "expected_paths": [os.path.join(ref_spec["data_dir"], f"expected_{i}.pt") for i in range(n)],
        "actual_paths": [os.path.join(cand_spec["output_dir"], f"output_{i}.pt") for i in range(n)],
        "tolerance": fixed_tolerance(atol, rtol),
    }


def fixed_tolerance(atol=0.01, rtol=0.01) -> dict:
    """The compare job's tolerance spec of the `paper` policy."""
    return {"mode": "fixed", "limits": {"default": {"atol": atol, "rtol": rtol}}}


def profile_spec(tmp_path, ref_spec: dict, target: str, candidate=None, warmup=2, iters=4) -> dict:
    data = ref_spec["data_dir"]
    spec = {
        "result_path": str(tmp_path / f"profile_{target}.json"),
        "device": ref_spec["device"],
        "target": target,
        "task_path": ref_spec["task_path"],
        "init_inputs_path": os.path.join(data, "init_inputs.pt"),
        "state_dict_path": os.path.join(data, "state_dict.pt"),
        "seed": 999,
        "warmup": warmup,
        "iters": iters,
        "flush_l2": True,
    }
    if candidate is not None:
        spec["candidate_dir"], spec["extension_dir"] = candidate
    return spec


def reference_weights_of(ref_spec: dict) -> dict:
    """The reference job's weights as a consumer gets them (state_dict.pt, or rebuilt from the seed)."""
    from cuda_agent_harness.models import reference_state_dict
    from cuda_agent_harness.task_module import import_task
    path = os.path.join(ref_spec["data_dir"], "state_dict.pt")
    state, _ = reference_state_dict(path, import_task(ref_spec["task_path"]), ref_spec["device"])
    return state


class Served:
    """A reference job with "serve", run on a thread of this process; the test plays the judge."""

    def __init__(self, tmp_path, timing=True, task=TASK, start=True):
        self.tmp = tmp_path
        task_path = write(tmp_path / "task" / "model.py", task)
        requests = ("reference", "compare", "compare_spots") if timing else ("reference", "compare")
        self.spec = reference_spec(tmp_path, task_path)
        self.spec["expected_dir"] = str(tmp_path / "private")
        for d in ("answers", "served", "outputs"):
            (tmp_path / d).mkdir()
        self.spec["serve"] = {"answers_dir": str(tmp_path / "answers"), "go_dir": str(tmp_path / "served"),
                              "stop": str(tmp_path / "served" / "stop"), "timeout_s": 30,
                              "requests": list(requests)}
        self.spec["tolerance"] = fixed_tolerance()
        if timing:
            self.spec["timing"] = {"seed": 999, "warmup": 2, "iters": 4, "spot_check_calls": [3, 1]}
        self.thread = threading.Thread(target=run_job, args=("reference", self.spec))
        if start:
            self.thread.start()

    def answer(self, name: str) -> dict:
        path = self.tmp / "answers" / f"{name}.json"
        deadline = time.monotonic() + 60
        while not path.exists():
            assert self.thread.is_alive() or path.exists(), f"the job ended without answering {name}"
            assert time.monotonic() < deadline, f"no answer to {name}"
            time.sleep(0.005)
        return read_strict_json(str(path))

    def go(self, name: str, keys: list, outputs: list) -> dict:
        paths = []
        for i, out in enumerate(outputs):
            paths.append(str(self.tmp / "outputs" / f"{name}_{i}.pt"))
            torch.save(out, paths[-1])
        go = self.tmp / "served" / f"go_{name}"
        with open(f"{go}.tmp", "w") as f:  # written whole, then renamed: as the judge gives a go
            json.dump({"expected_keys": keys, "actual_paths": paths}, f)
        os.replace(f"{go}.tmp", go)
        return self.answer(name)

    def end(self) -> dict:
        self.thread.join(60)
        assert not self.thread.is_alive()
        return read_strict_json(self.spec["result_path"])
