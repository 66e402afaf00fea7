"""The compute rules (torch_compute, tensor_compute, nn_module_call, unknown_call, module_state): a
taint analysis of one function body, or the module's top-level statements, under a profile (__init__ or
forward)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .dynamic import DYNAMIC_BUILTINS
from .syntax import function_params, root_name, self_attr, snippet, target_names
from .torch_paths import TORCH_CALLS_ALLOWED, TORCH_VALUES_ALLOWED, torch_path_rule
from .vocabulary import (BUILTINS_ON_TENSORS, FORWARD, INIT, MODULE_CONFIG_ATTRS, SAFE_BUILTINS, STATE_BUILTINS,
                         TENSOR_CREATION_METHODS, TENSOR_METADATA_ATTRS, TENSOR_METADATA_METHODS,
                         TENSOR_VIEW_METHODS)


if TYPE_CHECKING:
    from .checker import Checker


class Body:
    """Checks one function body (or the module's top-level statements) under a profile."""

    def __init__(self, checker: Checker, func: ast.AST, cls: ast.ClassDef | None, profile: str,
                 tainted: set[str]):
        self.c = checker
        self.func = func
        self.cls = cls
        self.profile = profile
        self.tainted = tainted
        self.locals: set[str] = set()
        self.local_aliases: dict[str, str] = {}
        self.local_functions: dict[str, ast.FunctionDef] = {}

    def run(self) -> None:
        self.memo: dict[int, bool] | None = None
        body_nodes = self.own_nodes()
        self.call_targets: set[int] = set()
        self.inner_chain: set[int] = set()   # attributes that are the base of a longer attribute
        for node in body_nodes:
            if isinstance(node, ast.Call):
                self.call_targets.add(id(node.func))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                self.inner_chain.add(id(node.value))
        self.collect_locals(body_nodes)
        self.propagate(body_nodes)
        self.memo = {}  # the taint is final from here on
        if self.profile == INIT:
            self.visit_init(body_nodes)
        else:
            for node in body_nodes:
                self.visit(node)

    def own_nodes(self) -> list[ast.AST]:
        """Nodes of this body, without nested functions and classes (analysed on their own)."""
        nodes: list[ast.AST] = []
        roots = self.func.body if hasattr(self.func, "body") else []
        stack = list(reversed(roots))
        while stack:
            node = stack.pop()
            if id(node) in self.c.skipped:
                continue
            nodes.append(node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if isinstance(node, ast.FunctionDef):
                    self.local_functions[node.name] = node
                stack.extend(reversed(node.decorator_list))
                continue
            stack.extend(reversed(list(ast.iter_child_nodes(node))))
        return nodes

    def collect_locals(self, nodes: list[ast.AST]) -> None:
        if isinstance(self.func, (ast.FunctionDef, ast.Lambda)):
            self.locals.update(a.arg for a in function_params(self.func.args))
        for node in nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
            elif isinstance(node, ast.arg):
                self.locals.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.locals.add(node.name)
        if not isinstance(self.func, ast.Module):
            for node in nodes:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                        isinstance(node.targets[0], ast.Name):
                    path = self.c.dotted(node.value, self.local_aliases)
                    if path:
                        self.local_aliases[node.targets[0].id] = path

    def propagate(self, nodes: list[ast.AST]) -> None:
        """Flow-insensitive taint: a name assigned a tainted value anywhere is tainted everywhere."""
        changed = True
        while changed:
            changed = False
            for node in nodes:
                pairs: list[tuple[ast.expr, ast.expr]] = []
                if isinstance(node, ast.Assign):
                    pairs = [(t, node.value) for t in node.targets]
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                    pairs = [(node.target, node.value)]
                elif isinstance(node, (ast.For, ast.comprehension)):
                    pairs = [(node.target, node.iter)]
                elif isinstance(node, ast.NamedExpr):
                    pairs = [(node.target, node.value)]
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    pairs = [(node.optional_vars, node.context_expr)]
                elif isinstance(node, ast.Lambda):
                    for a in function_params(node.args):
                        if a.arg not in self.tainted:
                            self.tainted.add(a.arg)
                            changed = True
                for target, value in pairs:
                    if self.is_tainted(value):
                        for name in target_names(target):
                            if name not in self.tainted:
                                self.tainted.add(name)
                                changed = True

    # -- taint

    def attr_kind(self, attr: str, cls: ast.ClassDef | None = None) -> str:
        """The kind of `self.<attr>` (or of `<instance of cls>.<attr>`): method, scalar, container,
        tensor, module, local:<Class> or unknown."""
        cls = cls or self.cls
        if attr == "training":
            return "scalar"
        if cls is None:
            return "unknown"
        if self.c.find_method(cls, attr):
            return "method"
        return self.c.attr_kinds.get(cls.name, {}).get(attr, "unknown")

    def kind(self, node: ast.expr) -> str:
        """What an attribute chain denotes: tensor, module, local:<Class>, scalar, method, container,
        unknown, or other (not derived from self or a tensor)."""
        if isinstance(node, ast.Name):
            if node.id == "self" and self.cls is not None:
                return f"local:{self.cls.name}"
            return "tensor" if node.id in self.tainted else "other"
        if not isinstance(node, ast.Attribute):
            return "tensor" if self.is_tainted(node) else "other"
        base = self.kind(node.value)
        attr = node.attr
        if base.startswith("local:"):
            cls = self.c.classes.get(base[6:])
            kind = self.attr_kind(attr, cls)
            if kind != "unknown" or cls is None:
                return kind
            base = "module"  # an attribute the class never assigned: judge it like a layer's
        if base == "module":
            if "weight" in attr or "bias" in attr or attr.startswith("running_") or \
                    attr == "num_batches_tracked":
                return "tensor"
            return "scalar" if attr in MODULE_CONFIG_ATTRS else "module"
        if base in {"tensor", "unknown"}:
            if attr in TENSOR_METADATA_ATTRS:
                return "scalar"
            return base
        return "other"

    def is_tainted(self, node: ast.expr | None) -> bool:
        if node is None:
            return False
        if self.memo is None:
            return self.compute_taint(node)
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self.compute_taint(node)
        return self.memo[key]

    def compute_taint(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tainted
        if isinstance(node, ast.Attribute):
            kind = self.kind(node)
            return kind in {"tensor", "module", "unknown"} or kind.startswith("local:")
        if isinstance(node, ast.Call):
            func = node.func
            path = self.c.dotted(func, self.local_aliases)
            if path:
                if path.startswith("cuda_extension."):
                    return True
                if path.startswith("torch."):
                    return path.split(".")[-1] not in {"is_tensor", "is_floating_point", "is_complex",
                                                       "numel", "finfo", "iinfo", "device", "Size",
                                                       "get_default_dtype", "is_available"}
                return False
            if isinstance(func, ast.Attribute):
                if self.is_tainted(func.value):
                    return func.attr not in TENSOR_METADATA_METHODS
                return False
            if isinstance(func, ast.Name) and (func.id in SAFE_BUILTINS or func.id in self.c.classes):
                return func.id in {"tuple", "list", "zip", "enumerate", "iter", "next", "reversed", "sorted",
                                   "map", "filter", "min", "max", "sum", "abs"} and \
                    any(self.is_tainted(a) for a in node.args)
            return any(self.is_tainted(a) for a in node.args) or \
                any(self.is_tainted(k.value) for k in node.keywords)
        if isinstance(node, ast.Subscript):
            return self.is_tainted(node.value)
        if isinstance(node, ast.BinOp):
            return self.is_tainted(node.left) or self.is_tainted(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_tainted(node.operand)
        if isinstance(node, ast.BoolOp):
            return any(self.is_tainted(v) for v in node.values)
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return False
            return any(self.is_tainted(v) for v in [node.left, *node.comparators])
        if isinstance(node, ast.IfExp):
            return self.is_tainted(node.body) or self.is_tainted(node.orelse)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.is_tainted(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.is_tainted(v) for v in node.values)
        if isinstance(node, ast.Starred):
            return self.is_tainted(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.is_tainted(node.value)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.is_tainted(node.elt) or any(self.is_tainted(g.iter) for g in node.generators)
        if isinstance(node, ast.DictComp):
            return self.is_tainted(node.value) or any(self.is_tainted(g.iter) for g in node.generators)
        return False

    # -- __init__

    def visit_init(self, nodes: list[ast.AST]) -> None:
        """__init__ may build anything; it may only call helpers of this file, which are checked too."""
        for node in nodes:
            if isinstance(node, ast.Call):
                self.follow_local_call(node, INIT)

    # -- everything else

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self.visit_call(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self.visit_attribute(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self.visit_name(node)
        elif isinstance(node, ast.BinOp):
            if self.is_tainted(node.left) or self.is_tainted(node.right):
                self.report_tensor(node, f"`{snippet(node)}` is tensor arithmetic")
        elif isinstance(node, ast.UnaryOp):
            if self.is_tainted(node.operand):
                self.report_tensor(node, f"`{snippet(node)}` is a tensor operation")
        elif isinstance(node, ast.BoolOp):
            if any(self.is_tainted(v) for v in node.values):
                self.report_tensor(node, f"`{snippet(node)}` tests a tensor's truth")
        elif isinstance(node, ast.Compare):
            identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
            if not identity and any(self.is_tainted(v) for v in [node.left, *node.comparators]):
                self.report_tensor(node, f"`{snippet(node)}` compares tensors")
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            if self.is_tainted(node.test):
                self.report_tensor(node, f"`{snippet(node.test)}` tests a tensor's truth")
        elif isinstance(node, ast.Subscript):
            self.visit_subscript(node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            self.visit_store(node)
        elif isinstance(node, ast.FormattedValue):
            if self.is_tainted(node.value):
                self.report_tensor(node, "formatting a tensor reads its values")
        elif isinstance(node, ast.FunctionDef) and node is not self.func:
            # A nested function: checked with its parameters tainted (it may be handed tensors).
            self.c.analyse(node, self.cls, FORWARD,
                           frozenset(a.arg for a in function_params(node.args) if a.arg != "self"))

    def report_tensor(self, node: ast.AST, message: str) -> None:
        self.c.report("tensor_compute", node,
                      f"{message}: computation on tensors must happen in your kernels")

    def visit_subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            if not self.is_tainted(node.value):
                return
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for part in parts:
                if isinstance(part, ast.Slice):
                    bounds = [part.lower, part.upper, part.step]
                    if any(self.is_tainted(b) for b in bounds):
                        self.report_tensor(node, "slicing with tensor bounds")
                elif isinstance(part, (ast.List, ast.ListComp)) or self.is_tainted(part):
                    self.report_tensor(node, f"`{snippet(node)}` is advanced indexing (a gather)")
            return
        # Store or Del.
        if self.is_tainted(node.value):
            self.report_tensor(node, f"writing into `{snippet(node.value)}` is an in-place tensor operation")
            return
        root = root_name(node)
        if root == "self" or (root is not None and root not in self.locals):
            self.c.report("module_state", node, f"writing `{snippet(node)}` keeps state across calls")

    def visit_store(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        else:
            targets = [node.target]  # type: ignore[attr-defined]
        if isinstance(node, ast.AugAssign) and (self.is_tainted(node.target) or self.is_tainted(node.value)):
            self.report_tensor(node, f"`{snippet(node).strip()}` is tensor arithmetic")
        for target in targets:
            for element in ast.walk(target):
                if not isinstance(element, ast.Attribute) or isinstance(element.ctx, ast.Load):
                    continue
                root = root_name(element)
                if root in self.c.aliases and root not in self.locals:
                    continue  # torch_patching, reported by the universal rules
                if root == "self" or root is None or root not in self.locals:
                    self.c.report("module_state", node, f"assigning `{snippet(element)}` outside "
                                                        "__init__ keeps state across calls; set attributes "
                                                        "in __init__ and compute every output anew")
                elif self.is_tainted(element.value):
                    self.report_tensor(node, f"assigning `{snippet(element)}` changes a tensor")
        in_function = isinstance(self.func, ast.FunctionDef)
        if in_function and isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in targets:
                for name in target_names(target):
                    if name in self.c.module_names and name not in self.locals:
                        self.c.report("module_state", node, f"assigning module-level `{name}`")

    def visit_name(self, node: ast.Name) -> None:
        path = self.local_aliases.get(node.id)
        if path is None and node.id not in self.locals:
            path = self.c.aliases.get(node.id)
        if path and path.startswith("torch") and not torch_path_rule(path) and \
                path not in TORCH_VALUES_ALLOWED and path not in {"torch", "torch.nn"} and \
                not self.is_call_target(node):
            self.c.report("torch_compute", node, f"`{path}` may not be used outside __init__")
        if node.id in STATE_BUILTINS and node.id not in self.locals and node.id not in self.c.aliases:
            self.c.report("module_state", node, f"`{node.id}()` is how caches key tensors across calls")

    def is_call_target(self, node: ast.AST) -> bool:
        return id(node) in self.call_targets

    def visit_attribute(self, node: ast.Attribute) -> None:
        path = self.c.dotted(node, self.local_aliases)
        if path is None or not path.startswith("torch"):
            return
        if self.is_call_target(node) or torch_path_rule(path):
            return
        # Only the whole chain is judged (torch.float32, not torch).
        if path in TORCH_VALUES_ALLOWED or id(node) in self.inner_chain:
            return
        self.c.report("torch_compute", node, f"`{path}` may not be used outside __init__")

    def visit_call(self, node: ast.Call) -> None:
        func = node.func
        path = self.c.dotted(func, self.local_aliases)
        tainted_args = [a for a in [*node.args, *[k.value for k in node.keywords]] if self.is_tainted(a)]
        if path is not None:
            self.check_path_call(node, path, tainted_args)
            return
        if isinstance(func, ast.Name):
            self.check_name_call(node, func.id, tainted_args)
            return
        if isinstance(func, ast.Attribute):
            self.check_method_call(node, func, tainted_args)
            return
        self.c.report("unknown_call", node, f"`{snippet(func)}(...)` is not a call forward may make")

    def check_path_call(self, node: ast.Call, path: str, tainted_args: list) -> None:
        if path.startswith("cuda_extension."):
            return
        if path.startswith("torch"):
            if torch_path_rule(path):
                return  # reported by the universal rules
            if path in TORCH_CALLS_ALLOWED:
                return
            self.c.report("torch_compute", node,
                          f"`{path}(...)` is a torch operation; only tensor creation "
                          "(torch.empty*/zeros*/ones*/full*) is allowed outside __init__")
            return
        if path.startswith("math.") or path.startswith("typing.") or path.startswith("numbers."):
            if tainted_args:
                self.report_tensor(node, f"`{path}` on a tensor reads its values")
            return
        self.c.report("unknown_call", node, f"`{path}(...)` is not a call forward may make")

    def check_name_call(self, node: ast.Call, name: str, tainted_args: list) -> None:
        if name in self.local_functions or (name in self.c.functions and name not in self.locals):
            self.follow_local_call(node, self.profile)
            return
        if name in self.c.classes and name not in self.locals:
            return
        if name in self.locals:
            self.c.report("unknown_call", node,
                          f"`{name}(...)` calls a value whose origin the rules cannot see")
            return
        if name in STATE_BUILTINS:
            return  # reported by visit_name
        if name in SAFE_BUILTINS:
            if tainted_args and name not in BUILTINS_ON_TENSORS:
                self.report_tensor(node, f"`{name}(...)` on a tensor reads its values")
            return
        if name in DYNAMIC_BUILTINS or name == "open":
            return  # reported by the universal rules
        self.c.report("unknown_call", node, f"`{name}(...)` is not a call forward may make")

    def check_method_call(self, node: ast.Call, func: ast.Attribute, tainted_args: list) -> None:
        receiver = func.value
        method = func.attr
        kind = self.kind(func)
        if kind == "method":
            self.follow_local_call(node, self.profile)
            return
        if kind.startswith("local:"):
            return  # an instance of a class of this file: its forward is checked on its own
        if kind == "module" or self.kind(receiver) == "module":
            self.c.report("nn_module_call", node,
                          f"calling `{snippet(func)}` runs a torch.nn layer; pass its parameters to "
                          "your kernel instead")
            return
        is_super = isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and \
            receiver.func.id == "super"
        if is_super:
            if self.cls is not None and any(self.c.find_method(self.c.classes[b.id], method)
                                            for b in self.cls.bases
                                            if isinstance(b, ast.Name) and b.id in self.c.classes):
                return
            if self.profile == INIT and method == "__init__":
                return
            self.c.report("unknown_call", node, f"`super().{method}(...)` is not a call forward may make")
            return
        if self.kind(receiver) == "container":
            self.c.report("module_state", node, f"`{snippet(func)}(...)` uses state kept across calls")
            return
        if self_attr(func) is not None and kind in {"tensor", "scalar", "unknown"}:
            self.c.report("unknown_call", node, f"`{snippet(func)}(...)` is not a call forward may make")
            return
        if self.is_tainted(receiver):
            if method in TENSOR_METADATA_METHODS or method in TENSOR_VIEW_METHODS or \
                    method in TENSOR_CREATION_METHODS:
                return
            self.report_tensor(node, f"`.{method}()` on `{snippet(receiver)}` runs a torch operator "
                                     "(allowed: metadata such as size()/dim()/stride() and views such as "
                                     "view()/unsqueeze()/transpose())")
            return
        root = root_name(receiver)
        if root is not None and root not in self.locals and root not in self.c.aliases and \
                (root in self.c.module_names or root == "self"):
            self.c.report("module_state", node, f"`{snippet(func)}(...)` changes module-level state")
            return
        if root is not None and root in self.locals:
            return  # a method of a local value (a list's append, a shape's index)
        self.c.report("unknown_call", node, f"`{snippet(func)}(...)` is not a call forward may make")

    def follow_local_call(self, node: ast.Call, profile: str) -> None:
        """Checks the called function of this file with the taint of the call's arguments."""
        func = node.func
        target: ast.FunctionDef | None = None
        cls = self.cls
        skip_self = False
        if isinstance(func, ast.Name):
            target = self.local_functions.get(func.id) or self.c.functions.get(func.id)
            if func.id in self.local_functions:
                cls = self.cls
            else:
                cls = None
        elif isinstance(func, ast.Attribute):
            # self.helper(...) or self.block.helper(...): a method of a class of this file.
            base = self.kind(func.value)
            owner = self.c.classes.get(base[6:]) if base.startswith("local:") else None
            hit = self.c.find_method(owner, func.attr) if owner is not None else None
            if hit:
                cls, target = hit
                skip_self = True
        if target is None or not isinstance(target, ast.FunctionDef):
            return
        params = function_params(target.args)
        if skip_self and params:
            params = params[1:]
        tainted = set()
        for param, arg in zip(params, node.args):
            if self.is_tainted(arg) or isinstance(arg, ast.Starred):
                tainted.add(param.arg)
        by_name = {p.arg for p in params}
        for keyword in node.keywords:
            if keyword.arg is None:
                tainted |= by_name
            elif keyword.arg in by_name and self.is_tainted(keyword.value):
                tainted.add(keyword.arg)
        if profile == FORWARD:
            tainted |= {p.arg for p in params if p.arg not in tainted and p.arg != "self"
                        and any(isinstance(a, ast.Starred) for a in node.args)}
        self.c.analyse(target, cls, profile, frozenset(tainted))
