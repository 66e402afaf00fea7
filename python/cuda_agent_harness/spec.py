"""Reading a job's spec and writing its result (strict JSON, written to a temporary file then renamed).

Non-finite floats have no strict-JSON form: they are written as the strings "nan", "inf" and "-inf".
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from .errors import JobError


class SpecError(Exception):
    """The spec file cannot be read at all (so there is no result_path to write to)."""


def read_spec(path: str) -> dict[str, Any]:
    """Reads the spec JSON object; raises SpecError when it is unreadable or has no result_path."""
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, ValueError) as exc:
        raise SpecError(f"cannot read spec {path}: {exc}") from exc
    if not isinstance(spec, dict):
        raise SpecError(f"spec {path} is not a JSON object")
    if not isinstance(spec.get("result_path"), str) or not spec["result_path"]:
        raise SpecError(f"spec {path} has no result_path")
    return spec


def caching_allocator_off() -> bool:
    """Whether torch's CUDA caching allocator is off in this process: the judge's compute-sanitizer run
    starts the job with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (src/judge/stages/verify.cc). Besides the spec
    itself, the one fact of its environment the harness reads (python/tests/test_packages.py)."""
    return os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1"


_MISSING = object()


def require(spec: dict[str, Any], key: str, kind: type | tuple[Any, ...] = object, default: Any = _MISSING) -> Any:
    """spec[key], checked against `kind`; a missing or ill-typed value is an internal error."""
    value = spec.get(key, _MISSING)
    if value is _MISSING:
        if default is not _MISSING:
            return default
        raise JobError("internal", f"spec: missing key '{key}'")
    # bool is an int in Python; a flag given where a number is expected is still a spec error.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        raise JobError("internal", f"spec: '{key}' has the wrong type ({type(value).__name__})")
    return value


def require_device(spec: dict[str, Any]) -> str:
    """spec["device"], which must be "cpu" or "cuda"."""
    device: str = require(spec, "device", str)
    if device not in ("cpu", "cuda"):
        raise JobError("internal", f"spec: device must be 'cpu' or 'cuda', not '{device}'")
    return device


def json_safe(value: Any) -> Any:
    """A copy of `value` that json.dumps(allow_nan=False) accepts (tuples become lists)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def write_result(path: str, result: dict[str, Any]) -> None:
    """Writes `result` to `path` atomically: a temporary file in the same folder, then a rename."""
    text = json.dumps(json_safe(result), allow_nan=False, indent=1)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.write("\n")
    os.replace(tmp, path)
