"""KernelBench's single-file solution as a candidate folder, read statically.

A KernelBench solution is one Python file whose `ModelNew` builds its CUDA with
`torch.utils.cpp_extension.load_inline(name=..., cpp_sources=..., cuda_sources=..., functions=[...])`.
This module reads the arguments of every `load_inline` call from the file's syntax tree — it never
imports or runs the file — and writes the candidate folder the judge builds:

    kernels/<name>.cu           the call's cuda_sources, after load_inline's implicit headers
    kernels/<name>_binding.cpp  its cpp_sources, after load_inline's implicit header, and the binding:
                                each function of functions=[...] registered with REGISTER_BINDING, or
                                the file's own PYBIND11_MODULE block turned into the registration
                                function (the static rules refuse PYBIND11_MODULE itself)
    model_new.py                the author's file with each load_inline(...) call replaced by the
                                name `cuda_extension`, and the cpp_extension import by
                                `import cuda_extension`; nothing else changed, lines kept in place

Sources must be written in the file: string literals, `+` of them, names assigned once (at module
level or in the enclosing function) to such strings, attributes the file assigns exactly once by a
plain assignment (`self.cpp_source = "..."` in a method of the class whose method calls load_inline,
`SRC = "..."` in a class body read as `self.SRC` or `C.SRC`), lists of them, `"".join([...])` and
`textwrap.dedent(...)` of them. Sources computed at run time (an f-string with fields, `%` or
`.format`, a file read, a name or attribute assigned twice or from a call, an attribute set through
setattr or of another object) are refused with the file and line, as
is a file that `load_inline` itself could never build. The compiler and linker flags the author
passed are ignored (the judge compiles with its own) and reported as notes.

    python3 -m cuda_agent_harness.single_file SOLUTION.py OUT_DIR [--json]

exits 0 when OUT_DIR holds the candidate, 2 when the file is refused (the reason on stderr, or in
the JSON report: {"ok", "error", "line", "notes", "files", "source"}). Stdlib only.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

CPP_EXTENSION = "torch.utils.cpp_extension"
EXTENSION_NAME = "cuda_extension"

# load_inline's positional parameters as KernelBench's solutions were written for them (torch < 2.7;
# later versions put sycl_sources fourth, so a fourth positional argument is read as functions).
POSITIONAL = ("name", "cpp_sources", "cuda_sources", "functions")

# Arguments that only steer torch's own build: the judge builds with its own flags.
IGNORED = {
    "extra_cflags": "the judge compiles with its own flags",
    "extra_cuda_cflags": "the judge compiles with its own flags (fast math follows the precision policy)",
    "extra_ldflags": "the judge links with its own flags",
    "extra_include_paths": "candidates include only the toolkit's, torch's and their own kernels/ headers",
    "extra_sycl_cflags": "SYCL is not built",
    "build_directory": "the judge builds in its own folder",
    "verbose": "the judge reports the build itself",
    "with_cuda": "the device follows the judge's --device",
    "with_sycl": "SYCL is not built",
    "keep_intermediates": "the judge keeps its own objects",
    "use_pch": "the judge precompiles the binding headers itself",
    "with_pytorch_error_handling": "bound functions are registered with pybind11 directly",
}
KNOWN = set(POSITIONAL) | set(IGNORED) | {"sycl_sources", "is_python_module", "no_implicit_headers"}

# load_inline's implicit headers (torch/utils/cpp_extension.py).
CPP_HEADER = "#include <torch/extension.h>"
CUDA_HEADERS = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")
REGISTRY_INCLUDE = '#include "../binding_registry.h"'

# Names that end a type in a declaration's return type, never: `return f(x)`, `new T(x)` ...
NOT_A_TYPE = {
    "return", "else", "case", "new", "delete", "throw", "co_return", "co_yield", "co_await", "goto",
    "sizeof", "alignof", "decltype", "typeid", "operator", "if", "while", "for", "switch", "do",
    "static_assert", "using", "typedef", "namespace", "struct", "class", "union", "enum", "public",
    "private", "protected", "and", "or", "not",
}


class Refusal(Exception):
    """The file cannot become a candidate; `line` is where, in the solution file, when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class Conversion:
    files: dict[str, str]                       # relative path -> content
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# C++ text: literals and comments blanked, declarations, PYBIND11_MODULE blocks.


def blank_cpp(text: str) -> str:
    """`text` with comments, preprocessor lines and the contents of string and character literals
    replaced by spaces (newlines and quotes kept), so positions in it are positions in `text`."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                if text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"' and i > 0 and text[i - 1] == "R" and not _identifier_before(text, i - 1):
            open_paren = text.find("(", i + 1)
            delimiter = text[i + 1:open_paren] if open_paren >= 0 else ""
            end = text.find(")" + delimiter + '"', open_paren + 1) if open_paren >= 0 else -1
            j = n if end < 0 else end + len(delimiter) + 2
            blank(i + 1, j - 1)
            i = j
        elif c == '"' or (c == "'" and not _digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _identifier_before(text: str, i: int) -> bool:
    """Whether the character before the raw-string prefix at `i` continues an identifier (so `R` is
    the end of a name, not a prefix); u8R, uR, UR and LR are prefixes."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return text[j:i] not in ("", "u8", "u", "U", "L")


