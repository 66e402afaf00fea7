"""The `toolchain` job: what the C++ build driver needs to compile an extension against this torch.

Runs no candidate code. Reports the Python and torch installation, torch's extension include and
library dirs (with CUDA's when the device is cuda), the C++ ABI flag and, on cuda, the GPU and its
measured peak memory bandwidth (the speed-of-light floor of HACKS.md A10 divides by it).
"""

from __future__ import annotations

import inspect
import os
import platform
import sys
import sysconfig
from collections.abc import Callable
from typing import Any

from ..errors import JobError
from ..spec import require_device


def _device_kwargs(func: Callable[..., Any], device: str) -> dict[str, Any]:
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


def gpu_info() -> dict[str, Any]:
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


BANDWIDTH_COPY_BYTES = 1 << 30
BANDWIDTH_REPEATS = 5


def measure_peak_bandwidth() -> float:
    """Bytes per second of the best of 5 device-to-device copies of 1 GiB, counting read and write.

    The copy shrinks to a quarter of free memory when 2 GiB are not available.
    """
    import torch

    free, _ = torch.cuda.mem_get_info()
    nbytes = min(BANDWIDTH_COPY_BYTES, free // 4)
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    dst.copy_(src)  # warm-up
    best = float("inf")
    for _ in range(BANDWIDTH_REPEATS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / best


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
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
    if device == "cuda" and cuda_include is not None and cuda_include != "/usr/include":
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
        "measured_peak_bandwidth_bytes_per_s": measure_peak_bandwidth() if device == "cuda" else None,
    })
