"""Import rules: which modules model_new.py may import (forbidden_import and the rules named after what a
module gives access to: host_thread, native_access, introspection, reference_access, process_escape,
file_io, clock_read, library_compute)."""

from __future__ import annotations

import ast

from .family import CheckerState
from .table import RULE_HINTS
from .torch_paths import TORCH_IMPORTS_ALLOWED, torch_path_rule

ALLOWED_MODULES = {"torch", "torch.nn", "cuda_extension", "math", "typing", "numbers", "__future__"}

# Modules named by a specific rule (the module or any submodule of it); everything else not allowed is
# forbidden_import.
MODULE_RULES = {
    "threading": "host_thread", "_thread": "host_thread", "multiprocessing": "host_thread",
    "concurrent": "host_thread", "asyncio": "host_thread", "sched": "host_thread",
    "ctypes": "native_access", "_ctypes": "native_access", "cffi": "native_access", "mmap": "native_access",
    "gc": "introspection", "inspect": "introspection", "sys": "introspection",
    "traceback": "introspection", "types": "introspection", "weakref": "introspection",
    "builtins": "introspection", "importlib": "introspection", "pkgutil": "introspection",
    "runpy": "introspection", "code": "introspection", "codeop": "introspection", "pickle": "introspection",
    "marshal": "introspection", "dis": "introspection", "copyreg": "introspection",
    "model": "reference_access", "reference": "reference_access", "cuda_agent_harness": "reference_access",
    "utils": "reference_access", "verification": "reference_access", "profiling": "reference_access",
    "os": "process_escape", "subprocess": "process_escape", "signal": "process_escape",
    "socket": "process_escape", "pty": "process_escape", "resource": "process_escape",
    "shlex": "process_escape", "posix": "process_escape",
    "io": "file_io", "pathlib": "file_io", "shutil": "file_io", "tempfile": "file_io", "glob": "file_io",
    "fcntl": "file_io",
    "time": "clock_read", "timeit": "clock_read", "datetime": "clock_read",
    "numpy": "library_compute", "scipy": "library_compute", "triton": "library_compute",
    "cupy": "library_compute", "numba": "library_compute", "jax": "library_compute",
    "tensorflow": "library_compute",
}


def module_rule(module: str) -> str | None:
    """The rule an import of `module` breaks, or None when it is allowed."""
    if module in ALLOWED_MODULES:
        return None
    top = module.split(".", 1)[0]
    if top == "torch":
        return torch_path_rule(module) or "forbidden_import"
    return MODULE_RULES.get(top, "forbidden_import")


# Rules an import does not break by itself: the use of what it binds is reported (an unused
# `import torch.nn.functional as F`, left over from the reference, is harmless; `F.relu(x)` is not).
RULES_OF_USES = {"torch_functional"}


class ImportRules(CheckerState):
    """The import checks of the Checker (a mixin: `report` comes from the Checker)."""

    def check_import(self, node: ast.AST, module: str) -> None:
        rule = module_rule(module)
        if rule and rule not in RULES_OF_USES:
            self.report(rule, node, f"import of {module} is not allowed: {RULE_HINTS[rule]}")

    def check_import_from(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.report("forbidden_import", node, "relative imports are not allowed")
            return
        module = node.module or ""
        rule = module_rule(module)
        if rule and rule not in RULES_OF_USES:
            self.check_import(node, module)
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name == "*":
                if module.startswith("torch"):
                    self.report("torch_compute", node, f"`from {module} import *` imports torch's operators")
                continue
            if module == "torch" and alias.name not in TORCH_IMPORTS_ALLOWED:
                rule = torch_path_rule(full) or module_rule(full)
                if rule and rule != "forbidden_import":
                    self.report(rule, node, f"import of {full} is not allowed: {RULE_HINTS[rule]}")
                else:
                    self.report("torch_compute", node,
                                f"`from torch import {alias.name}`: only nn, Tensor, dtypes and tensor "
                                "creation may be imported from torch")
            elif module.startswith("torch"):
                rule = torch_path_rule(full)  # from torch.nn.functional import relu: reported at each use
                if rule and rule not in RULES_OF_USES:
                    self.report(rule, node, f"import of {full} is not allowed: {RULE_HINTS[rule]}")
