"""The compute rules (torch_compute, tensor_compute, nn_module_call, unknown_call, module_state): a
taint analysis of one function body, or the module's top-level statements, under a profile (__init__ or
forward)."""

from __future__ import annotations

import ast
import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .dynamic import DYNAMIC_BUILTINS
from .syntax import (
    function_params,
    is_cuda_device_literal,
    is_cuda_string,
    is_extension_path,
    params_with_object_defaults,
    root_name,
    self_attr,
    snippet,
    target_names,
)
from .torch_paths import TORCH_CALLS_ALLOWED, TORCH_DTYPES, TORCH_VALUES_ALLOWED, is_nn_class, torch_path_rule
from .vocabulary import (
    BUILTINS_ON_TENSORS,
    CONTAINER_FILL_METHODS,
    FORWARD,
    INIT,
    LIST_METHODS,
    MODULE_CONFIG_ATTRS,
    SAFE_BUILTINS,
    STATE_BUILTINS,
    TENSOR_CREATION_METHODS,
    TENSOR_METADATA_ATTRS,
    TENSOR_METADATA_METHODS,
    TENSOR_MOVE_METHODS,
    TENSOR_PRECISION_METHODS,
    TENSOR_RESHAPE_METHODS,
    TENSOR_VIEW_METHODS,
)

# Methods of an autograd Function's ctx that only record what backward needs.
AUTOGRAD_CTX_METHODS = {"save_for_backward", "mark_non_differentiable", "mark_dirty", "set_materialize_grads"}

if TYPE_CHECKING:
    from .checker import Checker


