"""What the judge's policy (`--policy`, src/judge/precision.h PolicyRules) changes in model_new.py's rules.

The policy's rules travel in the static job's spec as "policy_rules" ({"torch_compute": bool}). Under a
policy that lets torch compute (kernelbench: KernelBench's rules, docs/policies.md), torch's eager operators
may do part of the work in ModelNew — `self.conv(x)`, `F.relu`, `torch.matmul`, tensor arithmetic — so the
rules that refuse torch compute (RELAXED_BY_TORCH_COMPUTE) are dropped where their findings are produced
(`apply`). Everything that wins without a kernel stays refused, with a message naming the allowed way:
compilers (torch_compiler), CUDA graphs (side_stream), global flags and patching (global_flags,
torch_patching), try/except fallbacks (try_except), other libraries (library_compute), and two rules of
their own:

- `backend_switch`: torch.backends (TF32 and cuDNN flags, `cudnn.benchmark`, `sdp_kernel`), autocast and
  torch.amp: switches that make torch's kernels faster or less precise than the reference's;
- `no_custom_kernel`: model_new.py never calls cuda_extension — it is just torch. (At run time the op guard
  also refuses a forward that called no extension function, and on the GPU the kernel audit requires an own
  kernel in every timed call.)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .syntax import is_extension_path, self_attr
from .table import Violation

if TYPE_CHECKING:
    from .checker import Checker  # which imports this module

RELAXED_BY_TORCH_COMPUTE = frozenset({"torch_functional", "torch_compute", "tensor_compute", "nn_module_call",
                                      "unknown_call", "forbidden_base_class"})

ALLOWED_WAY = ("under --policy kernelbench torch's eager operators may do part of the work (torch.relu(x), "
               "self.conv(x), F.gelu(x)) beside your own kernels, with torch's default settings")

# Appended to the message of a violation that still holds when torch may compute.
KERNELBENCH_HINTS = {
    "torch_compiler": f"compilers generate the kernels instead of you; {ALLOWED_WAY}",
    "try_except": f"a fallback lets torch win when your kernel fails; {ALLOWED_WAY}, called plainly",
    "global_flags": f"global settings change torch's kernels against the reference's; {ALLOWED_WAY}",
    "torch_patching": f"patching torch or its flags changes what the reference is measured against; "
                      f"{ALLOWED_WAY}",
    "side_stream": f"CUDA graphs and side streams hide work from the timer; {ALLOWED_WAY}",
    "library_compute": f"another library's kernels are not yours; {ALLOWED_WAY}",
    "torch_ops": f"torch.ops and torch._C reach around the rules; {ALLOWED_WAY}",
}

# torch paths the relaxed torch_compute rule refused that are no compute: files (the harness keeps inputs
# and expected outputs in them) and custom classes. Reported under their own rules.
KEPT_TORCH_PATHS = {"torch.load": "file_io", "torch.save": "file_io", "torch.from_file": "file_io",
                    "torch.serialization": "file_io", "torch.hub": "file_io", "torch.package": "file_io",
                    "torch.classes": "torch_ops"}

BACKEND_PREFIXES = ("torch.backends", "torch.autocast", "torch.amp", "torch.cuda.amp", "torch.cpu.amp",
                    "torch.set_autocast", "torch.is_autocast", "torch.get_autocast")


@dataclass(frozen=True)
class PolicyRules:
    """The policy's rules for the candidate's code; the default is the paper's (strict)."""

    torch_compute: bool = False

    @classmethod
    def from_spec(cls, value: object) -> PolicyRules:
        """From a job spec's "policy_rules" (absent: the default); anything malformed raises ValueError."""
        if value is None:
            return cls()
        if not isinstance(value, dict) or not isinstance(value.get("torch_compute", False), bool):
            raise ValueError(f"policy_rules must be {{\"torch_compute\": bool}}, not {value!r}")
        # weights_by_position is the candidate and profile jobs' (models.py), no rule of the code's.
        unknown = set(value) - {"torch_compute", "weights_by_position"}
        if unknown:
            raise ValueError(f"policy_rules: unknown field(s) {sorted(unknown)}")
        return cls(torch_compute=value.get("torch_compute", False))


def is_backend_path(path: str | None) -> bool:
    return path is not None and any(path == p or path.startswith((p + ".", p + "_"))
                              for p in BACKEND_PREFIXES)


def kept_torch_rule(path: str | None) -> str | None:
    for prefix, rule in KEPT_TORCH_PATHS.items():
        if path and (path == prefix or path.startswith(prefix + ".")):
            return rule
    return None


def report_backend_switches(checker: Checker) -> None:
    """backend_switch on every use of torch.backends, autocast and torch.amp (through any alias); file_io
    and torch_ops on torch's serialization and custom classes."""
    for node in checker.walk(checker.tree):
        if not isinstance(node, (ast.Attribute, ast.Name)):
            continue
        rule = kept_torch_rule(checker.dotted(node))
        if rule:
            checker.report(rule, node, f"`{checker.dotted(node)}` is not torch compute: torch's operators are "
                                       f"allowed under --policy kernelbench, its files and classes are not")
        if isinstance(node, (ast.Attribute, ast.Name)) and is_backend_path(checker.dotted(node)):
            checker.report("backend_switch", node,
                           f"`{checker.dotted(node)}` switches torch's backend (TF32, cuDNN benchmark, "
                           f"autocast): {ALLOWED_WAY}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(is_backend_path(n) for n in names):
                checker.report("backend_switch", node, f"importing torch's backend switches: {ALLOWED_WAY}")


def calls_extension(checker: Checker) -> bool:
    """Whether any call in the file goes to cuda_extension: through its name or an alias
    (`ext = cuda_extension`), an attribute of self that holds it or one of its functions."""
    ext_attrs = {attr for kinds in checker.attr_kinds.values() for attr, kind in kinds.items()
                 if kind == "extension"}
    for node in checker.walk(checker.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if is_extension_path(checker.dotted(func)):
            return True
        if self_attr(func) in ext_attrs:
            return True
        if isinstance(func, ast.Attribute) and self_attr(func.value) in ext_attrs:
            return True
    return False


def report_missing_kernel(checker: Checker) -> None:
    if not calls_extension(checker):
        target = next((c for c in checker.tree.body if isinstance(c, ast.ClassDef) and c.name == "ModelNew"),
                      checker.tree)
        checker.report("no_custom_kernel", target,
                       "model_new.py never calls cuda_extension: a ModelNew that torch computes alone is no "
                       "candidate; under --policy kernelbench torch may do part of the work, and your own "
                       "kernel (a function of cuda_extension) must do the rest")


def apply(checker: Checker, violations: list[Violation], rules: PolicyRules) -> list[Violation]:
    """The violations that hold under `rules`, in source order (the Checker has run)."""
    if not rules.torch_compute:
        return violations
    report_backend_switches(checker)
    report_missing_kernel(checker)
    kept = []
    for v in checker.violations():
        if v.rule in RELAXED_BY_TORCH_COMPUTE:
            continue
        hint = KERNELBENCH_HINTS.get(v.rule)
        kept.append(Violation(v.rule, v.line, f"{v.message} ({hint})", v.file) if hint else v)
    return kept
