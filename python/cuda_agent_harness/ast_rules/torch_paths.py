"""Torch path rules: which parts of torch model_new.py may name anywhere (torch_functional,
torch_compiler, torch_ops, side_stream, timer_patching, global_flags, host_thread for torch's own
process and distributed modules) and the torch names outside __init__ may use."""

from __future__ import annotations

import ast

from .family import CheckerState
from .table import RULE_HINTS

TORCH_DTYPES = set("""float32 float float16 half bfloat16 float64 double int8 int16 short int32 int int64 long
uint8 bool complex64 cfloat complex128 cdouble float8_e4m3fn float8_e5m2""".split())

# torch names forward may call.
TORCH_CALLS_ALLOWED = {f"torch.{n}" for n in """empty empty_like empty_strided zeros zeros_like ones ones_like
full full_like is_tensor is_floating_point is_complex numel Size device finfo iinfo no_grad inference_mode
get_default_dtype""".split()} | {f"torch.cuda.{n}" for n in """is_available current_device device_count
get_device_properties get_device_capability current_stream""".split()}

# torch names forward may refer to without calling them (types, dtypes, memory formats).
TORCH_VALUES_ALLOWED = TORCH_CALLS_ALLOWED | {f"torch.{n}" for n in TORCH_DTYPES} | {
    f"torch.{n}" for n in "Tensor dtype contiguous_format channels_last preserve_format strided".split()}

# Names `from torch import X` may bind (and torch.nn names are all fine to import).
TORCH_IMPORTS_ALLOWED = {n.split(".", 1)[1] for n in TORCH_VALUES_ALLOWED if n.count(".") == 1} | {"nn"}


def is_nn_class(path: str) -> bool:
    """torch.nn.Conv2d, torch.nn.Module: a class of torch.nn. Referring to one (isinstance(m, nn.Conv2d))
    computes nothing; calling one builds a layer, which forward may not do."""
    parts = path.split(".")
    return len(parts) == 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper()


def torch_path_rule(path: str) -> str | None:
    """The universal rule a torch path (torch.nn.functional.relu) breaks, or None."""
    parts = path.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return None
    second = parts[1]
    if second == "nn" and len(parts) > 2 and parts[2] == "functional":
        return "torch_functional"
    if second in {"compile", "jit", "_dynamo", "_inductor", "fx", "export", "compiler"}:
        return "torch_compiler"
    if second in {"ops", "library", "utils", "overrides"} or second.startswith("_"):
        return "torch_ops"
    if second in {"multiprocessing", "futures", "distributed"}:
        return "host_thread"
    if second == "profiler" or (second in {"autograd", "cuda"} and len(parts) > 2 and parts[2] == "profiler"):
        return "timer_patching"
    if second == "Stream" or (second == "cuda" and len(parts) > 2 and parts[2] in {
            "Stream", "stream", "set_stream", "ExternalStream", "StreamContext", "graph", "graphs",
            "CUDAGraph", "make_graphed_callables"}):
        return "side_stream"
    last = parts[-1]
    if last.startswith("set_") or last in {"manual_seed", "manual_seed_all", "seed", "seed_all",
                                           "use_deterministic_algorithms"} or second == "random":
        return "global_flags"
    return None


class TorchPathRules(CheckerState):
    """The torch path check of the Checker (a mixin: `report` comes from the Checker)."""

    def check_torch_path(self, node: ast.AST, path: str) -> None:
        rule = torch_path_rule(path)
        if rule:
            self.report(rule, node, f"`{path}` is not allowed: {RULE_HINTS[rule]}")