def _digit_separator(text: str, i: int) -> bool:
    """Whether the quote at `i` separates digits (1'000'000) rather than opening a character."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_."):
        j -= 1
    return j < i and text[j].isdigit()


TOKEN = re.compile(r'"[^"\n]*"|\'[^\'\n]*\'|[A-Za-z_]\w*|\d[\w.\']*|::|->|&&|\|\||\S')


def cpp_tokens(blanked: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in TOKEN.finditer(blanked)]


def _match_close(tokens: list[tuple[str, int, int]], k: int) -> int:
    """The index of the token that closes the bracket at tokens[k], or -1."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    opening = tokens[k][0]
    closing = pairs[opening]
    depth = 0
    for m in range(k, len(tokens)):
        if tokens[m][0] == opening:
            depth += 1
        elif tokens[m][0] == closing:
            depth -= 1
            if depth == 0:
                return m
    return -1


def declarations(text: str) -> dict[str, str]:
    """The free functions `text` declares or defines outside any function or class body (namespaces
    and extern "C" blocks are looked into), by name, each with its declaration's text."""
    blanked = blank_cpp(text)
    tokens = cpp_tokens(blanked)
    found: dict[str, str] = {}
    braces: list[bool] = []  # per open brace: whether it opens a body (function, class, initialiser)
    parens = 0
    statement = 0            # index of the token that starts the current statement
    for k, (tok, _, _) in enumerate(tokens):
        if tok in ("(", "["):
            parens += 1
        elif tok in (")", "]"):
            parens = max(0, parens - 1)
        elif tok == "{":
            head = [t for t, _, _ in tokens[statement:k]]
            transparent = parens == 0 and (
                (head[:1] == ["namespace"] or head[:2] == ["inline", "namespace"])
                or (len(head) == 2 and head[0] == "extern" and head[1].startswith('"')))
            braces.append(not transparent)
            statement = k + 1
        elif tok == "}":
            if braces:
                braces.pop()
            statement = k + 1
        elif tok == ";" and parens == 0:
            statement = k + 1
        elif (parens == 0 and not any(braces) and (tok[0].isalpha() or tok[0] == "_")
              and k + 1 < len(tokens) and tokens[k + 1][0] == "(" and k > statement):
            before = tokens[k - 1][0]
            typed = before in ("*", "&", "&&", ">") or (
                (before[0].isalpha() or before[0] == "_") and before not in NOT_A_TYPE)
            if typed and tok not in found:
                close = _match_close(tokens, k + 1)
                end = tokens[close][2] if close >= 0 else len(text)
                found[tok] = " ".join(text[tokens[statement][1]:end].split())
    return found


@dataclass
class PybindBlock:
    start: int      # of PYBIND11_MODULE
    body: int       # of the block's "{"
    end: int        # just after the block's "}"
    variable: str   # the module's parameter name (m)
    extra: bool     # options after the module variable (py::mod_gil_not_used() ...)


def pybind_blocks(text: str) -> list[PybindBlock]:
    """Every PYBIND11_MODULE(NAME, VAR) { ... } of `text` (outside comments and literals)."""
    blanked = blank_cpp(text)
    tokens = cpp_tokens(blanked)
    blocks = []
    for k, (tok, start, _) in enumerate(tokens):
        if tok != "PYBIND11_MODULE":
            continue
        if k + 1 >= len(tokens) or tokens[k + 1][0] != "(":
            raise ValueError("PYBIND11_MODULE without its (name, module) arguments")
        close = _match_close(tokens, k + 1)
        if close < 0 or close + 1 >= len(tokens) or tokens[close + 1][0] != "{":
            raise ValueError("PYBIND11_MODULE(...) is not followed by its { ... } block")
        args = [t for t, _, _ in tokens[k + 2:close]]
        if len(args) < 3 or args[1] != "," or not re.fullmatch(r"[A-Za-z_]\w*", args[2]):
            raise ValueError("PYBIND11_MODULE's arguments are not (name, module_variable)")
        end = _match_close(tokens, close + 1)
        if end < 0:
            raise ValueError("PYBIND11_MODULE's block is not closed")
        blocks.append(PybindBlock(start, tokens[close + 1][1], tokens[end][2], args[2], len(args) > 3))
    return blocks


def registration(text: str, block: PybindBlock, stem: str) -> str:
    """`text` with `block` turned into a registration function plus its REGISTER_BINDING, on the
    block's own lines."""
    function = f"cuda_agent_bind_{stem}"
    head = f"static void {function}(pybind11::module& {block.variable}) "
    tail = f" REGISTER_BINDING({stem}, {function});"
    return text[:block.start] + head + text[block.body:block.end] + tail + text[block.end:]


