"""The Checker: resolves names, runs the rules that hold everywhere (the families' mixins) over one
module, then the compute analysis (compute.py) over every function under its profile."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from .classes import ClassRules
from .compute import Body
from .dynamic import DynamicCodeRules
from .imports import ImportRules
from .syntax import (
    annotation_is_scalar,
    function_params,
    is_extension_path,
    is_main_guard,
    module_bindings,
    root_name,
    self_attr,
    snippet,
    target_names,
)
from .table import RULE_ORDER, Violation
from .torch_paths import TorchPathRules
from .vocabulary import FORWARD, INIT


class Checker(ImportRules, TorchPathRules, DynamicCodeRules, ClassRules):
    """Runs every rule over one module; `violations` holds the results in source order."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.found: dict[tuple[str, int], Violation] = {}
        self.aliases: dict[str, str] = {}        # name -> canonical dotted path of an imported object
        self.module_names: set[str] = set()      # names bound at module level (not imports)
        self.functions: dict[str, ast.FunctionDef] = {}  # module-level functions
        self.classes: dict[str, ast.ClassDef] = {}
        self.attr_kinds: dict[str, dict[str, str]] = {}  # class -> self attribute -> kind
        self.analysed: set[tuple[Any, ...]] = set()
        self.skipped: set[int] = set()           # ids of nodes under `if __name__ == "__main__":`
        self.report_only: set[str] | None = None  # while set, only these rules are reported

    # -- reporting

    def report(self, rule: str, node: ast.AST, message: str) -> None:
        if self.report_only is not None and rule not in self.report_only:
            return
        line = getattr(node, "lineno", 1) or 1
        self.found.setdefault((rule, line), Violation(rule, line, message))

    def violations(self) -> list[Violation]:
        return sorted(self.found.values(), key=lambda v: (v.line, RULE_ORDER[v.rule]))

    # -- name resolution

    def dotted(self, node: ast.expr, local_aliases: dict[str, str] | None = None) -> str | None:
        """The canonical dotted path of an expression built from imported names (`F.relu` ->
        `torch.nn.functional.relu`), or None."""
        if isinstance(node, ast.Name):
            if local_aliases and node.id in local_aliases:
                return local_aliases[node.id]
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value, local_aliases)
            return f"{base}.{node.attr}" if base else None
        return None

    # -- entry

    def run(self) -> list[Violation]:
        for node in self.tree.body:
            if is_main_guard(node):
                for inner in ast.walk(node):
                    self.skipped.add(id(inner))
        self.collect_module_bindings()
        self.universal(self.tree)
        self.classify_classes()
        self.check_extension_patching()
        self.analyse_module_level()
        for cls in self.classes.values():
            self.check_class(cls)
        return self.violations()

    def walk(self, root: ast.AST) -> Iterable[ast.AST]:
        for node in ast.walk(root):
            if id(node) not in self.skipped:
                yield node

    def add_alias(self, name: str, path: str) -> None:
        """Records `name` -> `path`. A name that imports bind to the extension in one place and to
        something else in another (`import cuda_extension as torch` inside a function) keeps the other
        meaning: calls through it are judged as what they may be, never passed as custom ops."""
        old = self.aliases.get(name)
        if old is not None and old != path and is_extension_path(path):
            return
        self.aliases[name] = path

    def collect_module_bindings(self) -> None:
        for node in self.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.add_alias(alias.asname, alias.name)
                    else:
                        top = alias.name.split(".", 1)[0]
                        self.add_alias(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.add_alias(alias.asname or alias.name, f"{node.module}.{alias.name}")
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.AsyncFunctionDef):
                self.functions[node.name] = node  # type: ignore[assignment]
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                path = self.dotted(value) if value is not None else None
                for target in targets:
                    for name in target_names(target):
                        if path and isinstance(target, ast.Name):
                            self.add_alias(name, path)   # T = torch.Tensor: T is torch.Tensor
                        else:
                            self.module_names.add(name)
        # `ext = cuda_extension` and `f = cuda_extension.f` make calls through ext and f custom op calls:
        # only while the name is bound once, so that no other binding of it passes for the extension.
        bindings = module_bindings(self.tree, self.skipped)
        for name, path in list(self.aliases.items()):
            if is_extension_path(path) and bindings[name] > 1:
                del self.aliases[name]
                self.module_names.add(name)

    # -- rules that hold everywhere ---------------------------------------------------------------

    def universal(self, root: ast.AST) -> None:
        bound = self.bound_names()
        for node in self.walk(root):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.check_import(node, alias.name)
            elif isinstance(node, ast.ImportFrom):
                self.check_import_from(node)
            elif isinstance(node, ast.Name):
                self.check_name(node, bound)
            elif isinstance(node, ast.Attribute):
                self.check_attribute(node)
            elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                self.report("try_except", node, "try/except is not allowed: a failing custom op must fail, "
                                                "not fall back to something else")
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                kind = "global" if isinstance(node, ast.Global) else "nonlocal"
                names = ", ".join(node.names)
                self.report("module_state", node, f"`{kind} {names}` keeps state across calls")
            elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
                self.report("host_thread", node, "async code runs outside the call")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                self.check_patching(node)
            elif isinstance(node, ast.ClassDef):
                self.check_class_shape(node)

    def bound_names(self) -> set[str]:
        """Every name the module binds (parameters, assignments, defs): such a name is not a builtin."""
        names = set(self.aliases) | self.module_names | set(self.functions) | set(self.classes)
        for node in self.walk(self.tree):
            if isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
        return names

    def check_extension_patching(self) -> None:
        """Assigning to an attribute of cuda_extension through any name or attribute that holds it
        (`self.ext.relu = torch.relu`, `e = self.ext; e.f = g`) replaces what calls through the
        extension run: torch_patching, like assigning to cuda_extension itself."""
        ext_attrs = {attr for kinds in self.attr_kinds.values() for attr, kind in kinds.items()
                     if kind == "extension"}
        names: set[str] = set()

        def holds_extension(node: ast.expr) -> bool:
            root = root_name(node)
            if root in names or self_attr(node) in ext_attrs:
                return True
            return is_extension_path(self.dotted(node) or "")

        # Names bound to the extension anywhere (in any scope: a superset is fine here), found with a
        # worklist over `name = <expr rooted at another name>` so that long alias chains stay linear.
        dependents: dict[str, list[ast.expr]] = {}
        pending: list[ast.expr] = []
        for node in self.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if holds_extension(node.value):
                        pending.append(target)
                    root = root_name(node.value)
                    if root is not None:
                        dependents.setdefault(root, []).append(target)
        while pending:
            for name in target_names(pending.pop()):
                if name not in names:
                    names.add(name)
                    pending.extend(dependents.get(name, []))
        for node in self.walk(self.tree):
            if not isinstance(node, (ast.Attribute, ast.Subscript)) or isinstance(node.ctx, ast.Load):
                continue
            base = node.value
            while True:
                if holds_extension(base):
                    self.report("torch_patching", node, f"assigning `{snippet(node)}` changes the "
                                                        "cuda_extension module that calls through it run")
                    break
                if not isinstance(base, (ast.Attribute, ast.Subscript)):
                    break
                base = base.value

    # -- profiles ------------------------------------------------------------------------------------

    def analyse_module_level(self) -> None:
        statements = [s for s in self.tree.body
                      if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                                            ast.ImportFrom)) and id(s) not in self.skipped]
        module = ast.Module(body=statements, type_ignores=[])
        Body(self, module, None, FORWARD, set()).run()

    def check_class(self, cls: ast.ClassDef) -> None:
        """__init__ under the init profile, forward with its tensor parameters tainted; other methods
        through their call sites, or as roots when they are referenced without a call (hooks,
        properties: all parameters tainted) or never referenced (no parameter tainted)."""
        called: set[str] = set()
        referenced: set[str] = set()
        for node in self.walk(cls):
            if isinstance(node, ast.Call) and (called_attr := self_attr(node.func)):
                called.add(called_attr)
        for node in self.walk(cls):
            if (isinstance(node, ast.Attribute) and (attr := self_attr(node)) and isinstance(node.ctx, ast.Load)
                    and attr not in called):
                referenced.add(attr)
        for item in cls.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            params = list(function_params(item.args))[1:]
            if item.name == "__init__":
                self.analyse(item, cls, INIT, frozenset())
            elif item.name == FORWARD:
                tainted = frozenset(a.arg for a in params if not annotation_is_scalar(a.annotation))
                self.analyse(item, cls, FORWARD, tainted)
            elif item.name in referenced or any(isinstance(d, ast.Name) and d.id == "property"
                                                for d in item.decorator_list):
                self.analyse(item, cls, FORWARD, frozenset(a.arg for a in params))
            elif item.name not in called:
                # Never called nor referenced: dead code (a setter the forward never uses) is checked
                # like __init__; a dunder Python may call implicitly (__repr__, __eq__) like forward.
                dunder = item.name.startswith("__") and item.name.endswith("__")
                self.analyse(item, cls, FORWARD if dunder else INIT, frozenset())

    def analyse(self, func: ast.FunctionDef, cls: ast.ClassDef | None, profile: str,
                tainted: frozenset[str]) -> None:
        key = (id(func), profile, tainted)
        if key in self.analysed:
            return
        self.analysed.add(key)
        Body(self, func, cls, profile, set(tainted)).run()
