"""Small questions about Python syntax trees shared by the rule families."""

from __future__ import annotations

import ast
from typing import Iterable

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
