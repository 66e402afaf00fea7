"""Tests of the `toolchain` job."""

import os
import sys

import pytest
import torch
from helpers import run


def test_toolchain_on_cpu(tmp_path):
    result = run("toolchain", {"result_path": str(tmp_path / "t.json"), "device": "cpu"})
    assert result["ok"], result
    assert result["include_dirs"]
    assert all(os.path.isdir(d) for d in result["include_dirs"])
    assert os.path.isfile(os.path.join(result["include_dirs"][0], "torch", "extension.h"))
    assert all(os.path.isdir(d) for d in result["library_dirs"])
    assert os.path.isfile(os.path.join(result["python_include"], "Python.h"))
    assert result["python_executable"] == sys.executable
    assert result["torch_version"] == torch.__version__
    assert isinstance(result["cxx11_abi"], bool)
    assert result["gpu"] is None
    assert result["measured_peak_bandwidth_bytes_per_s"] is None


def test_cuda_without_gpu_is_a_toolchain_error(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = run("toolchain", {"result_path": str(tmp_path / "t.json"), "device": "cuda"})
    assert result["error_kind"] == "toolchain"


def test_bad_device_is_internal(tmp_path):
    result = run("toolchain", {"result_path": str(tmp_path / "t.json"), "device": "tpu"})
    assert result["error_kind"] == "internal"
    assert "device" in result["reason"]
