"""Small questions about Python syntax trees shared by the rule families."""

from __future__ import annotations

import ast
import collections
from collections.abc import Iterable

from .vocabulary import SCALAR_ANNOTATIONS


def is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` — never runs when the harness imports model_new.py."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    sides = [test.left, *test.comparators]
    return (len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def annotation_is_scalar(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id in SCALAR_ANNOTATIONS
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value in SCALAR_ANNOTATIONS
    return False


def function_params(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *args.kwonlyargs,
            *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]


def target_names(target: ast.expr) -> Iterable[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from target_names(element)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def self_attr(node: ast.expr) -> str | None:
    """`name` for `self.name`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def snippet(node: ast.AST) -> str:
    """The source of a short expression, for messages; long ones are not unparsed (that would make
    checking quadratic in the expression's size)."""
    line, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    start, stop = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", 0)
    if line is None or end != line or stop - start > 80:
        return "this expression"
    return ast.unparse(node)


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_cuda_string(node: ast.expr | None) -> bool:
    """"cuda", "cuda:0": a device string naming a GPU (never the host)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and \
        (node.value == "cuda" or node.value.startswith("cuda:"))


def is_cuda_device_literal(call: ast.Call) -> bool:
    """torch.device("cuda"), torch.device("cuda", 0), torch.device(type="cuda", index=0): the GPU."""
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "type"), None)
    return is_cuda_string(first)


def is_extension_path(path: str | None) -> bool:
    """cuda_extension or a name in it."""
    return path is not None and (path == "cuda_extension" or path.startswith("cuda_extension."))


def module_bindings(tree: ast.Module, skipped: set[int]) -> collections.Counter[str]:
    """How often each name is bound at module level: assignments (also inside if/for/with blocks at
    module level), loop and with targets, imports, defs and classes. Function and class bodies bind
    their own names (a `global` statement is a violation of its own)."""
    counts: collections.Counter[str] = collections.Counter()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if id(node) in skipped:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] += 1
            stack.extend(node.decorator_list)
            stack.extend(getattr(node, "bases", []))
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                counts[alias.asname or alias.name.split(".", 1)[0]] += 1
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] += 1
        stack.extend(ast.iter_child_nodes(node))
    return counts


def names_bound_in(nodes: Iterable[ast.AST]) -> set[str]:
    """Every name the statements bind anywhere inside them: assignment and loop targets, imports,
    defs and classes."""
    names: set[str] = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".", 1)[0])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def is_literal(node: ast.expr | None) -> bool:
    """A constant, a negative number or a tuple/list of those: a default that is a plain value."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return is_literal(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(is_literal(e) for e in node.elts)
    return False


def params_with_object_defaults(args: ast.arguments) -> set[str]:
    """Parameters whose default is not a plain value (`def f(self, ext=torch)`): whatever the
    annotation says, they may hold a module or a function."""
    positional = [*args.posonlyargs, *args.args]
    names = set()
    for param, default in zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True):
        if not is_literal(default):
            names.add(param.arg)
    for param, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if kw_default is not None and not is_literal(kw_default):
            names.add(param.arg)
    return names