def cpp_string(value: str) -> str:
    """`value` as a C++ string literal: quotes and backslashes escaped, every byte outside printable
    ASCII as an octal escape (at most three digits, so a following digit is never taken in)."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{byte:03o}" for byte in ch.encode("utf-8"))
    return '"' + "".join(out) + '"'


# --------------------------------------------------------------------------------------------------
# Python: scopes, names assigned once, static strings.


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `scope` (a module or function), not those of the functions, classes, lambdas
    and comprehensions inside it (their names are their own)."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
              ast.SetComp, ast.DictComp, ast.GeneratorExp)
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, nested):
            # Decorators, defaults and a class's bases are evaluated in the enclosing scope; the name
            # of a def or class is bound there (yielded above). Their bodies are not.
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.extend(node.decorator_list)
                todo.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
            elif isinstance(node, ast.ClassDef):
                todo.extend(node.decorator_list + node.bases)
            continue
        todo.extend(ast.iter_child_nodes(node))


@dataclass
class Binding:
    line: int
    value: ast.expr | None  # the expression assigned, when the binding is a plain `name = value`
    how: str                # what binds it, for messages


class Scope:
    """The names one module or function binds, each with every place that binds it."""

    def __init__(self, node: ast.AST, parent: Scope | None):
        self.node = node
        self.parent = parent
        self.names: dict[str, list[Binding]] = {}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None:
                    self.add(arg.arg, Binding(node.lineno, None, f"a parameter of {node.name}()"))
        for sub in scope_nodes(node):
            self.collect(sub)

    def add(self, name: str, binding: Binding) -> None:
        self.names.setdefault(name, []).append(binding)

    def collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.add(target.id, Binding(node.lineno, node.value, "an assignment"))
                else:
                    self.targets(target, node.lineno, "an unpacking assignment")
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is not None:
                self.add(node.target.id, Binding(node.lineno, node.value, "an assignment"))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.add(node.target.id, Binding(node.lineno, None, "an augmented assignment"))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.targets(node.target, node.lineno, "a for loop")
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self.targets(node.optional_vars, node.optional_vars.lineno, "a with statement")
        elif isinstance(node, ast.NamedExpr):
            self.add(node.target.id, Binding(node.lineno, None, "an assignment expression"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                self.add(name, Binding(node.lineno, None, "an import"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.add(node.name, Binding(node.lineno, None, "a def or class statement"))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.add(node.name, Binding(node.lineno, None, "an except clause"))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                self.add(name, Binding(node.lineno, None, "a global or nonlocal statement"))

    def targets(self, target: ast.expr, line: int, how: str) -> None:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):  # not the `self` of self.x = ...
                self.add(sub.id, Binding(line, None, how))

    def lookup(self, name: str) -> tuple[Scope, list[Binding]] | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope, scope.names[name]
            scope = scope.parent
        return None


class Reader:
    """Reads the static value of expressions of one solution file."""

    def __init__(self, tree: ast.Module, text: str, filename: str):
        self.tree = tree
        self.text = text
        self.filename = filename
        self.scopes: dict[int, Scope] = {}
        self.call_line = 0  # the load_inline call being read, named where a refusal is elsewhere
        self.call_path: list[ast.AST] = []  # the nodes from the module down to that call
        self.dedent_names = {"textwrap.dedent"}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "textwrap" and not node.level:
                for alias in node.names:
                    if alias.name == "dedent":
                        self.dedent_names.add(alias.asname or "dedent")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "textwrap" and alias.asname:
                        self.dedent_names.add(f"{alias.asname}.dedent")

    def where(self, node: ast.AST) -> str:
        return f"{self.filename}:{getattr(node, 'lineno', 0)}"

    def refuse(self, node: ast.AST, what: str, why: str) -> Refusal:
        line = getattr(node, "lineno", None)
        if self.call_line and line != self.call_line:
            what += f" (load_inline at line {self.call_line})"
        return Refusal(f"{self.filename}:{line}: {what} {why}", line)

    def scope(self, node: ast.AST, parent: Scope | None) -> Scope:
        if id(node) not in self.scopes:
            self.scopes[id(node)] = Scope(node, parent)
        return self.scopes[id(node)]

    def scope_chain(self, path: list[ast.AST]) -> Scope:
        """The scope of the innermost function on `path` (the nodes from the module down)."""
        scope = self.scope(self.tree, None)
        for node in path:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scope = self.scope(node, scope)
        return scope

    # A value is str, list[str], dict[str, str] or None.
    def value(self, node: ast.expr, scope: Scope, what: str,
              seen: frozenset[tuple[int, str]] = frozenset()) -> Any:
        run_time = "is computed at run time"
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, str):
                return node.value
            raise self.refuse(node, what, f"is a {type(node.value).__name__}, not a string")
        if isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            if len(parts) == len(node.values):
                return "".join(parts)
            raise self.refuse(node, what, f"{run_time} (an f-string with fields); write the source "
                              "as a plain string")
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e, scope, what, seen) for e in node.elts]
            for e, item in zip(node.elts, items, strict=True):
                if not isinstance(item, str):
                    raise self.refuse(e, what, "holds something other than strings")
            return items
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    raise self.refuse(node, what, f"{run_time} (a ** in a dict)")
                key, val = self.value(k, scope, what, seen), self.value(v, scope, what, seen)
                if not isinstance(key, str) or not isinstance(val, str):
                    raise self.refuse(node, what, "is a dict of other than strings")
                out[key] = val
            return out
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                left = self.value(node.left, scope, what, seen)
                right = self.value(node.right, scope, what, seen)
                if type(left) is type(right) and isinstance(left, (str, list)):
                    return left + right
                raise self.refuse(node, what, "adds values of different kinds")
            if isinstance(node.op, ast.Mod):
                raise self.refuse(node, what, f"{run_time} ('%' formatting); write the source as a "
                                  "plain string")
            raise self.refuse(node, what, run_time)
        if isinstance(node, ast.Name):
            return self.name(node, scope, what, seen)
        if isinstance(node, ast.Call):
            return self.call(node, scope, what, seen)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, scope, what, seen)
        raise self.refuse(node, what, f"{run_time} ({type(node).__name__.lower()} expression)")

    def attribute(self, node: ast.Attribute, scope: Scope, what: str, seen: frozenset[tuple[int, str]]) -> Any:
        """`self.X` inside a method of a class, or `C.X` for a class C of the module: the one value the
        file ever gives the attribute X (`self.X = "..."` in a method of that class, or `X = "..."` in
        its body). An attribute assigned anywhere else, more than once, through setattr or __dict__, or
        of any other object is known only at run time."""
        cls = self.attribute_owner(node, scope)
        if cls is None:
            raise self.refuse(node, what, "is computed at run time (an attribute of something other than "
                              "self or a class of this file); write the source as a string assigned to a "
                              "name, or to self.<name> once")
        attr = node.attr
        for other in ast.walk(self.tree):
            if isinstance(other, ast.Name) and other.id in ("setattr", "delattr", "vars") or \
                    isinstance(other, ast.Attribute) and other.attr == "__dict__":
                raise self.refuse(node, what, f"names attribute '{attr}', but the file sets attributes "
                                  f"dynamically ({self.where(other)}): its value is known only at run time")
        bindings: list[tuple[ast.expr | None, ast.AST, int]] = []  # value, its scope's node, line
        for item in cls.body:
            if isinstance(item, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name) and sub.id == attr:
                            plain = isinstance(item, ast.Assign) and target is sub
                            bindings.append((item.value if plain else None, self.tree, item.lineno))
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and item.name == attr:
                bindings.append((None, self.tree, item.lineno))
        methods = {id(m): m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for other in ast.walk(self.tree):
            if isinstance(other, ast.Attribute) and other.attr == attr and \
                    isinstance(other.ctx, (ast.Store, ast.Del)):
                bindings.append((None, self.tree, other.lineno))
        # A plain `self.X = value` in a method of the class replaces its entry above by one with a value.
        for method in methods.values():
            params = method.args.posonlyargs + method.args.args
            if not params:
                continue
            self_name = params[0].arg
            for sub in ast.walk(method):
                if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and \
                        isinstance(sub.targets[0], ast.Attribute) and sub.targets[0].attr == attr and \
                        isinstance(sub.targets[0].value, ast.Name) and sub.targets[0].value.id == self_name:
                    for k, (value, _, line) in enumerate(bindings):
                        if value is None and line == sub.lineno:
                            bindings[k] = (sub.value, method, line)
                            break
        if not bindings:
            raise self.refuse(node, what, f"names attribute '{attr}', which class {cls.name} never assigns")
        if len(bindings) > 1:
            lines = ", ".join(str(line) for _, _, line in sorted(bindings, key=lambda b: b[2]))
            raise self.refuse(node, what, f"names attribute '{attr}', which is assigned more than once "
                              f"(lines {lines}): its value is known only at run time")
        value, home, line = bindings[0]
        if value is None:
            raise self.refuse(node, what, f"names attribute '{attr}', which line {line} binds other than "
                              "by a plain assignment: its value is known only at run time")
        key = (id(cls), "." + attr)
        if key in seen:
            raise self.refuse(node, what, f"names attribute '{attr}', whose value refers to itself")
        if home is self.tree:
            value_scope = self.scope(self.tree, None)
        else:
            value_scope = self.scope(home, self.scope(self.tree, None))
        return self.value(value, value_scope, what, seen | {key})

    def attribute_owner(self, node: ast.Attribute, scope: Scope) -> ast.ClassDef | None:
        """The class whose attribute `node` reads: `self.X` in a method (directly in the class body) of
        the class the load_inline call is in, with `self` its first parameter, never rebound; or `C.X`
        with C a class statement of the module bound once."""
        base = node.value
        if not isinstance(base, ast.Name):
            return None
        path = self.call_path
        for i in range(len(path) - 1, 0, -1):
            method, cls = path[i], path[i - 1]
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(cls, ast.ClassDef):
                params = method.args.posonlyargs + method.args.args
                if params and params[0].arg == base.id:
                    found = scope.lookup(base.id)
                    home = self.scopes.get(id(method))
                    if found is not None and found[0] is home and len(found[1]) == 1:
                        return cls
                break
        found = self.scope(self.tree, None).lookup(base.id)
        if found is not None and found[0].node is self.tree and len(found[1]) == 1 and \
                scope.lookup(base.id) == found:
            for item in self.tree.body:
                if isinstance(item, ast.ClassDef) and item.name == base.id:
                    return item
        return None

    def name(self, node: ast.Name, scope: Scope, what: str, seen: frozenset[tuple[int, str]]) -> Any:
        found = scope.lookup(node.id)
        if found is None:
            raise self.refuse(node, what, f"names '{node.id}', which this file never assigns")
        home, bindings = found
        if len(bindings) > 1:
            lines = ", ".join(str(line) for line in sorted(b.line for b in bindings))
            raise self.refuse(node, what, f"names '{node.id}', which is assigned more than once "
                              f"(lines {lines}): its value is known only at run time")
        binding = bindings[0]
        if binding.value is None:
            raise self.refuse(node, what, f"names '{node.id}', bound by {binding.how} "
                              f"(line {binding.line}): its value is known only at run time")
        if (id(home), node.id) in seen:
            raise self.refuse(node, what, f"names '{node.id}', whose value refers to itself")
        return self.value(binding.value, home, what, seen | {(id(home), node.id)})

    def call(self, node: ast.Call, scope: Scope, what: str, seen: frozenset[tuple[int, str]]) -> Any:
        func = node.func
        name = dotted(func) or ""
        if isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str) and len(node.args) == 1 and not node.keywords:
            items = self.value(node.args[0], scope, what, seen)
            if not isinstance(items, list):
                raise self.refuse(node, what, "joins something other than a list of strings")
            return func.value.value.join(items)
        if name in self.dedent_names and len(node.args) == 1 and not node.keywords:
            inner = self.value(node.args[0], scope, what, seen)
            if not isinstance(inner, str):
                raise self.refuse(node, what, "dedents something other than a string")
            return textwrap.dedent(inner)
        if isinstance(func, ast.Attribute) and func.attr == "format":
            raise self.refuse(node, what, "is computed at run time (.format); write the source as a "
                              "plain string")
        if (name in ("open", "io.open", "Path", "pathlib.Path", "codecs.open")
                or (isinstance(func, ast.Attribute)
                    and func.attr in ("read", "read_text", "readlines", "read_bytes", "readline"))):
            raise self.refuse(node, what, "is read from a file at run time; put the source in the "
                              "solution file as a string")
        shown = name or ast.unparse(func)
        raise self.refuse(node, what, f"is computed at run time (a call to {shown})")


# --------------------------------------------------------------------------------------------------
# The load_inline calls.


@dataclass
class InlineCall:
    node: ast.Call
    path: list[ast.AST]  # the nodes from the module down to the call (for its scope)


class Imports:
    """What names the file uses for torch.utils.cpp_extension and its loaders."""

    def __init__(self, tree: ast.Module):
        self.loaders: set[str] = set()         # names bound to load_inline
        self.file_loaders: set[str] = set()    # names bound to load (sources from files)
        self.modules: set[str] = {CPP_EXTENSION}  # dotted names of the module itself
        self.statements: list[ast.stmt] = []   # the imports that bring any of them in
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == CPP_EXTENSION:
                        self.modules.add(alias.asname or CPP_EXTENSION)
                        self.note(node)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                for alias in node.names:
                    if node.module == CPP_EXTENSION:
                        if alias.name in ("load_inline", "*"):
                            self.loaders.add(alias.asname or "load_inline")
                        if alias.name in ("load", "*"):
                            self.file_loaders.add(alias.asname or "load")
                        if alias.name in ("load_inline", "load", "*"):
                            self.note(node)
                    elif node.module == "torch.utils" and alias.name == "cpp_extension":
                        self.modules.add(alias.asname or "cpp_extension")
                        self.note(node)

    def note(self, node: ast.stmt) -> None:
        if node not in self.statements:
            self.statements.append(node)

    def kind(self, func: ast.expr) -> str | None:
        """"inline" for load_inline, "file" for load, else None."""
        name = dotted(func)
        if name is None:
            return None
        if name in self.loaders:
            return "inline"
        if name in self.file_loaders:
            return "file"
        head, _, last = name.rpartition(".")
        if head in self.modules:
            return {"load_inline": "inline", "load": "file"}.get(last)
        return None


def find_calls(tree: ast.Module, imports: Imports, reader: Reader) -> list[InlineCall]:
    calls: list[InlineCall] = []
    callees: set[int] = set()

    def visit(node: ast.AST, path: list[ast.AST]) -> None:
        if isinstance(node, ast.Call):
            kind = imports.kind(node.func)
            if kind == "file":
                raise reader.refuse(node, "torch.utils.cpp_extension.load()", "reads its sources from "
                                    "files at run time; put them in load_inline(...) as strings")
            if kind == "inline":
                calls.append(InlineCall(node, list(path)))
                callees.add(id(node.func))
        for child in ast.iter_child_nodes(node):
            visit(child, path + [node])

    visit(tree, [])
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in callees \
                and isinstance(getattr(node, "ctx", None), ast.Load) and imports.kind(node) == "inline":
            raise reader.refuse(node, "load_inline", "is used other than called directly; the judge "
                                "reads only direct load_inline(...) calls")
    return calls


@dataclass
class Module:
    """One load_inline call, read."""
    call: InlineCall
    name: str
    stem: str
    cpp: list[str]
    cuda: list[str]
    functions: dict[str, str] | None
    implicit_headers: bool


def read_call(call: InlineCall, reader: Reader, notes: list[str]) -> Module:
    node = call.node
    reader.call_line = node.lineno
    reader.call_path = call.path
    scope = reader.scope_chain(call.path)
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise reader.refuse(node, "load_inline(...)", "takes *args or **kwargs: its arguments are "
                            "known only at run time")
    if len(node.args) > len(POSITIONAL):
        raise reader.refuse(node, "load_inline(...)", f"takes {len(node.args)} positional arguments; "
                            "pass those after functions by keyword")
    args: dict[str, ast.expr] = dict(zip(POSITIONAL, node.args, strict=False))
    for keyword in node.keywords:
        if keyword.arg not in KNOWN:
            raise reader.refuse(keyword.value, "load_inline(...)", f"takes no argument "
                                f"'{keyword.arg}' (load_inline itself would fail)")
        if keyword.arg in args:
            raise reader.refuse(keyword.value, "load_inline(...)", f"gets '{keyword.arg}' twice")
        args[keyword.arg] = keyword.value
    if "cpp_sources" not in args:
        raise reader.refuse(node, "load_inline(...)", "has no cpp_sources (load_inline requires them)")

    def strings(key: str) -> list[str]:
        if key not in args:
            return []
        value = reader.value(args[key], scope, f"the {key} of load_inline")
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return value
        raise reader.refuse(args[key], f"the {key} of load_inline", "is not a string or "
                            "a list of strings")

    cpp, cuda = strings("cpp_sources"), strings("cuda_sources")
    if any(s.strip() for s in strings("sycl_sources")):
        raise reader.refuse(args["sycl_sources"], "load_inline(...)", "has sycl_sources; the judge "
                            "builds C++ and CUDA only")

    name = "inline"
    if "name" in args:
        try:
            value = reader.value(args["name"], scope, "the name of load_inline")
        except Refusal:
            value = None
        if isinstance(value, str) and value:
            name = value
        else:
            notes.append(f"{reader.where(args['name'])}: the name of load_inline is not a plain "
                         "string; its files are named kernels/inline*")
    functions = None
    if "functions" in args:
        value = reader.value(args["functions"], scope, "the functions of load_inline")
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            functions = {f: f for f in value}
        elif isinstance(value, dict):
            functions = value
        elif value is not None:
            raise reader.refuse(args["functions"], "functions=", "is not a list or dict of names")
    for flag in ("is_python_module", "no_implicit_headers"):
        if flag in args and not ((given := args[flag]) and isinstance(given, ast.Constant)
                                 and isinstance(given.value, bool)):
            raise reader.refuse(args[flag], f"{flag}=", "must be True or False written out")
    # Both are ast.Constant here (checked above).
    if "is_python_module" in args and cast(ast.Constant, args["is_python_module"]).value is False:
        raise reader.refuse(args["is_python_module"], "is_python_module=False", "loads the sources "
                            "as a torch operator library, which a candidate cannot be")
    implicit = not ("no_implicit_headers" in args and cast(ast.Constant, args["no_implicit_headers"]).value)
    for flag, why in IGNORED.items():
        if flag in args:
            shown = ast.get_source_segment(reader.text, args[flag]) or "..."
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            notes.append(f"{reader.where(args[flag])}: {flag}={shown} ignored: {why}")
    reader.call_line = 0
    reader.call_path = []
    stem = re.sub(r"\W", "_", name, flags=re.ASCII)[:64] or "inline"
    if stem[0].isdigit():
        stem = "m_" + stem
    return Module(call, name, stem, cpp, cuda, functions, implicit)


def build_files(module: Module, reader: Reader, notes: list[str]) -> dict[str, str]:
    """The kernels/ files of one load_inline call."""
    where = reader.where(module.call.node)
    line = module.call.node.lineno
    origin = (f"// From {os.path.basename(reader.filename)}, load_inline(name={module.name!r}) at "
              f"line {line}")
    cpp = "\n".join(module.cpp)
    cuda = "\n".join(module.cuda)
    try:
        cpp_blocks, cuda_blocks = pybind_blocks(cpp), pybind_blocks(cuda)
    except ValueError as e:
        raise Refusal(f"{where}: load_inline(name={module.name!r}): {e}", line) from None
    blocks = len(cpp_blocks) + len(cuda_blocks)
    if module.functions is not None and blocks:
        raise Refusal(f"{where}: load_inline(name={module.name!r}) has both functions=[...] and a "
                      "PYBIND11_MODULE in its sources: load_inline could never build it (the module "
                      "would be defined twice); keep one of the two", line)
    if blocks > 1:
        raise Refusal(f"{where}: load_inline(name={module.name!r})'s sources define PYBIND11_MODULE "
                      f"{blocks} times: load_inline could never build it (keep one)", line)
    if module.functions is None and not blocks:
        raise Refusal(f"{where}: load_inline(name={module.name!r}) binds nothing: no functions=[...] "
                      "and no PYBIND11_MODULE in its sources, so its module would have no functions",
                      line)
    if module.functions is not None and not module.functions:
        raise Refusal(f"{where}: load_inline(name={module.name!r}) has an empty functions list: its "
                      "module would have no functions", line)
    cpp_block = cpp_blocks[0] if cpp_blocks else None
    cuda_block = cuda_blocks[0] if cuda_blocks else None
    if any(block.extra for block in cpp_blocks + cuda_blocks):
        notes.append(f"{where}: the options of PYBIND11_MODULE after its module variable are "
                     "dropped (the registration function takes the module only)")
    binding_body = cpp
    registration_text = ""
    if cpp_block is not None:
        binding_body = registration(cpp, cpp_block, module.stem)
    elif module.functions is not None:
        declared = declarations(cpp)
        in_cuda = declarations(cuda)
        lines = []
        for function, doc in module.functions.items():
            if not re.fullmatch(r"[A-Za-z_]\w*", function):
                raise Refusal(f"{where}: functions=[...] names {function!r}, which is not a C++ "
                              "function name: load_inline could never build it", line)
            if function not in declared:
                if function in in_cuda:
                    raise Refusal(f"{where}: function '{function}' of functions=[...] is declared only "
                                  "in cuda_sources: load_inline could never build it (it binds from "
                                  "cpp_sources; declare it there)", line)
                raise Refusal(f"{where}: function '{function}' of functions=[...] is declared nowhere "
                              "in the sources: load_inline could never build it", line)
            shown = declared[function]
            comment = f"  // {shown}" if "\\" not in shown else ""  # a trailing \ would join lines
            lines.append(f"  m.def({cpp_string(function)}, &{function}, {cpp_string(doc)});{comment}")
        function_name = f"cuda_agent_bind_{module.stem}"
        registration_text = (
            "\n// The binding load_inline would generate for functions=[...].\n"
            f"static void {function_name}(pybind11::module& m) {{\n" + "\n".join(lines) + "\n}\n"
            f"REGISTER_BINDING({module.stem}, {function_name});\n")
    cpp_head = [origin + ": cpp_sources and the binding"]
    if module.implicit_headers:
        cpp_head.append(CPP_HEADER)
    cpp_head.append(REGISTRY_INCLUDE)
    files = {f"kernels/{module.stem}_binding.cpp":
             "\n".join(cpp_head) + "\n" + binding_body + "\n" + registration_text}
    if cuda.strip():
        cuda_head = [origin + ": cuda_sources"]
        if module.implicit_headers:
            cuda_head.extend(CUDA_HEADERS)
        if cuda_block is not None:
            cuda_head.append(REGISTRY_INCLUDE)
            cuda = registration(cuda, cuda_block, module.stem)
        files[f"kernels/{module.stem}.cu"] = "\n".join(cuda_head) + "\n" + cuda + "\n"
    return files


# --------------------------------------------------------------------------------------------------
# model_new.py: the author's text with the calls and imports replaced in place.


LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their ends, split where Python's tokenizer splits them."""
    return LINE.findall(text)


