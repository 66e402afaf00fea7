"""The `static` job: model_new.py exists, parses, and defines a top-level class ModelNew.

Imports no torch, so it answers in milliseconds. The deeper rules (the AST allowlist, the scan of the
.cu/.cpp files) belong to the judge's static checks.
"""

from __future__ import annotations

import ast
import os

from ..errors import JobError, one_line
from ..spec import require


def parse_model_new(path: str) -> ast.Module:
    """The AST of model_new.py; a syntax error is JobError("syntax_error", "model_new.py:LINE: msg")."""
    with open(path, "rb") as f:
        source = f.read()
    try:
        return ast.parse(source, filename="model_new.py")
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes, in Python 3.11
        line = getattr(exc, "lineno", None) or 1
        message = getattr(exc, "msg", None) or str(exc)
        raise JobError("syntax_error", f"model_new.py:{line}: {one_line(message)}") from exc


def defines_class(tree: ast.Module, name: str) -> bool:
    return any(isinstance(node, ast.ClassDef) and node.name == name for node in tree.body)


def run(spec: dict, result: dict) -> None:
    candidate_dir = require(spec, "candidate_dir", str)
    path = os.path.join(candidate_dir, "model_new.py")
    if not os.path.isfile(path):
        raise JobError("missing_model_new", f"model_new.py not found in {candidate_dir}")
    tree = parse_model_new(path)
    if not defines_class(tree, "ModelNew"):
        raise JobError("no_model_new_class", "model_new.py defines no top-level class ModelNew")
