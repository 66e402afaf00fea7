"""Dynamic code and patching rules: run-time code lookups and dunder access (dynamic_code), `open`
(file_io), and assignments that change an imported module (torch_patching)."""

from __future__ import annotations

import ast

from .family import CheckerState
from .syntax import root_name

DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr",
                    "setattr", "delattr", "breakpoint"}
ALLOWED_DUNDER_ATTRS = {"__init__", "__name__", "__qualname__", "__doc__"}
ALLOWED_DUNDER_NAMES = {"__name__", "__doc__", "__all__"}


class DynamicCodeRules(CheckerState):
    """The name, attribute and assignment checks of the Checker (a mixin: `report`, `dotted`, `aliases`
    and `check_torch_path` come from the Checker)."""

    def check_name(self, node: ast.Name, bound: set[str]) -> None:
        name = node.id
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDER_NAMES:
            self.report("dynamic_code", node, f"`{name}` is not allowed")
        elif name == "__name__" and isinstance(node.ctx, ast.Store):
            self.report("dynamic_code", node, "assigning __name__ is not allowed")
        elif isinstance(node.ctx, ast.Load) and name not in bound:
            if name in DYNAMIC_BUILTINS:
                self.report("dynamic_code", node, f"`{name}` builds or looks up code at run time")
            elif name == "open":
                self.report("file_io", node, "`open` accesses files")
        path = self.aliases.get(name)
        if path and isinstance(node.ctx, ast.Load):
            self.check_torch_path(node, path)

    def check_attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ALLOWED_DUNDER_ATTRS:
            self.report("dynamic_code", node, f"`.{node.attr}` is not allowed")
        path = self.dotted(node)
        if path:
            self.check_torch_path(node, path)

    def check_patching(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.Delete):
            targets = node.targets
        else:
            targets = [node.target]  # type: ignore[attr-defined]
        for target in targets:
            for element in ast.walk(target):
                if not isinstance(element, (ast.Attribute, ast.Subscript)):
                    continue
                if isinstance(element.ctx, ast.Load):
                    continue
                root = root_name(element)
                if root is not None and root in self.aliases:
                    shown = self.dotted(element.value) or root
                    what = f"{shown}.{element.attr}" if isinstance(element, ast.Attribute) else f"{shown}[...]"
                    self.report("torch_patching", node,
                                f"assigning `{what}` changes an imported module (timers, flags, operators)")
