"""What the rule families (the mixins of checker.Checker) use of the checker, declared for the type checker:
Checker defines all of it; this class adds nothing at run time (annotations and TYPE_CHECKING only)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING


class CheckerState:
    aliases: dict[str, str]
    classes: dict[str, ast.ClassDef]
    attr_kinds: dict[str, dict[str, str]]

    if TYPE_CHECKING:
        def report(self, rule: str, node: ast.AST, message: str) -> None: ...

        def dotted(self, node: ast.expr, local_aliases: dict[str, str] | None = None) -> str | None: ...

        def check_torch_path(self, node: ast.AST, path: str) -> None: ...
