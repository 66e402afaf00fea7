"""The `static` job: model_new.py exists, parses, defines a top-level class ModelNew, and obeys the AST
rules of `ast_rules` (the allowlist of what the candidate's Python may do).

Imports no torch, so it answers in milliseconds. Every violation is listed in the result's `violations`
(`[{rule, file, line, message}]`, in source order); the first one is the reason,
`"<rule>: model_new.py:LINE: message"`, with `error_kind: "static_rule"`. The scan of the .cu/.cpp
files is the judge's own (C++, src/judge/static_rules.h).

"policy_rules" ({"torch_compute": bool}, default false) is the judge's policy's (ast_rules/policy.py):
with torch_compute, torch may do part of the work and the kernelbench rules hold instead.

A spec with "rules": false (the judge's test-only --test-skip-static, docs/hacks.md "Defence in depth")
checks only that model_new.py exists, parses and defines ModelNew: no size limit and no AST rules.
"""

from __future__ import annotations

import ast
import os
from typing import Any

from ..ast_rules import PolicyRules, Violation, check_tree
from ..errors import JobError, describe, one_line
from ..spec import require

MAX_MODEL_NEW_BYTES = 256 * 1024


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
    except (RecursionError, MemoryError) as exc:
        raise JobError("syntax_error", f"model_new.py:1: cannot be parsed ({describe(exc)})") from exc


def reject(result: dict[str, Any], violations: list[Violation]) -> None:
    """Records the violations and fails the job with the first one as the reason."""
    result["violations"] = [v.as_dict() for v in violations]
    raise JobError("static_rule", one_line(violations[0].reason()))


def defines_class(tree: ast.Module, name: str) -> bool:
    return any(isinstance(node, ast.ClassDef) and node.name == name for node in tree.body)


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    candidate_dir = require(spec, "candidate_dir", str)
    rules = require(spec, "rules", bool, default=True)
    try:
        policy_rules = PolicyRules.from_spec(spec.get("policy_rules"))
    except ValueError as exc:
        raise JobError("internal", f"spec: {exc}") from exc
    result["violations"] = []
    result["rules"] = rules
    path = os.path.join(candidate_dir, "model_new.py")
    if not os.path.isfile(path):
        raise JobError("missing_model_new", f"model_new.py not found in {candidate_dir}")
    size = os.path.getsize(path)
    if rules and size > MAX_MODEL_NEW_BYTES:
        reject(result, [Violation("unanalysable", 1, f"{size} bytes: model_new.py may have at most "
                                                     f"{MAX_MODEL_NEW_BYTES}")])
    tree = parse_model_new(path)
    if not defines_class(tree, "ModelNew"):
        raise JobError("no_model_new_class", "model_new.py defines no top-level class ModelNew")
    violations = check_tree(tree, policy_rules) if rules else []
    if violations:
        reject(result, violations)
