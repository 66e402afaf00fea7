"""The Python-AST similarity of `cuda-agent synth` (contamination control and near-duplicate removal).

A program becomes a token sequence by a pre-order walk of its AST (docstrings dropped):
- every node contributes its type name (`FunctionDef`, `Call`, `BinOp`, `Mult`, ...);
- an attribute access contributes `.name` (`.Conv2d`, `.relu`): the ops used are kept verbatim;
- a name that the program never binds (`torch`, `nn`, `F`, `super`, builtins) and the KernelBench API
  (`Model`, `forward`, `get_inputs`, `get_init_inputs`, `__init__`, `self`) are kept verbatim;
- every other name (locals, arguments, module constants such as `batch_size`, function names) becomes
  `v<k>`, k counting distinct names in order of first appearance: renaming does not change the sequence;
- a constant contributes its type (`int`, `float`, `str`) and not its value: sizes do not matter.

similarity(a, b) = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() = 2·M / (|a| + |b|),
M the number of tokens in the matching blocks: 1.0 for the same structure, 0.0 for nothing in common.

    ref = Corpus([code_of_task_1, ...])
    best, index = ref.max_similarity(tokens(candidate_code))
"""

from __future__ import annotations

import ast
import difflib

KEPT_NAMES = {"Model", "forward", "get_inputs", "get_init_inputs", "__init__", "self"}


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the program binds itself (assignments, arguments, defs, imports-as aside)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return bound - KEPT_NAMES


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]


def tokens(code: str) -> list[str]:
    """The normalized token sequence of `code`; raises SyntaxError when it does not parse."""
    tree = ast.parse(code)
    _strip_docstrings(tree)
    bound = _bound_names(tree)
    renamed: dict[str, str] = {}

    def name(n: str) -> str:
        if n not in bound:
            return n
        if n not in renamed:
            renamed[n] = f"v{len(renamed)}"
        return renamed[n]

    out: list[str] = []

    def visit(node: ast.AST) -> None:
        out.append(type(node).__name__)
        if isinstance(node, ast.Name):
            out.append(name(node.id))
        elif isinstance(node, ast.arg):
            out.append(name(node.arg))
        elif isinstance(node, ast.Attribute):
            out.append("." + node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(name(node.name))
        elif isinstance(node, ast.Constant):
            out.append(type(node.value).__name__)
        elif isinstance(node, ast.keyword) and node.arg:
            out.append(node.arg + "=")
        elif isinstance(node, ast.alias):
            out.append(node.name)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Load, ast.Store, ast.Del)):
                continue
            visit(child)

    visit(tree)
    return out


def similarity(a: list[str], b: list[str]) -> float:
    """2·M / (|a| + |b|) over the two token sequences (1.0 when both are empty)."""
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


class Corpus:
    """Token sequences to compare candidates against; grows as tasks are kept (near-duplicates)."""

    def __init__(self, codes: list[str] | None = None, names: list[str] | None = None):
        self.entries: list[tuple[str, list[str]]] = []
        for i, code in enumerate(codes or []):
            try:
                self.add(names[i] if names else str(i), tokens(code))
            except SyntaxError:
                continue  # a reference that does not parse cannot be copied either

    def add(self, name: str, toks: list[str]) -> None:
        self.entries.append((name, toks))

    def __len__(self) -> int:
        return len(self.entries)

    def max_similarity(self, toks: list[str], threshold: float) -> tuple[float, str | None]:
        """The highest similarity to an entry and its name; entries whose cheap upper bound
        (SequenceMatcher.quick_ratio) is at most `threshold` are not compared exactly, so a result at
        or below `threshold` is only a lower bound of the true maximum."""
        best, best_name = 0.0, None
        matcher = difflib.SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(toks)
        for name, other in self.entries:
            matcher.set_seq1(other)
            if matcher.real_quick_ratio() <= max(threshold, best) or matcher.quick_ratio() <= max(threshold, best):
                continue
            score = matcher.ratio()
            if score > best:
                best, best_name = score, name
        return best, best_name
