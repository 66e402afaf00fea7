"""The op guard sees ATen calls made from C++ (a binding calling at::relu), through a real extension.

The extension is built once with torch.utils.cpp_extension.load_inline (about 30 s the first time; torch
keeps the build in its extension cache, so later runs take about a second).
"""

import os

import pytest
import torch
from helpers import candidate_spec, compare_spec, make_reference, profile_spec, run, write_candidate

EXTENSION = "cuda_agent_guard_test_ext"

SOURCE = r"""
#include <torch/extension.h>

// Computes with ATen: the dispatcher routes at::relu through the Python dispatch mode.
torch::Tensor relu_aten(torch::Tensor x) { return at::relu(x); }

// Computes in its own loop: only the allocation (empty_like) goes through the dispatcher.
torch::Tensor relu_loop(torch::Tensor x) {
  TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32, "contiguous float32 expected");
  torch::Tensor y = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  return y;
}
"""

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 32)]

def get_init_inputs():
    return []
"""

CANDIDATE = f"""
import torch
import torch.nn as nn
import {EXTENSION}

class ModelNew(nn.Module):
    def forward(self, x):
        return {EXTENSION}.FUNCTION(x)
"""


@pytest.fixture(scope="module")
def extension_dir():
    from torch.utils.cpp_extension import load_inline

    module = load_inline(EXTENSION, cpp_sources=[SOURCE], functions=["relu_aten", "relu_loop"],
                         extra_cflags=["-O1"], verbose=False)
    return os.path.dirname(module.__file__)


def candidate(tmp_path, extension_dir, function):
    candidate_dir, _ = write_candidate(tmp_path, CANDIDATE.replace("FUNCTION", function), function)
    return candidate_dir, extension_dir


def test_at_relu_in_a_binding_is_a_forbidden_op(tmp_path, extension_dir):
    ref = make_reference(tmp_path, TASK)
    spec = candidate_spec(tmp_path, ref, *candidate(tmp_path, extension_dir, "relu_aten"))
    result = run("candidate", spec)
    assert result["error_kind"] == "forbidden_op", result
    assert result["reason"] == ("check 0: forbidden torch op during the candidate's forward: "
                                "aten.relu.default (only allocation, metadata ops and copies that keep "
                                "dtype and device are allowed; compute in your own kernel)")
    assert result["aten_ops"] == {"aten.relu.default": 1}
    assert torch.equal(torch.relu(torch.tensor([-1.0])), torch.tensor([0.0]))  # the mode is gone


def test_a_kernel_of_its_own_passes(tmp_path, extension_dir):
    ref = make_reference(tmp_path, TASK)
    spec = candidate_spec(tmp_path, ref, *candidate(tmp_path, extension_dir, "relu_loop"))
    result = run("candidate", spec)
    assert result["ok"], result
    assert result["aten_ops"] == {"aten.empty_like.default": 3}
    assert run("compare", compare_spec(tmp_path, ref, spec))["ok"]


def test_at_relu_in_a_binding_fails_the_profile_too(tmp_path, extension_dir):
    ref = make_reference(tmp_path, TASK)
    spec = profile_spec(tmp_path, ref, "candidate", candidate(tmp_path, extension_dir, "relu_aten"))
    result = run("profile", spec)
    assert result["error_kind"] == "forbidden_op", result
    assert result["reason"].startswith("warm-up call 0: forbidden torch op during the candidate's "
                                       "forward: aten.relu.default")