class Text:
    """Edits of a source text by ast positions (lines from 1, UTF-8 byte columns)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = split_lines(text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.edits: list[tuple[int, int, str]] = []

    def offset(self, line: int, col: int) -> int:
        raw = self.lines[line - 1].encode("utf-8")[:col]
        return self.starts[line - 1] + len(raw.decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        line, col, end_line, end_col = position(node)
        return self.offset(line, col), self.offset(end_line, end_col)

    def replace(self, node: ast.AST, new: str) -> None:
        self.edits.append((*self.span(node), new))

    def alone(self, node: ast.AST) -> bool:
        """Whether `node` is the only thing on its lines (besides a comment)."""
        start, end = self.span(node)
        line, _, end_line, _ = position(node)
        before = self.text[self.starts[line - 1]:start]
        after = self.text[end:self.starts[end_line]]
        return not before.strip() and (not after.strip() or after.strip().startswith("#"))

    def result(self) -> str:
        out = self.text
        for start, end, new in sorted(self.edits, reverse=True):
            out = out[:start] + new + out[end:]
        return out


def position(node: ast.AST) -> tuple[int, int, int, int]:
    """A parsed node's lineno, col_offset, end_lineno and end_col_offset (ast.parse sets all four on the
    statements and expressions this file edits; ast.AST itself declares none)."""
    located = cast(ast.stmt, node)
    return located.lineno, located.col_offset, cast(int, located.end_lineno), cast(int, located.end_col_offset)


def same_lines(node: ast.AST, word: str, how: str) -> str:
    """`word` spanning as many lines as `node` did: "paren" puts the line breaks inside parentheses
    (an expression), "blank" after the word (a statement alone on its lines), "join" as backslash
    continuations (a statement that shares its last line with another)."""
    line, _, end_line, _ = position(node)
    extra = end_line - line
    if not extra:
        return word
    if how == "paren":
        return f"({word}" + "\n" * extra + ")"
    return word + ("\n" if how == "blank" else " \\\n") * extra


def binds_torch(tree: ast.Module, but: ast.stmt) -> bool:
    """Whether a module-level import other than `but` binds the name `torch`."""
    return any(isinstance(node, ast.Import) and node is not but
               and any(a.asname is None and a.name.split(".")[0] == "torch" for a in node.names)
               for node in tree.body)


def rewrite_import(node: ast.stmt, torch_bound: bool) -> str | None:
    """The import statement without what brings in cpp_extension's loaders, or None when nothing of
    it is left. `import torch.utils.cpp_extension` also binds `torch`: it leaves `import torch`
    unless `torch_bound` (another import binds it)."""
    kept = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name != CPP_EXTENSION:
                kept.append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
            elif not alias.asname and not torch_bound and "torch" not in kept:
                kept.append("torch")
        return f"import {', '.join(kept)}" if kept else None
    assert isinstance(node, ast.ImportFrom)  # Imports.statements holds only imports
    for alias in node.names:
        gone = (node.module == CPP_EXTENSION and alias.name in ("load_inline", "load", "*")) or \
               (node.module == "torch.utils" and alias.name == "cpp_extension")
        if not gone:
            kept.append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
    return f"from {node.module} import {', '.join(kept)}" if kept else None


def in_block_alone(tree: ast.Module, node: ast.stmt) -> bool:
    """Whether `node` is the only statement of a block below the module (removing it would leave the
    block empty)."""
    for parent in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and node in block:
                return len(block) == 1 and parent is not tree
    return False


def rewrite_model(tree: ast.Module, text: str, calls: list[InlineCall], imports: Imports,
                  filename: str, notes: list[str]) -> str:
    edits = Text(text)
    for call in calls:
        edits.replace(call.node, same_lines(call.node, EXTENSION_NAME, "paren"))
    placed = False
    for node in imports.statements:
        kept = rewrite_import(node, binds_torch(tree, node))
        alone = edits.alone(node)
        how = "blank" if alone else "join"
        if kept is None and not placed and node in tree.body and alone:
            kept = f"import {EXTENSION_NAME}"
            placed = True
        elif kept is None and (not alone or in_block_alone(tree, node)):
            kept = "pass"
        edits.replace(node, same_lines(node, kept or "", how))
    out = edits.result()
    if not placed:
        line = first_code_line(tree)
        lines = split_lines(out)
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += "\n"
        lines.insert(line - 1, f"import {EXTENSION_NAME}\n")
        out = "".join(lines)
        notes.append(f"{filename}:{line}: model_new.py gets `import {EXTENSION_NAME}` as a new line "
                     f"{line}; the lines after it are one further down than in "
                     f"{os.path.basename(filename)}")
    return out


def first_code_line(tree: ast.Module) -> int:
    """The line before which an import may go: after the docstring and `from __future__` imports."""
    line = 1
    for k, node in enumerate(tree.body):
        docstring = k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            return node.lineno
        line = position(node)[2] + 1
    return line


# --------------------------------------------------------------------------------------------------
# The whole conversion.


def convert(text: str, filename: str) -> Conversion:
    """The candidate files of the solution `text` (named `filename` in messages); Refusal when it
    cannot become one."""
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as e:
        raise Refusal(f"{filename}:{e.lineno}: not valid Python: {e.msg}", e.lineno) from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise Refusal(f"{filename}: cannot be parsed: {e}") from None
    reader = Reader(tree, text, filename)
    imports = Imports(tree)
    calls = find_calls(tree, imports, reader)
    if not calls:
        raise Refusal(f"{filename}: no load_inline call: a KernelBench solution builds its kernels "
                      "with torch.utils.cpp_extension.load_inline(...)")
    notes: list[str] = []
    modules = [read_call(call, reader, notes) for call in calls]
    stems: set[str] = set()
    for module in modules:
        stem, k = module.stem, 2
        while module.stem in stems:
            module.stem = f"{stem}_{k}"
            k += 1
        if module.stem != stem:
            notes.append(f"{reader.where(module.call.node)}: a second load_inline named {module.name!r}; "
                         f"its files are kernels/{module.stem}*")
        stems.add(module.stem)
    bound: dict[str, int] = {}
    for module in modules:
        for function in module.functions or {}:
            if function in bound:
                raise Refusal(f"{reader.where(module.call.node)}: function '{function}' is bound by "
                              f"two load_inline calls (lines {bound[function]} and "
                              f"{module.call.node.lineno}); {EXTENSION_NAME} holds one function of "
                              "each name", module.call.node.lineno)
            bound[function] = module.call.node.lineno
    files: dict[str, str] = {}
    for module in modules:
        files.update(build_files(module, reader, notes))
    if len(modules) > 1:
        notes.append(f"{filename}: {len(modules)} load_inline calls, all bound into the one "
                     f"{EXTENSION_NAME} module")
    files["model_new.py"] = rewrite_model(tree, text, calls, imports, filename, notes)
    return Conversion(files, notes)


def convert_file(path: str, out_dir: str) -> tuple[Conversion, list[str]]:
    """Converts the solution at `path` and writes its files under `out_dir` (made when missing;
    nothing is written when the file is refused). Returns the conversion and the paths written."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise Refusal(f"{path}: cannot be read: {e}") from None
    conversion = convert(text, path)
    written = []
    for rel, content in sorted(conversion.files.items()):
        target = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(content)
        written.append(rel)
    return conversion, written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m cuda_agent_harness.single_file",
        description="Turn a KernelBench single-file solution (load_inline) into a candidate folder.")
    parser.add_argument("file", help="the solution .py file (read, never run)")
    parser.add_argument("out_dir", help="where to write kernels/ and model_new.py")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    args = parser.parse_args(argv)
    report = {"ok": False, "error": None, "line": None, "notes": [], "files": [], "source": args.file}
    try:
        conversion, written = convert_file(args.file, args.out_dir)
        report.update(ok=True, notes=conversion.notes, files=written)
    except Refusal as e:
        report.update(error=e.message, line=e.line)
    if args.json:
        print(json.dumps(report, indent=1))
    elif report["ok"]:
        for rel in report["files"]:
            print(os.path.join(args.out_dir, rel))
        for note in report["notes"]:
            print(f"note: {note}", file=sys.stderr)
    if not report["ok"]:
        if not args.json:
            print(f"refused: {report['error']}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
