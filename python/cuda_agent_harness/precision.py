"""Floating-point backend flags of a harness process: the precision policy's side of each job.

The judge's policy (docs/precision.md) pins, per process, whether fp32 matrix multiplications and
convolutions may run on TF32 tensor cores. A spec's "backend_flags" is null (torch's defaults: the
published harness, `paper`) or {"allow_tf32": bool, "float32_matmul_precision": "highest"|"high"}.
The flags are set before any task or candidate code runs; `current_flags()` is what a result records,
and a candidate that changes them during a forward is caught by comparing before and after.
"""

from __future__ import annotations

from typing import Any

import torch

from .errors import JobError

PRECISIONS = ("highest", "high", "medium")


def _has_new_api() -> bool:
    return hasattr(torch.backends.cuda.matmul, "fp32_precision")


def apply_backend_flags(flags: Any) -> dict[str, Any]:
    """Sets `flags` (a spec's "backend_flags"; None keeps torch's defaults); returns current_flags()."""
    if flags is None:
        return current_flags()
    if not isinstance(flags, dict) or not isinstance(flags.get("allow_tf32"), bool) \
            or flags.get("float32_matmul_precision") not in PRECISIONS:
        raise JobError("internal", f"spec: backend_flags must be null or {{\"allow_tf32\": bool, "
                                   f"\"float32_matmul_precision\": {'|'.join(PRECISIONS)}}}, not {flags!r}")
    mode = "tf32" if flags["allow_tf32"] else "ieee"
    if _has_new_api():
        # The new per-backend API (torch >= 2.9); mixing it with the legacy flags is an error there.
        cudnn: Any = torch.backends.cudnn  # its conv and rnn: not in torch's type information
        torch.backends.cuda.matmul.fp32_precision = mode
        cudnn.conv.fp32_precision = mode
        cudnn.rnn.fp32_precision = mode
    else:
        torch.set_float32_matmul_precision(flags["float32_matmul_precision"])
        torch.backends.cuda.matmul.allow_tf32 = flags["allow_tf32"]
        torch.backends.cudnn.allow_tf32 = flags["allow_tf32"]
    return current_flags()


def current_flags() -> dict[str, Any]:
    """The flags in force now (whatever set them)."""
    flags: dict[str, Any] = {"cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
                             "cudnn_deterministic": bool(torch.backends.cudnn.deterministic)}
    if _has_new_api():
        cudnn: Any = torch.backends.cudnn  # its conv and rnn: not in torch's type information
        flags.update({"matmul_fp32_precision": torch.backends.cuda.matmul.fp32_precision,
                      "cudnn_conv_fp32_precision": cudnn.conv.fp32_precision,
                      "cudnn_rnn_fp32_precision": cudnn.rnn.fp32_precision})
    else:
        flags.update({"float32_matmul_precision": torch.get_float32_matmul_precision(),
                      "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
                      "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32)})
    return flags


def check_flags_unchanged(before: dict[str, Any], what: str) -> None:
    """Fails with "global_flags" when the flags differ from `before` (HACKS A8, B11)."""
    after = current_flags()
    changed = {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}
    if changed:
        shown = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in sorted(changed.items()))
        raise JobError("global_flags", f"{what}: the candidate changed the backend flags ({shown})")
