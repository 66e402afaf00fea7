"""GPU tests (skipped without CUDA): the jobs on device "cuda", profiler attribution, async errors."""

import os

import pytest
import torch

from helpers import (candidate_spec, compare_spec, profile_spec, reference_spec, run, run_cli, write,
                     write_candidate)

pytestmark = pytest.mark.gpu

GPU_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return self.lin(x) * 2 + 1

def get_inputs():
    return [torch.randn(2048, 2048)]

def get_init_inputs():
    return [2048]
"""

GPU_CANDIDATE = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return (torch.matmul(x, self.lin.weight.t()) + self.lin.bias) * 2 + 1
"""

# Does the matmul on a stream of its own and returns without waiting: the timing must still see it.
SIDE_STREAM_CANDIDATE = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.stream = None

    def forward(self, x):
        if self.stream is None:
            self.stream = torch.cuda.Stream()
        with torch.cuda.stream(self.stream):
            y = torch.matmul(x, self.lin.weight.t())
            y = torch.matmul(y, self.lin.weight.t())
        return torch.empty_like(x)
"""

# An out-of-range gather on the device: the error surfaces asynchronously, at the synchronise.
ASYNC_ERROR_CANDIDATE = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        index = torch.full((4,), 10**9, dtype=torch.long, device=x.device)
        return x.view(-1)[index]
"""


def gpu_reference(tmp_path, seeds=(1, 2)):
    task_path = write(tmp_path / "task" / "model.py", GPU_TASK)
    spec = reference_spec(tmp_path, task_path, seeds)
    spec["device"] = "cuda"
    result = run("reference", spec)
    assert result["ok"], result
    return spec


def test_toolchain_on_cuda(tmp_path):
    result = run("toolchain", {"result_path": str(tmp_path / "t.json"), "device": "cuda"})
    assert result["ok"], result
    props = torch.cuda.get_device_properties(0)
    gpu = result["gpu"]
    assert gpu["arch"] == f"sm_{props.major}{props.minor}"
    assert gpu["capability"] == f"{props.major}.{props.minor}"
    assert gpu["l2_bytes"] > 0 and gpu["sm_count"] > 0 and gpu["memory_bytes"] > 0
    assert result["cuda_home"] and result["torch_cuda_version"]
    assert any(os.path.isfile(os.path.join(d, "cuda_runtime.h")) for d in result["include_dirs"])
    assert all(os.path.isdir(d) for d in result["include_dirs"] + result["library_dirs"])


def test_pipeline_on_cuda(tmp_path):
    ref = gpu_reference(tmp_path)
    cand = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, GPU_CANDIDATE))
    cand["device"] = "cuda"
    result = run("candidate", cand)
    assert result["ok"], result
    output = torch.load(os.path.join(cand["output_dir"], "output_0.pt"), weights_only=True)
    assert output.device.type == "cpu"
    compared = run("compare", compare_spec(tmp_path, ref, cand))
    assert compared["ok"], compared


def test_eager_profile_on_cuda(tmp_path):
    ref = gpu_reference(tmp_path, seeds=(1,))
    result = run("profile", profile_spec(tmp_path, ref, "eager", iters=6))
    assert result["ok"], result
    assert len(result["device_us"]) == 6 and len(result["wall_us"]) == 6
    assert all(d > 0 for d in result["device_us"])
    # one stream: device time cannot exceed wall time (it would if range annotations were counted)
    assert all(d <= w * 1.05 for d, w in zip(result["device_us"], result["wall_us"]))
    names = [k["name"] for k in result["kernels"]]
    assert names, result
    assert not any("cuda_agent_call" in n for n in names)
    assert sum(k["calls"] for k in result["kernels"]) >= 6 * 2  # gemm + elementwise per call
    assert abs(sum(k["total_us"] for k in result["kernels"]) - sum(result["device_us"])) < 1.0
    assert result["median_device_us"] > 0 and result["mean_device_us"] > 0


def test_side_stream_work_is_timed(tmp_path):
    ref = gpu_reference(tmp_path, seeds=(1,))
    eager = run("profile", profile_spec(tmp_path, ref, "eager", iters=5))
    candidate = write_candidate(tmp_path, SIDE_STREAM_CANDIDATE)
    side = run("profile", profile_spec(tmp_path, ref, "candidate", candidate, iters=5))
    assert side["ok"], side
    # two GEMMs on the side stream against one in eager: never measured as (almost) nothing
    assert side["median_device_us"] > eager["median_device_us"] * 1.2, (side, eager)
    assert side["median_wall_us"] > eager["median_device_us"]


def test_compile_profile_on_cuda(tmp_path):
    ref = gpu_reference(tmp_path, seeds=(1,))
    result = run("profile", profile_spec(tmp_path, ref, "compile", iters=4))
    assert result["ok"], result
    assert result["compile_seconds"] > 0
    assert len(result["device_us"]) == 4 and all(d > 0 for d in result["device_us"])


def test_async_device_error_is_attributed_to_the_check(tmp_path):
    ref = gpu_reference(tmp_path)
    cand = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, ASYNC_ERROR_CANDIDATE))
    cand["device"] = "cuda"
    proc, result = run_cli("candidate", cand, tmp_path)  # a child: the CUDA context is lost afterwards
    assert proc.returncode == 0, proc.stderr
    assert result is not None
    assert result["error_kind"] == "forward"
    assert result["reason"].startswith("check 0: ModelNew.forward raised"), result["reason"]
