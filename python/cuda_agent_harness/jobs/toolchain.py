"""The `toolchain` job: what the C++ build driver needs to compile an extension against this torch.

Runs no candidate code. Reports the Python and torch installation, torch's extension include and
library dirs (with CUDA's when the device is cuda), the C++ ABI flag and, on cuda, the GPU.
"""

from __future__ import annotations

import inspect
import os
import platform
import sys
import sysconfig

from ..errors import JobError
from ..spec import require_device


def _device_kwargs(func, device: str) -> dict:
    """The keyword that selects CUDA paths: `device_type=` in newer torch, `cuda=` in older."""
    params = inspect.signature(func).parameters
    if "device_type" in params:
        return {"device_type": device}
    if "cuda" in params:
        return {"cuda": device == "cuda"}
    return {}


def _unique(paths: list[str]) -> list[str]:
    seen: list[str] = []
    for path in paths:
        if path not in seen:
            seen.append(path)
    return seen


def gpu_info() -> dict:
    import torch

    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "arch": f"sm_{props.major}{props.minor}",
        "sm_count": props.multi_processor_count,
        "l2_bytes": props.L2_cache_size,
        "memory_bytes": props.total_memory,
    }


def run(spec: dict, result: dict) -> None:
    device = require_device(spec)
    import torch
    from torch.utils import cpp_extension

    cuda_home = cpp_extension.CUDA_HOME
    if device == "cuda":
        if not torch.cuda.is_available():
            raise JobError("toolchain", "device is cuda but torch.cuda.is_available() is False")
        if cuda_home is None:
            raise JobError("toolchain", "CUDA toolkit not found (set CUDA_HOME or put nvcc on PATH)")
    include_dirs = cpp_extension.include_paths(**_device_kwargs(cpp_extension.include_paths, device))
    library_dirs = cpp_extension.library_paths(**_device_kwargs(cpp_extension.library_paths, device))
    cuda_include = os.path.join(cuda_home, "include") if cuda_home else None
    # torch leaves out /usr/include (Debian's CUDA packages): gcc must not get it as -I.
    if device == "cuda" and cuda_include != "/usr/include":
        include_dirs.append(cuda_include)
    result.update({
        "python_executable": sys.executable,
        "python_version": platform.python_version(),
        "python_include": sysconfig.get_paths()["include"],
        "torch_version": torch.__version__,
        "torch_init_path": torch.__file__,
        "torch_cuda_version": torch.version.cuda,
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
        "include_dirs": _unique(include_dirs),
        "library_dirs": _unique(library_dirs),
        "cuda_home": cuda_home,
        "gpu": gpu_info() if device == "cuda" else None,
    })