def binding_pairs(node: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of each binding a node makes: assignments (augmented and annotated too), `:=`,
    `for` targets over their iterable, `with ... as` names."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.comprehension)):
        return [(node.target, node.iter)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


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
        self.extension_locals: set[str] = set()   # ext = self.ext, f = self.f: the extension
        self.ctx_name = self.autograd_ctx()          # forward(ctx, ...) of a torch.autograd.Function

    def autograd_ctx(self) -> str | None:
        """The name of the context parameter of a torch.autograd.Function's forward (without a
        setup_context) or setup_context: it holds what forward saves for backward."""
        func = self.func
        if self.cls is None or not isinstance(func, ast.FunctionDef) or \
                func.name not in {FORWARD, "setup_context"} or not self.c.is_autograd_function(self.cls):
            return None
        if func.name == FORWARD and self.c.find_method(self.cls, "setup_context") is not None:
            return None
        params = function_params(func.args)
        return params[0].arg if params else None

    def is_ctx(self, node: ast.expr) -> bool:
        return self.ctx_name is not None and isinstance(node, ast.Name) and node.id == self.ctx_name and \
            self.store_counts[node.id] == 0

    def run(self) -> None:
        if isinstance(self.func, (ast.FunctionDef, ast.Lambda)):
            # A parameter with an object as its default may hold torch itself or one of its functions.
            self.tainted |= params_with_object_defaults(self.func.args) - {"self"}
        self.memo: dict[int, bool] | None = None
        body_nodes = self.own_nodes()
        self.nodes = body_nodes
        # name -> the values of its plain assignments `name = value`, and how often it is bound at all.
        self.assigned: dict[str, list[ast.expr]] = collections.defaultdict(list)
        self.store_counts: collections.Counter[str] = collections.Counter()
        for node in body_nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.store_counts[node.id] += 1
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigned[node.targets[0].id].append(node.value)
        self.call_targets: set[int] = set()
        self.inner_chain: set[int] = set()   # attributes that are the base of a longer attribute
        self.attribute_bases: set[int] = set()   # names used as `name.attr` or aliased (T = torch)
        for node in body_nodes:
            if isinstance(node, ast.Call):
                self.call_targets.add(id(node.func))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                self.inner_chain.add(id(node.value))
            if isinstance(node, ast.Attribute):
                self.attribute_bases.add(id(node.value))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and \
                    all(isinstance(t, ast.Name) for t in node.targets):
                self.attribute_bases.add(id(node.value))  # T = torch: an alias the rules resolve
        self.collect_locals(body_nodes)
        self.collect_extension_locals()
        self.propagate(body_nodes)
        self.state_aliases = self.collect_state_aliases(body_nodes)
        self.memo = {}  # the taint is final from here on
        if self.profile == INIT:
            self.visit_init(body_nodes)
        else:
            # Branches the judged task never runs, or whose every run the op guard refuses, are walked
            # for their bindings above but not visited (the universal rules still see them).
            unvisited = self.unvisited_branches(body_nodes)
            for node in body_nodes:
                if id(node) not in unvisited:
                    self.visit(node)
                elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)) or \
                        isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                    # State kept across calls is refused there too: no op of the guard's sees it.
                    self.c.report_only = {"module_state"}
                    try:
                        self.visit(node)
                    finally:
                        self.c.report_only = None

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
            stores = self.store_counts
            params = {a.arg for a in function_params(self.func.args)} \
                if isinstance(self.func, (ast.FunctionDef, ast.Lambda)) else set()
            for node in nodes:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                        isinstance(node.targets[0], ast.Name):
                    name = node.targets[0].id
                    path = self.dotted(node.value)
                    if path and is_extension_path(path) and (stores[name] > 1 or name in params):
                        continue  # bound to something else too: not the extension
                    if path:
                        self.local_aliases[name] = path

    def propagate(self, nodes: list[ast.AST]) -> None:
        """Flow-insensitive taint: a name assigned a tainted value anywhere is tainted everywhere."""
        changed = True
        while changed:
            changed = False
            for node in nodes:
                if isinstance(node, (ast.For, ast.comprehension)):
                    pairs = self.loop_pairs(node.target, node.iter)
                else:
                    pairs = binding_pairs(node)
                if isinstance(node, ast.Lambda):
                    for a in function_params(node.args):
                        if a.arg not in self.tainted:
                            self.tainted.add(a.arg)
                            changed = True
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr in CONTAINER_FILL_METHODS:
                    # outs.append(t), d.update(k=t): the container holds a tensor from here on.
                    receiver = node.func.value
                    if isinstance(receiver, ast.Name) and receiver.id in self.locals:
                        pairs = [(receiver, a) for a in [*node.args, *[k.value for k in node.keywords]]]
                for target, value in pairs:
                    if self.is_tainted(value):
                        names = list(target_names(target))
                        root = root_name(target)
                        if isinstance(target, (ast.Subscript, ast.Attribute)) and root in self.locals and \
                                root != "self":
                            names.append(root)  # d[k] = t, s.field = t: d and s hold a tensor
                        for name in names:
                            if name not in self.tainted:
                                self.tainted.add(name)
                                changed = True

    def is_builtin(self, node: ast.expr, name: str) -> bool:
        """`node` is the builtin `name`, not shadowed by a name of this file."""
        return isinstance(node, ast.Name) and node.id == name and node.id not in self.locals and \
            node.id not in self.c.aliases and node.id not in self.c.functions and \
            node.id not in self.c.module_names and node.id not in self.c.classes

    def loop_pairs(self, target: ast.expr, iterable: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
        """What a loop binds from what: `for i, t in enumerate(ts)` binds t from ts; i is a count."""
        if isinstance(iterable, ast.Call) and self.is_builtin(iterable.func, "enumerate") and \
                len(iterable.args) == 1 and not iterable.keywords and \
                isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            return [(target.elts[1], iterable.args[0])]
        return [(target, iterable)]

    def dotted(self, node: ast.expr) -> str | None:
        """The checker's dotted path with this body's aliases; a name the body binds to something
        else does not resolve to a module-level alias of cuda_extension."""
        path = self.c.dotted(node, self.local_aliases)
        if is_extension_path(path):
            root = root_name(node)
            if root in self.locals and root not in self.local_aliases:
                return None
        return path

    def collect_extension_locals(self) -> None:
        """Local names bound only to the extension or one of its functions through self
        (`ext = self.ext`, `f = self.f`): calls through them are custom op calls."""
        def is_extension(value: ast.expr, seen: frozenset[str]) -> bool:
            return self.kind(value) == "extension" or is_extension_path(self.dotted(value))

        names = {name for name, values in self.assigned.items()
                 if all(isinstance(v, (ast.Name, ast.Attribute)) for v in values)}
        changed = True
        while changed:
            changed = False
            for name in names - self.extension_locals:
                if self.name_bound_only_to(ast.Name(id=name, ctx=ast.Load()), frozenset(), is_extension):
                    self.extension_locals.add(name)
                    changed = True

    def collect_state_aliases(self, nodes: list[ast.AST]) -> set[str]:
        """Local names bound to a container (or an object of unknown kind) of self or of the module —
        `c = self.cache`, `for row in TABLE` — through which a mutation is module_state too."""
        aliases: set[str] = set()

        def holds_state(value: ast.expr) -> bool:
            root = root_name(value)
            if root in aliases:
                return True
            if root == "self" and not isinstance(value, ast.Name):
                return self.kind(value) in {"container", "unknown"}
            return root is not None and root in self.c.module_names and root not in self.locals

        changed = True
        while changed:
            changed = False
            for node in nodes:
                for target, value in binding_pairs(node):
                    if holds_state(value):
                        for name in target_names(target):
                            if name not in aliases:
                                aliases.add(name)
                                changed = True
        return aliases

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
            if node.id in self.extension_locals:
                return "extension"
            return "tensor" if node.id in self.tainted else "other"
        if not isinstance(node, ast.Attribute):
            return "tensor" if self.is_tainted(node) else "other"
        base = self.kind(node.value)
        attr = node.attr
        if base == "extension":
            return "extension"  # self.ext.f: a function of cuda_extension
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
            path = self.dotted(func)
            if path:
                if is_extension_path(path):
                    return True
                if path.startswith("torch."):
                    return path.split(".")[-1] not in {"is_tensor", "is_floating_point", "is_complex",
                                                       "numel", "finfo", "iinfo", "device", "Size",
                                                       "get_default_dtype", "is_available"}
                return False
            if isinstance(func, (ast.Attribute, ast.Name)) and self.kind(func) == "extension":
                return True  # self.ext.f(x), self.f(x), f(x) with f = self.f: a custom op's result
            if isinstance(func, ast.Attribute) and func.attr == "apply" and \
                    self.autograd_class(func.value) is not None:
                return True  # Fn.apply(x): what the autograd Function's forward returns
            if isinstance(func, ast.Attribute):
                if self.is_parameter_scalar_read(node):
                    return False
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

    # -- branches on the task's configuration

    def unvisited_branches(self, nodes: list[ast.AST]) -> set[int]:
        """Ids of the nodes of ModelNew.forward's branches that are not checked for compute:

        - a branch on the inputs' device that the judge never takes: the inputs of the judged task are on
          the GPU, so the body of `if not x.is_cuda:` (`x.device.type != "cuda"`, `x.is_cpu`) and the
          `else` of `if x.is_cuda:` never run;
        - the torch fallback of an if/else on the task's configuration whose other branch calls the
          extension: a test made only of the inputs' device, dtype and rank, scalar settings `__init__`
          stored on self (`self.dim == 1`), literals and torch dtypes. Such a test has the same value in
          every call of a judgement (the task's inputs and init arguments are fixed, and self's
          attributes cannot change outside __init__: module_state), so either the fallback never runs or
          it runs in the first checked call, where the run-time op guard refuses its torch ops.

        Only for an input of ModelNew.forward (a parameter rebound at most to a view or a move of an
        input), never for tensors the candidate makes or keeps (those may be on the host)."""
        if not (isinstance(self.func, ast.FunctionDef) and self.func.name == FORWARD and self.cls is not None
                and self.cls.name == "ModelNew"):
            return set()
        out: set[int] = set()
        for node in nodes:
            if not isinstance(node, ast.If) or id(node) in out:
                continue
            value = self.device_test(node.test)
            if value is not None:
                dead = node.orelse if value else node.body
            elif node.orelse and self.is_configuration(node.test):
                calls_body, calls_else = self.calls_extension(node.body), self.calls_extension(node.orelse)
                if calls_body == calls_else:
                    continue
                dead = node.orelse if calls_body else node.body
            else:
                continue
            for statement in dead:
                out.update(id(n) for n in ast.walk(statement))
        return out

    def is_input(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """A parameter of ModelNew.forward that the body rebinds, if at all, only to a view or a move
        of an input (`x = x.contiguous()`)."""
        if not isinstance(node, ast.Name) or not isinstance(self.func, ast.FunctionDef) or \
                self.func.name != FORWARD or self.cls is None or self.cls.name != "ModelNew":
            return False  # only the judge's own call passes the task's inputs
        args = self.func.args
        positional = [*args.posonlyargs, *args.args]
        # The judge passes the task's inputs positionally; a parameter with a default may be left at it
        # (a tensor made where the file was imported: on the host).
        without_default = positional[1:len(positional) - len(args.defaults)]
        if node.id not in {a.arg for a in without_default}:
            return False
        if node.id in seen:
            return True
        assigned = self.assigned.get(node.id, [])
        if len(assigned) != self.store_counts[node.id]:
            return False
        seen = seen | {node.id}
        for value in assigned:
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and
                    value.func.attr in (TENSOR_VIEW_METHODS | TENSOR_RESHAPE_METHODS | {"contiguous", "cuda", "to"})
                    and self.is_input(value.func.value, seen)):
                return False
            if value.func.attr == "to" and not all(
                    self.is_input_setting(a, seen) for a in [*value.args, *[k.value for k in value.keywords
                                                                             if k.arg != "non_blocking"]]):
                return False  # x = x.to(...) with anything but the inputs' own device or dtype
        return True

    def is_input_setting(self, node: ast.expr, seen: frozenset[str]) -> bool:
        """`x.device` or `x.dtype` of an input, "cuda", torch.float32: what x.to(...) may take and x
        stay an input (on the GPU, in the task's dtype)."""
        if is_cuda_string(node) or self.is_float32(node):
            return True
        return isinstance(node, ast.Attribute) and node.attr in {"device", "dtype"} and \
            self.is_input(node.value, seen)

    def device_test(self, test: ast.expr) -> bool | None:
        """The value of a test on the inputs' device when the inputs are on the GPU, or None when the
        test is something else (or depends on something else)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.device_test(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            values = [self.device_test(v) for v in test.values]
            decisive = isinstance(test.op, ast.Or)  # True decides an `or`, False an `and`
            if decisive in values:
                return decisive
            return None if None in values else not decisive
        if isinstance(test, ast.Attribute) and test.attr in {"is_cuda", "is_cpu"} and self.is_input(test.value):
            return test.attr == "is_cuda"
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
            left, right = test.left, test.comparators[0]
            if isinstance(left, ast.Constant):
                left, right = right, left
            if isinstance(left, ast.Attribute) and left.attr == "type" and \
                    isinstance(left.value, ast.Attribute) and left.value.attr == "device" and \
                    self.is_input(left.value.value) and isinstance(right, ast.Constant) and \
                    right.value in {"cuda", "cpu"}:
                return (right.value == "cuda") == isinstance(test.ops[0], ast.Eq)
        return None

    def is_configuration(self, test: ast.expr) -> bool:
        """A test made only of the inputs' device, dtype and rank, scalar settings of self, literals
        and torch dtypes: the same value in every call of the judged task."""
        if isinstance(test, ast.Constant):
            return True
        if isinstance(test, ast.UnaryOp):
            return self.is_configuration(test.operand)
        if isinstance(test, ast.BoolOp):
            return all(self.is_configuration(v) for v in test.values)
        if isinstance(test, ast.Compare):
            return all(self.is_configuration(v) for v in [test.left, *test.comparators])
        if isinstance(test, (ast.Tuple, ast.List, ast.Set)):
            return all(self.is_configuration(e) for e in test.elts)
        if self.device_test(test) is not None:
            return True
        if isinstance(test, ast.Attribute):
            if test.attr in {"dtype", "ndim", "is_cuda", "is_cpu"} and self.is_input(test.value):
                return True
            if test.attr == "type" and isinstance(test.value, ast.Attribute) and test.value.attr == "device" \
                    and self.is_input(test.value.value):
                return True
            if self_attr(test) is not None and test.attr != "training" and self.kind(test) == "scalar":
                return True
            path = self.dotted(test)
            return path is not None and path.startswith("torch.") and path.split(".", 1)[1] in TORCH_DTYPES
        if isinstance(test, ast.Call) and not test.keywords:
            func = test.func
            if isinstance(func, ast.Attribute) and func.attr in {"dim", "ndimension"} and not test.args:
                return self.is_input(func.value)
            if self.is_builtin(func, "len") and len(test.args) == 1:
                arg = test.args[0]
                return isinstance(arg, ast.Attribute) and arg.attr == "shape" and self.is_input(arg.value)
        return False

    def calls_extension(self, statements: list[ast.stmt]) -> bool:
        """Whether the statements call the extension (through any of its names)."""
        for statement in statements:
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and (is_extension_path(self.dotted(node.func)) or
                                                   self.kind(node.func) == "extension"):
                    return True
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        node.func.attr == "apply" and self.autograd_class(node.func.value) is not None:
                    return True  # Fn.apply(x): an autograd wrapper, its forward checked on its own
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
        root = root_name(node)
        if root in self.state_aliases:
            self.c.report("module_state", node, f"writing `{snippet(node)}` keeps state across calls")
            return
        if self.is_tainted(node.value):
            if self.name_bound_only_to(node.value, frozenset(), self.is_container_display, tainted_too=True):
                return  # d = {}; d[k] = t: a local Python container, not a tensor
            self.report_tensor(node, f"writing into `{snippet(node.value)}` is an in-place tensor operation")
            return
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
                if root == "self" or root is None or root not in self.locals or root in self.state_aliases:
                    self.c.report("module_state", node, f"assigning `{snippet(element)}` outside "
                                                        "__init__ keeps state across calls; set attributes "
                                                        "in __init__ and compute every output anew")
                elif self.is_tainted(element.value) and not self.is_ctx(element.value):
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
        if path in {"torch", "torch.nn"} and id(node) not in self.attribute_bases:
            # helper(torch, x) with `def helper(t, x): return t.relu(x)`: the module as a value hides
            # every call made through it.
            self.c.report("torch_compute", node, f"`{node.id}` ({path}) as a value hides the torch calls "
                                                 "made through it; outside __init__ name only what you use")
        elif path and path.startswith("torch") and not torch_path_rule(path) and \
                path not in TORCH_VALUES_ALLOWED and path not in {"torch", "torch.nn"} and \
                not is_nn_class(path) and not self.is_call_target(node):
            self.c.report("torch_compute", node, f"`{path}` may not be used outside __init__")
        if node.id in STATE_BUILTINS and node.id not in self.locals and node.id not in self.c.aliases:
            self.c.report("module_state", node, f"`{node.id}()` is how caches key tensors across calls")

    def is_call_target(self, node: ast.AST) -> bool:
        return id(node) in self.call_targets

    def visit_attribute(self, node: ast.Attribute) -> None:
        path = self.dotted(node)
        if path is None or not path.startswith("torch"):
            return
        if self.is_call_target(node) or torch_path_rule(path):
            return
        # Only the whole chain is judged (torch.float32, not torch); a class of torch.nn may be referred
        # to (isinstance(m, nn.Conv2d)), not called.
        if path in TORCH_VALUES_ALLOWED or id(node) in self.inner_chain or is_nn_class(path):
            return
        self.c.report("torch_compute", node, f"`{path}` may not be used outside __init__")

    def visit_call(self, node: ast.Call) -> None:
        func = node.func
        path = self.dotted(func)
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

    def check_path_call(self, node: ast.Call, path: str, tainted_args: list[Any]) -> None:
        if path.startswith("cuda_extension."):
            return
        if path.startswith("torch"):
            if torch_path_rule(path):
                return  # reported by the universal rules
            if path in TORCH_CALLS_ALLOWED:
                return
            if path == "torch.tensor":
                # torch.tensor([]) as a placeholder, torch.tensor(x.shape): a small tensor made from
                # literals and metadata, never from a tensor's values (the op guard sees lift_fresh for it,
                # and refuses the copy torch.tensor(t) makes).
                if tainted_args:
                    self.report_tensor(node, f"`{snippet(node)}` copies a tensor's values (allowed: "
                                             "torch.tensor(...) of literals and shapes, torch.empty*/zeros*/"
                                             "ones*/full*)")
                return
            self.c.report("torch_compute", node,
                          f"`{path}(...)` is a torch operation; only tensor creation "
                          "(torch.empty*/zeros*/ones*/full*) is allowed outside __init__")
            return
        if path.startswith(("math.", "typing.", "numbers.")):
            if tainted_args:
                self.report_tensor(node, f"`{path}` on a tensor reads its values")
            return
        self.c.report("unknown_call", node, f"`{path}(...)` is not a call forward may make")

    def check_name_call(self, node: ast.Call, name: str, tainted_args: list[Any]) -> None:
        if name in self.extension_locals:
            return  # f = self.f; f(x): the custom op through another name
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

    def check_method_call(self, node: ast.Call, func: ast.Attribute, tainted_args: list[Any]) -> None:
        receiver = func.value
        method = func.attr
        kind = self.kind(func)
        if kind == "method":
            self.follow_local_call(node, self.profile)
            return
        if kind == "extension":
            return  # self.ext.f(x), self.f(x): the custom op through another name
        if kind.startswith("local:"):
            return  # an instance of a class of this file: its forward is checked on its own
        if method == "apply" and (autograd := self.autograd_class(receiver)) is not None:
            self.follow_autograd_apply(node, autograd)
            return
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
        root = root_name(receiver)
        if root is not None and root in self.state_aliases:
            self.c.report("module_state", node, f"`{snippet(func)}(...)` uses state kept across calls "
                                                f"(`{root}` holds a container of self or of the module)")
            return
        if method in LIST_METHODS and self.name_bound_only_to(receiver, frozenset(), self.is_list_display,
                                                             tainted_too=True):
            return  # outs = [x]; outs.append(y): a local list of tensors, no tensor operation
        if self.is_parameter_scalar_read(node):
            return  # self.scale.item(): a weight's value as a number, for a kernel's argument
        if self.is_ctx(receiver) and method in AUTOGRAD_CTX_METHODS:
            return  # ctx.save_for_backward(y): kept for backward, which the judged forward never runs
        if self.is_tainted(receiver):
            if method in TENSOR_METADATA_METHODS or method in TENSOR_VIEW_METHODS or \
                    method in TENSOR_CREATION_METHODS or method in TENSOR_RESHAPE_METHODS:
                return
            if method in TENSOR_MOVE_METHODS and self.moves_data_only(node, method):
                return
            if method == "copy_" and self.copies_into_own_tensor(node, receiver):
                return  # dst.copy_(src): data movement; a copy that converts is the op guard's to refuse
            if method in TENSOR_MOVE_METHODS or method in TENSOR_PRECISION_METHODS:
                self.report_tensor(node, f"`{snippet(node)}` converts values or moves them off the GPU "
                                         "(allowed: .contiguous(), .cuda(), .to(device) with x.device, "
                                         "\"cuda\" or torch.device(\"cuda\"), dst.copy_(src) into a tensor "
                                         "of yours; convert dtypes in your kernel)")
                return
            self.report_tensor(node, f"`.{method}()` on `{snippet(receiver)}` runs a torch operator "
                                     "(allowed: metadata such as size()/dim()/stride(), views such as "
                                     "view()/unsqueeze()/transpose(), .contiguous()/.cuda()/.to(device) and "
                                     "dst.copy_(src) into a tensor of yours)")
            return
        if root is not None and root not in self.locals and root not in self.c.aliases and \
                (root in self.c.module_names or root == "self"):
            self.c.report("module_state", node, f"`{snippet(func)}(...)` changes module-level state")
            return
        if root is not None and root in self.locals:
            return  # a method of a local value (a list's append, a shape's index)
        self.c.report("unknown_call", node, f"`{snippet(func)}(...)` is not a call forward may make")

    def copies_into_own_tensor(self, node: ast.Call, receiver: ast.expr) -> bool:
        """dst.copy_(src[, non_blocking]) into a local bound only to fresh memory (tensor creation, a
        kernel's result): data movement, as in C++ (src's own expression is checked on its own). A copy_
        into an input, a view of one or a parameter stays refused (the judge's inputs and weights must
        stay untouched); a copy that converts dtype or device is refused at run time by the op guard
        (aten.copy_)."""
        flag = node.args[1:]  # copy_(src, non_blocking) positionally
        return isinstance(receiver, ast.Name) and self.is_fresh_tensor(receiver) \
            and len(node.args) in (1, 2) and all(isinstance(a, ast.Constant) and type(a.value) is bool for a in flag) \
            and all(k.arg == "non_blocking" for k in node.keywords)

    def is_fresh_tensor(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Memory no input or weight shares: torch.empty*/zeros*/ones*/full*, x.new_empty(...) and the
        like, a custom op's result, or a local bound only to such values."""
        if isinstance(node, ast.Name):
            return self.name_bound_only_to(node, seen, self.is_fresh_tensor, tainted_too=True)
        if not isinstance(node, ast.Call):
            return False
        return self.makes_tensor(node) or \
            (isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_CREATION_METHODS)

    def makes_tensor(self, node: ast.Call) -> bool:
        """A custom op's call or torch's tensor creation (torch.empty*/zeros*/ones*/full*)."""
        path = self.dotted(node.func)
        return is_extension_path(path) or self.kind(node.func) == "extension" or \
            (path in TORCH_CALLS_ALLOWED and path.split(".")[-1].split("_")[0] in {"empty", "zeros", "ones", "full"})

    def is_parameter_scalar_read(self, node: ast.Call) -> bool:
        """`self.<weight>.item()` (or a submodule's weight): a parameter's or buffer's value read as a
        number to pass to a kernel. An input's or a computed tensor's item() stays tensor_compute: values
        read on the host are host computation the device clock never sees."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "item" and not node.args and not node.keywords):
            return False
        receiver = func.value
        return isinstance(receiver, ast.Attribute) and root_name(receiver) == "self" and \
            self.kind(receiver) == "tensor"

    def moves_data_only(self, node: ast.Call, method: str) -> bool:
        """x.contiguous(...), x.cuda([device], [non_blocking=...]) and x.to(device[, non_blocking=...])
        move data without arithmetic; a dtype, another tensor or copy=True as to()'s argument do not
        qualify (they convert values or clone). Whether a copy did the model's work is for the run-time
        op guard and the kernel audit."""
        if method == "contiguous":
            return all(k.arg == "memory_format" for k in node.keywords) and len(node.args) <= 1
        if any(k.arg not in {"device", "non_blocking", "dtype"} for k in node.keywords):
            return False
        # dtype=torch.float32 (the tasks' precision: a no-op there, an upcast elsewhere) or the dtype of
        # one of the task's tensors (an input, a parameter: x.to(w.dtype)) converts to no lower precision;
        # any other dtype is refused. A conversion that does happen is refused at run time too (the op
        # guard refuses aten::_to_copy; to() to the tensor's own dtype and device dispatches nothing).
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
        if dtype is not None and (method != "to" or not self.is_task_dtype(dtype)):
            return False
        args = list(node.args)
        if method == "to" and dtype is None and args and self.is_task_dtype(args[-1]) and \
                (len(args) == 2 or not node.keywords):
            if len(args) == 1 and self.is_float32(args[0]):
                return False  # to(torch.float32) alone: name the device too (to(x.device, torch.float32))
            args.pop()  # to(device, w.dtype), to(w.dtype)
            if not args and not node.keywords:
                return True
        devices = [*args, *[k.value for k in node.keywords if k.arg == "device"]]
        if method == "cuda":
            return len(node.args) <= 1 and all(self.is_gpu_device(d) or
                                               (isinstance(d, ast.Constant) and type(d.value) is int)
                                               for d in devices)
        if not devices and dtype is not None and not args and not self.is_float32(dtype):
            return True  # to(dtype=w.dtype); to(dtype=torch.float32) alone names no device and is refused
        # to(): exactly one device, given positionally or as device=.
        if len(devices) != 1 or len(args) > 1:
            return False
        return self.is_gpu_device(devices[0]) or self.is_tensor_device(devices[0])

    def is_task_dtype(self, node: ast.expr) -> bool:
        """torch.float32, or `t.dtype` of one of the task's tensors: an input of forward or a parameter of
        the model (its dtype is the task's: the reference state_dict is loaded over it)."""
        if self.is_float32(node):
            return True
        return isinstance(node, ast.Attribute) and node.attr == "dtype" and self.is_task_tensor(node.value)

    def is_task_tensor(self, node: ast.expr) -> bool:
        """An input of ModelNew.forward, a tensor attribute of self (a parameter, a buffer, a layer's
        weight) or an element of an nn.ParameterList/ParameterDict of self."""
        if self.is_input(node):
            return True
        if isinstance(node, ast.Attribute):
            return root_name(node) == "self" and self.kind(node) == "tensor"
        if isinstance(node, ast.Subscript) and (container := self_attr(node.value)) is not None:
            return self.is_parameter_container(container)
        return False

    def is_parameter_container(self, attr: str) -> bool:
        """self.<attr> is only ever assigned an nn.ParameterList or nn.ParameterDict."""
        if self.cls is None:
            return False
        values = [n.value for n in ast.walk(self.cls) if isinstance(n, (ast.Assign, ast.AnnAssign))
                  and n.value is not None
                  and any(self_attr(t) == attr for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        return bool(values) and all(isinstance(v, ast.Call) and self.c.dotted(v.func) in
                                    {"torch.nn.ParameterList", "torch.nn.ParameterDict"} for v in values)

    def is_float32(self, node: ast.expr) -> bool:
        return self.c.dotted(node, self.local_aliases) in {"torch.float32", "torch.float"}

    def is_gpu_device(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """"cuda", "cuda:0", torch.device("cuda"...), self.device set to one in __init__, or a local name
        bound only to such values: never the host."""
        if is_cuda_string(node):
            return True
        if isinstance(node, ast.Call) and self.dotted(node.func) == "torch.device":
            return is_cuda_device_literal(node)
        if isinstance(node, ast.Attribute) and self.kind(node) == "device":
            return True
        return self.name_bound_only_to(node, seen, self.is_gpu_device)

    def is_tensor_device(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """`t.device` of a tensor t, or a local name bound only to such values (the device the inputs
        are on; a copy to the host is refused by the run-time op guard)."""
        if isinstance(node, ast.Attribute) and node.attr == "device" and \
                (self.is_plain_tensor(node.value) or self.is_task_tensor(node.value)):
            return True
        return self.name_bound_only_to(node, seen, self.is_tensor_device)

    def is_plain_tensor(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Certainly a tensor, not merely a value the taint analysis cannot rule out (an object of a class
        of this file fished out of a list): an input of forward, a tensor attribute of self (parameters,
        buffers, a layer's weight), a custom op's result, tensor creation, a view or a move of one of
        those, or a local bound only to such values."""
        if isinstance(node, ast.Name):
            if isinstance(self.func, ast.FunctionDef) and self.func.name == FORWARD and self.cls is not None \
                    and node.id in {a.arg for a in function_params(self.func.args)[1:]} and \
                    node.id in self.tainted:
                # An input, unless the body rebinds it to something else (x = x.contiguous() is fine).
                if node.id in seen:
                    return True
                assigned = self.assigned.get(node.id, [])
                return len(assigned) == self.store_counts[node.id] and \
                    all(self.is_plain_tensor(value, seen | {node.id}) for value in assigned)
            return self.name_bound_only_to(node, seen, self.is_plain_tensor, tainted_too=True)
        if isinstance(node, ast.Attribute):
            return root_name(node) == "self" and self.kind(node) == "tensor"
        if isinstance(node, ast.Call):
            if self.makes_tensor(node):
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in (
                    TENSOR_VIEW_METHODS | TENSOR_MOVE_METHODS | TENSOR_CREATION_METHODS):
                return self.is_plain_tensor(node.func.value, seen)
        return False

    def is_list_display(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """[a, b], [f(t) for t in ts], list(...): a new Python list."""
        if isinstance(node, (ast.List, ast.ListComp)):
            return True
        return isinstance(node, ast.Call) and self.is_builtin(node.func, "list")

    def is_container_display(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """A new Python list or dict: [..], {..}, comprehensions, list(...), dict(...)."""
        if isinstance(node, (ast.Dict, ast.DictComp)) or self.is_list_display(node, seen):
            return True
        return isinstance(node, ast.Call) and self.is_builtin(node.func, "dict")

    def name_bound_only_to(self, node: ast.expr, seen: frozenset[str], test: Callable[[ast.expr, frozenset[str]], bool],
                           tainted_too: bool = False) -> bool:
        """A local name of this body (not a parameter) whose every binding is a plain assignment of a
        value `test` accepts (and that holds no tensor, unless `tainted_too`)."""
        if not isinstance(node, ast.Name) or node.id not in self.locals or node.id in seen or \
                (node.id in self.tainted and not tainted_too):
            return False
        if isinstance(self.func, (ast.FunctionDef, ast.Lambda)) and \
                node.id in {a.arg for a in function_params(self.func.args)}:
            return False
        assigned = self.assigned.get(node.id, [])
        if not assigned or len(assigned) != self.store_counts[node.id]:
            return False  # bound by a loop, a with, a tuple target, a walrus, a del ...
        return all(test(value, seen | {node.id}) for value in assigned)

    def autograd_class(self, node: ast.expr) -> ast.ClassDef | None:
        """The class of this file that `node` names, when it derives from torch.autograd.Function."""
        if isinstance(node, ast.Name) and node.id in self.c.classes and node.id not in self.locals and \
                self.c.is_autograd_function(self.c.classes[node.id]):
            return self.c.classes[node.id]
        return None

    def class_chain(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its bases among the classes of this file."""
        chain, todo = [], [cls]
        while todo:
            current = todo.pop()
            if current in chain:
                continue
            chain.append(current)
            todo.extend(self.c.classes[b.id] for b in current.bases
                        if isinstance(b, ast.Name) and b.id in self.c.classes)
        return chain

    def follow_autograd_apply(self, node: ast.Call, cls: ast.ClassDef) -> None:
        """`Fn.apply(...)` runs Fn.forward(ctx, ...) (and setup_context, where Fn defines one): both are
        checked like forward, with the taint of the call's arguments. An `apply` of the file's own is
        checked with every argument tainted."""
        for owner in self.class_chain(cls):
            for item in owner.body:
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        any(isinstance(n, ast.Name) and n.id in {"apply", FORWARD, "setup_context"} and
                            isinstance(n.ctx, ast.Store) for n in ast.walk(item)):
                    self.c.report("unknown_call", node, f"`{snippet(node.func)}(...)`: {owner.name} binds "
                                  "apply/forward/setup_context other than by a def; define forward as a "
                                  "staticmethod that calls your kernels")
                    return
        own_apply = self.c.find_method(cls, "apply")
        if own_apply is not None:
            owner, target = own_apply
            self.c.analyse(target, owner, FORWARD, frozenset(a.arg for a in function_params(target.args)))
            return
        hit = self.c.find_method(cls, FORWARD)
        if hit is None:
            self.c.report("unknown_call", node, f"`{snippet(node.func)}(...)`: {cls.name} defines no forward")
            return
        owner, target = hit
        setup = self.c.find_method(cls, "setup_context")
        params = function_params(target.args)
        if setup is None:
            params = params[1:]  # forward(ctx, *args)
        tainted = {p.arg for p, a in zip(params, node.args, strict=False)
                   if self.is_tainted(a) or isinstance(a, ast.Starred)}
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None or self.is_tainted(k.value) for k in node.keywords):
            tainted |= {p.arg for p in params}
        self.c.analyse(target, owner, FORWARD, frozenset(tainted))
        if setup is not None:
            self.c.analyse(setup[1], setup[0], FORWARD,
                           frozenset(a.arg for a in function_params(setup[1].args)[1:]))

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
        for param, arg in zip(params, node.args, strict=False):
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
