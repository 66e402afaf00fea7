"""Helpers over nested inputs/outputs: tensors inside tuples, lists and dicts.

Containers keep their exact type (a tuple stays a tuple), because the comparison checks exact types.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """Applies `fn` to every tensor inside tuples, lists and dicts; other values pass through."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if type(value) is tuple:
        return tuple(map_tensors(v, fn) for v in value)
    if type(value) is list:
        return [map_tensors(v, fn) for v in value]
    if type(value) in (dict, OrderedDict):
        return type(value)((k, map_tensors(v, fn)) for k, v in value.items())
    return value


def to_cpu(value: Any) -> Any:
    """Every tensor detached and moved to the CPU."""
    return map_tensors(value, lambda t: t.detach().cpu())


def to_device(value: Any, device: str) -> Any:
    """Every tensor moved to `device`."""
    return map_tensors(value, lambda t: t.to(device))


def as_arg_list(value: Any) -> list[Any]:
    """The published convention: a list/tuple becomes a list of arguments, anything else one argument."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def named_tensors(value: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """(path, tensor) for every tensor inside `value`: `input 0`, `input 1[2]`, `input 2['k']`."""
    found: list[tuple[str, torch.Tensor]] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, torch.Tensor):
            found.append((path, v))
        elif type(v) in (tuple, list):
            for i, item in enumerate(v):
                walk(item, f"{path}[{i}]")
        elif type(v) in (dict, OrderedDict):
            for k, item in v.items():
                walk(item, f"{path}[{k!r}]")

    if type(value) is list:  # an argument list: each argument is named by its position
        for i, item in enumerate(value):
            walk(item, f"{prefix} {i}")
    else:
        walk(value, prefix)
    return found


def cpu_copy(value: Any) -> Any:
    """Every tensor copied to the CPU (a new tensor even when it is on the CPU already)."""
    return map_tensors(value, lambda t: t.detach().to("cpu", copy=True))


def tensor_bytes(value: Any) -> int:
    """Total bytes of the tensors inside `value`."""
    total = 0

    def count(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    map_tensors(value, count)
    return total


def dtype_name(dtype: torch.dtype) -> str:
    """`float32` for torch.float32."""
    return str(dtype).replace("torch.", "")


def signature(value: Any) -> str:
    """A short description of a nested output, e.g. `tuple(Tensor[float32](128, 4096), int)`."""
    if isinstance(value, torch.Tensor):
        return f"Tensor[{dtype_name(value.dtype)}]{tuple(value.shape)}"
    if isinstance(value, tuple):
        return "tuple(" + ", ".join(signature(v) for v in value) + ")"
    if isinstance(value, list):
        return "list[" + ", ".join(signature(v) for v in value) + "]"
    if isinstance(value, dict):
        return "dict{" + ", ".join(f"{k!r}: {signature(v)}" for k, v in value.items()) + "}"
    return type(value).__name__
