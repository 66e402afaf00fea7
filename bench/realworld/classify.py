#!/usr/bin/env python3
"""Pre-classify a KernelBench single-file solution: honest, hybrid or broken (issue 46).

A heuristic reading of the code, independent of the judge's own AST rules, used to draft the
manifest's classes before a person reviews them (review.json holds the reviewed ones):

- broken: would not build or run even under KernelBench's own load_inline: a syntax error, no
  ModelNew or no forward, an exported function that the C++ source never declares or defines, a
  forward calling an extension function that is not exported, a name that is defined nowhere.
- hybrid: torch does part of ModelNew.forward's tensor work: an nn layer called (`self.conv(x)`),
  `F.*`, a torch compute function, tensor arithmetic or in-place writes, or no extension call at all.
- honest: every tensor operation of the forward is an extension call, an allocation, a view or a
  shape/metadata read (`.contiguous()`, `.cuda()`, reading `self.conv.weight` to pass it in are fine);
  torch work only in a branch the task's inputs never take (`if not x.is_cuda: return torch...`) is
  reported in `why` and still counts as honest.

    python3 bench/realworld/classify.py FILE.py...     # prints class and why per file
"""
from __future__ import annotations

import ast
import builtins
import re
import sys
from dataclasses import dataclass, field

ALLOC = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
         "empty_strided", "tensor", "as_tensor", "arange", "Size", "device", "dtype", "finfo", "iinfo",
         "is_tensor", "no_grad", "inference_mode", "is_grad_enabled", "get_default_dtype", "is_floating_point"}
TORCH_VIEWS = {"reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t", "narrow", "select",
               "chunk", "split", "unbind", "view_as_real", "view_as_complex", "movedim", "broadcast_to"}
META_METHODS = {"size", "dim", "numel", "stride", "data_ptr", "is_contiguous", "element_size", "get_device",
                "nelement", "ndimension", "storage_offset", "is_floating_point", "is_complex", "type",
                "__len__", "item", "tolist", "cuda_stream", "options"}
VIEW_METHODS = {"view", "view_as", "reshape", "reshape_as", "contiguous", "cuda", "flatten", "unsqueeze",
                "squeeze", "permute", "transpose", "t", "expand", "expand_as", "narrow", "select", "chunk",
                "split", "unbind", "detach", "new_empty", "new_zeros", "new_ones", "new_full", "unflatten",
                "movedim", "as_strided", "requires_grad_", "cpu"}
CAST_METHODS = {"float", "half", "double", "bfloat16", "int", "long", "bool", "to", "type_as"}
SAFE_TORCH_CUDA = {"synchronize", "current_stream", "is_available", "current_device", "device_count",
                   "get_device_properties", "get_device_capability", "default_stream", "device",
                   "get_device_name", "empty_cache", "nvtx"}
CUDA_GRAPH = {"CUDAGraph", "graph", "make_graphed_callables", "graphs"}
STREAM = {"Stream", "stream", "set_stream", "ExternalStream", "Event"}
BUILTINS = set(dir(builtins))
SCALAR_ANN = {"int", "float", "bool", "str"}


@dataclass
class Result:
    cls: str
    why: str
    features: list = field(default_factory=list)


def dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        inner = dotted(node.func)
        if inner:
            parts.append(inner + "()")
            return ".".join(reversed(parts))
    return None


class Module:
    def __init__(self, tree: ast.Module, src: str):
        self.tree, self.src = tree, src
        self.strings: dict[str, str] = {}     # module-level name -> string value (resolvable sources)
        self.defs: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.names: set[str] = set()
        self.ext_names: set[str] = set()      # names bound to load_inline modules
        self.exports: set[str] = set()        # functions= of every load_inline
        self.exports_known = True
        self.problems: list[str] = []
        self.imports_torch_alias = {"torch"}
        self.f_alias: set[str] = set()
        self.nn_alias = {"nn"}
        self._scan()

    def _str(self, node) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.strings.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self._str(node.left), self._str(node.right)
            return a + b if a is not None and b is not None else None
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                else:
                    out.append("0")
            return "".join(out)
        if isinstance(node, (ast.List, ast.Tuple)):
            parts = [self._str(e) for e in node.elts]
            return "\n".join(parts) if all(p is not None for p in parts) else None
        return None

    def _scan(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.names.add((a.asname or a.name).split(".")[0])
                    if a.name == "torch.nn.functional":
                        self.f_alias.add(a.asname or "torch.nn.functional")
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    self.names.add(a.asname or a.name)
                    if node.module == "torch.nn" and a.name == "functional":
                        self.f_alias.add(a.asname or "functional")
                    if node.module == "torch" and a.name == "nn":
                        self.nn_alias.add(a.asname or "nn")
        for node in self.tree.body:
            self._top(node)
        # load_inline calls anywhere; those inside a try body are guarded (a failure falls back)
        guarded = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Try):
                for b in node.body:
                    for n in ast.walk(b):
                        guarded.add(id(n))
        self.guarded_problems = 0
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and (dotted(node.func) or "").split(".")[-1] in ("load_inline", "load"):
                before = len(self.problems)
                self._load_inline(node)
                if id(node) in guarded:
                    self.guarded_problems += len(self.problems) - before
        self.ext_attrs: set[str] = set()
        loaders = self._loader_functions()
        self.class_alias: dict[str, str] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
                d = dotted(node.value) or ""
                for t in node.targets:
                    if isinstance(t, ast.Name) and d.split(".")[0] in self.classes and d.endswith(".apply"):
                        self.class_alias[t.id] = d.split(".")[0]
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Call):
                value = value.value  # load_inline(...).fn
            if isinstance(value, ast.Call):
                fn = (dotted(value.func) or "").split(".")[-1]
                if fn in ("load_inline", "load") or fn in loaders:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            self.ext_names.add(t.id)
                        elif isinstance(t, ast.Attribute):
                            self.ext_attrs.add(t.attr)

    def _loader_functions(self) -> set[str]:
        out = set()
        for fn in ast.walk(self.tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    if isinstance(n, ast.Call) and (dotted(n.func) or "").split(".")[-1] in ("load_inline", "load"):
                        out.add(fn.name)
        return out

    def _top(self, node):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.names.add(n.id)
                if isinstance(t, ast.Name):
                    s = self._str(node.value)
                    if s is not None:
                        self.strings[t.id] = s
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            self.names.add(node.target.id)
            if isinstance(node, ast.AugAssign) and node.target.id in self.strings:
                s = self._str(node.value)
                self.strings[node.target.id] = self.strings[node.target.id] + s if s is not None else None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.defs[node.name] = node
            self.names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            self.classes[node.name] = node
            self.names.add(node.name)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
            for b in ast.iter_child_nodes(node):
                if isinstance(b, ast.stmt):
                    self._top(b)
            for h in getattr(node, "handlers", []):
                for b in h.body:
                    self._top(b)
            for b in getattr(node, "orelse", []) + getattr(node, "finalbody", []):
                self._top(b)
            if isinstance(node, ast.With):
                for it in node.items:
                    if isinstance(it.optional_vars, ast.Name):
                        self.names.add(it.optional_vars.id)

    def _load_inline(self, call: ast.Call):
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        funcs = kw.get("functions")
        names = None
        if funcs is not None:
            if isinstance(funcs, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in funcs.elts):
                names = [e.value for e in funcs.elts]
            elif isinstance(funcs, ast.Constant) and isinstance(funcs.value, str):
                names = [funcs.value]
            elif isinstance(funcs, ast.Name) and funcs.id in self.strings:
                names = [self.strings[funcs.id]]
        cpp = self._str(kw["cpp_sources"]) if "cpp_sources" in kw else (
            self._str(call.args[1]) if len(call.args) > 1 else None)
        cuda = self._str(kw["cuda_sources"]) if "cuda_sources" in kw else (
            self._str(call.args[2]) if len(call.args) > 2 else "")
        if (dotted(call.func) or "").split(".")[-1] == "load":
            self.exports_known = False
            return
        if names is None:
            if funcs is None:
                if cpp is not None and "PYBIND11_MODULE" not in (cpp or "") + (cuda or ""):
                    self.problems.append("load_inline without functions= and without a PYBIND11_MODULE: "
                                         "the module exports nothing")
                self.exports_known = False
            else:
                self.exports_known = False
            return
        self.exports.update(names)
        if cpp is None:
            return
        allsrc = strip_comments(cpp + "\n" + (cuda or ""))
        cpp_nc = strip_comments(cpp)
        for f in names:
            if not re.search(r"\b%s\s*\(" % re.escape(f), cpp_nc):
                self.problems.append(f"exported function {f} is not declared in cpp_sources (the generated "
                                     f"binding would not compile)")
            elif not re.search(r"\b%s\s*\([^;{}]*\)\s*(->[^{;]*)?(const\s*)?\{" % re.escape(f), allsrc):
                self.problems.append(f"exported function {f} is declared but never defined (undefined "
                                     f"symbol when the module loads)")


def strip_comments(s: str) -> str:
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    return re.sub(r"//[^\n]*", " ", s)


class ForwardWalker:
    """Walks ModelNew.forward (and the methods/functions it calls) for torch work and extension calls."""

    def __init__(self, mod: Module, cls: ast.ClassDef):
        self.mod, self.cls = mod, cls
        self.methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.self_kind: dict[str, str] = {}   # attr -> layer|tensor|scalar|ext|other
        self.torch_work: list[tuple[str, bool]] = []   # (what, in_fallback_branch)
        self.ext_calls: list[str] = []
        self.features: set[str] = set()
        self.undefined: set[str] = set()
        self.unexported: set[str] = set()
        self.visited: set[str] = set()
        self._init_attrs()

    def _init_attrs(self):
        init = self.methods.get("__init__")
        params = set()
        if init:
            params = {a.arg for a in init.args.args + init.args.kwonlyargs}
        for node in ast.walk(self.cls):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        self._set_kind(t.attr, self._kind(node.value, params))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                t = node.target
                if isinstance(t.value, ast.Name) and t.value.id == "self" and node.value is not None:
                    self._set_kind(t.attr, self._kind(node.value, params))
            elif isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("register_buffer"):
                if node.args and isinstance(node.args[0], ast.Constant):
                    self.self_kind[str(node.args[0].value)] = "tensor"
            elif isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("register_parameter"):
                if node.args and isinstance(node.args[0], ast.Constant):
                    self.self_kind[str(node.args[0].value)] = "tensor"
        for a in self.mod.ext_attrs:
            self.self_kind[a] = "ext"

    RANK = {"ext": 6, "layer": 5, "tensor": 3, "scalar": 2, "other": 1}

    def _set_kind(self, attr, kind):
        old = self.self_kind.get(attr)
        if old is None or self.RANK.get(kind.split(":")[0] if not kind.startswith("class:") else "layer", 0) > \
                self.RANK.get(old.split(":")[0] if not old.startswith("class:") else "layer", 0):
            self.self_kind[attr] = kind

    def _kind(self, v, params) -> str:
        if isinstance(v, ast.Constant):
            return "scalar" if not isinstance(v.value, str) else "other"
        if isinstance(v, ast.Name):
            if v.id in self.mod.ext_names:
                return "ext"
            if v.id in params:
                return "scalar"
            return "other"
        if isinstance(v, ast.Attribute):
            d = dotted(v) or ""
            if d.split(".")[0] in self.mod.ext_names:
                return "ext"
            if isinstance(v.value, ast.Call) and (dotted(v.value.func) or "").split(".")[-1] in ("load_inline", "load"):
                return "ext"
            return "other"
        if isinstance(v, ast.Call):
            d = dotted(v.func) or ""
            root, last = d.split(".")[0], d.split(".")[-1]
            if last in ("load_inline", "load") or last in self.mod._loader_functions():
                return "ext"
            if d in self.mod.classes:
                return "class:" + d
            if last in ("Parameter", "Buffer"):
                return "tensor"
            if root in self.mod.nn_alias or d.startswith("torch.nn."):
                return "layer"
            if root == "torch":
                return "tensor"
            if root in ("int", "float", "bool", "tuple", "max", "min", "len", "round", "abs", "math"):
                return "scalar"
            return "other"
        if isinstance(v, (ast.BinOp, ast.UnaryOp)):
            return "scalar"
        if isinstance(v, (ast.Tuple, ast.List)):
            return "scalar"
        return "other"

    # -- taint -------------------------------------------------------------------
    def run(self):
        fwd = self.methods.get("forward")
        if fwd is None:
            return
        tensors = set()
        for a in fwd.args.args[1:] + fwd.args.kwonlyargs:
            ann = a.annotation.id if isinstance(a.annotation, ast.Name) else None
            if ann not in SCALAR_ANN:
                tensors.add(a.arg)
        if fwd.args.vararg:
            tensors.add(fwd.args.vararg.arg)
        self._func(fwd, tensors, "ModelNew.forward")

    def _locals(self, fn) -> set[str]:
        out = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        if fn.args.vararg:
            out.add(fn.args.vararg.arg)
        if fn.args.kwarg:
            out.add(fn.args.kwarg.arg)
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not fn:
                if isinstance(n, ast.FunctionDef):
                    out.add(n.name)
                out.update(a.arg for a in n.args.args)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
            elif isinstance(n, ast.comprehension):
                for m in ast.walk(n.target):
                    if isinstance(m, ast.Name):
                        out.add(m.id)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                out.update(n.names)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
        return out

    def _func(self, fn, tensors: set, label: str):
        if label in self.visited:
            return
        self.visited.add(label)
        local = self._locals(fn)
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id not in local and n.id not in self.mod.names and n.id not in BUILTINS and n.id != "self":
                    self.undefined.add(n.id)
        # fixed point over assignments: anything computed from a tensor is a tensor
        for _ in range(4):
            before = len(tensors)
            for n in ast.walk(fn):
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                    if self._is_tensor(n.value, tensors):
                        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                        for t in targets:
                            for m in ast.walk(t):
                                if isinstance(m, ast.Name):
                                    tensors.add(m.id)
                elif isinstance(n, ast.For) and self._is_tensor(n.iter, tensors):
                    for m in ast.walk(n.target):
                        if isinstance(m, ast.Name):
                            tensors.add(m.id)
            if len(tensors) == before:
                break
        self._stmts(fn.body, tensors, False, label)

    def _fallback_test(self, test):
        """'ext' for a test on the extension's availability, 'input' for one on the inputs' properties."""
        text = ast.unparse(test)
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        attrs = {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}
        if re.search(r"\btraining\b", text):
            return False  # nn.Module starts in training mode: a branch on it is taken
        if names & self.mod.ext_names or attrs & self.mod.ext_attrs or re.search(
                r"is None|is not None|hasattr|_loaded|_available|use_cuda|use_custom|cuda_ok|kernel_ok|"
                r"_compiled|is_available|_ext\b|_module\b|_kernel\b", text, re.I):
            return "ext"
        if re.search(r"is_cuda|\.device|device\.type|is_contiguous|dtype|requires_grad|\.dim\(|"
                     r"\.ndim|numel\(|\.shape|\.size\(", text):
            return "input"
        return False

    def _stmts(self, body, tensors, fallback, label):
        for s in body:
            if isinstance(s, ast.If):
                fb = self._fallback_test(s.test)
                self._expr(s.test, tensors, fallback, label)
                self._stmts(s.body, tensors, fallback or fb, label)
                self._stmts(s.orelse, tensors, fallback or fb, label)
            elif isinstance(s, ast.Return) and s.value is not None and isinstance(s.value, ast.IfExp):
                fb = self._fallback_test(s.value.test)
                self._expr(s.value.body, tensors, fallback or fb, label)
                self._expr(s.value.orelse, tensors, fallback or fb, label)
            elif isinstance(s, ast.Try):
                self.features.add("try/except")
                self._stmts(s.body, tensors, fallback, label)
                for h in s.handlers:
                    self._stmts(h.body, tensors, "except", label)
                self._stmts(s.orelse + s.finalbody, tensors, fallback, label)
            elif isinstance(s, (ast.For, ast.While)):
                if isinstance(s, ast.For):
                    self._expr(s.iter, tensors, fallback, label)
                else:
                    self._expr(s.test, tensors, fallback, label)
                self._stmts(s.body + s.orelse, tensors, fallback, label)
            elif isinstance(s, ast.With):
                for it in s.items:
                    d = dotted(it.context_expr.func if isinstance(it.context_expr, ast.Call) else it.context_expr) or ""
                    if d.split(".")[-1] in CUDA_GRAPH:
                        self.features.add("cuda graph")
                    if d.split(".")[-1] in STREAM:
                        self.features.add("side stream")
                    self._expr(it.context_expr, tensors, fallback, label)
                self._stmts(s.body, tensors, fallback, label)
            elif isinstance(s, ast.AugAssign):
                if self._is_tensor(s.target, tensors) or self._is_tensor(s.value, tensors):
                    self._work(f"in-place tensor arithmetic `{ast.unparse(s)[:60]}`", fallback)
                self._expr(s.value, tensors, fallback, label)
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    if isinstance(t, ast.Subscript) and self._is_tensor(t.value, tensors):
                        self._work(f"indexed tensor write `{ast.unparse(t)[:50]} = ...`", fallback)
                    elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        self.features.add("assigns self.* in forward")
                        if t.attr in ("forward", "__call__", "__class__"):
                            self._work(f"replaces its own `self.{t.attr}` (a cached result returned later)", False)
                    elif isinstance(t, ast.Attribute) and t.attr in ("__call__", "forward") and \
                            "__class__" in ast.unparse(t):
                        self._work(f"replaces `{ast.unparse(t)}` (a cached result returned later)", False)
                self._expr(s.value, tensors, fallback, label)
            elif isinstance(s, (ast.FunctionDef, ast.ClassDef)):
                continue
            else:
                for child in ast.iter_child_nodes(s):
                    if isinstance(child, ast.expr):
                        self._expr(child, tensors, fallback, label)
                    elif isinstance(child, ast.stmt):
                        self._stmts([child], tensors, fallback, label)

    def _walk_class(self, name, c, tensors, method, skip):
        key = f"class {name}.{method}"
        if key in self.visited:
            return
        self.visited.add(key)
        cls = self.mod.classes[name]
        sub = ForwardWalker(self.mod, cls)
        sub.visited = self.visited
        fn = sub.methods.get(method)
        if fn is None:
            return
        params = fn.args.args[skip:]
        targs = {p.arg for a, p in zip(c.args, params) if self._is_tensor(a, tensors)}
        if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
            params = fn.args.args[1:]  # ctx
            targs = {p.arg for a, p in zip(c.args, params) if self._is_tensor(a, tensors)}
        sub._func(fn, targs, key + ":body")
        self.torch_work += sub.torch_work
        self.ext_calls += sub.ext_calls
        self.features |= sub.features
        self.undefined |= sub.undefined
        self.unexported |= sub.unexported

    def _work(self, what, fallback):
        self.torch_work.append((what, fallback))

    def _is_tensor(self, e, tensors) -> bool:
        if isinstance(e, ast.Name):
            return e.id in tensors
        if isinstance(e, ast.Attribute):
            if e.attr in ("shape", "dtype", "device", "is_cuda", "ndim", "in_features", "out_features",
                          "kernel_size", "stride", "padding", "dilation", "groups", "eps", "momentum",
                          "training", "num_features", "normalized_shape", "in_channels", "out_channels",
                          "output_padding", "negative_slope", "p", "num_groups", "layout", "T_is_meta"):
                return False
            if isinstance(e.value, ast.Name) and e.value.id == "self":
                k = self.self_kind.get(e.attr, "other")
                return k in ("tensor", "layer")
            if e.attr in ("weight", "bias", "running_mean", "running_var", "data", "T", "mT", "real", "imag"):
                return self._is_tensor(e.value, tensors) or self._root_is_self_layer(e.value)
            return False
        if isinstance(e, ast.Subscript):
            return self._is_tensor(e.value, tensors)
        if isinstance(e, ast.Call):
            d = dotted(e.func) or ""
            root = d.split(".")[0]
            last = d.split(".")[-1]
            if root in self.mod.ext_names or self._self_ext(e.func):
                return True
            if root == "torch" and last not in ("Size", "device", "dtype", "finfo", "iinfo", "is_tensor",
                                                "is_available", "current_device", "device_count"):
                return True
            if isinstance(e.func, ast.Attribute):
                if last in META_METHODS:
                    return False
                return self._is_tensor(e.func.value, tensors)
            if isinstance(e.func, ast.Attribute) is False and isinstance(e.func, ast.Name):
                if e.func.id in self.mod.defs or e.func.id in self.mod.ext_names:
                    return True
            return False
        if isinstance(e, ast.BinOp):
            return self._is_tensor(e.left, tensors) or self._is_tensor(e.right, tensors)
        if isinstance(e, ast.UnaryOp):
            return self._is_tensor(e.operand, tensors)
        if isinstance(e, (ast.Tuple, ast.List)):
            return any(self._is_tensor(x, tensors) for x in e.elts)
        if isinstance(e, ast.IfExp):
            return self._is_tensor(e.body, tensors) or self._is_tensor(e.orelse, tensors)
        return False

    def _root_is_self_layer(self, e) -> bool:
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
            return self.self_kind.get(e.attr) == "layer"
        if isinstance(e, ast.Subscript):
            return self._root_is_self_layer(e.value)
        if isinstance(e, ast.Attribute):
            return self._root_is_self_layer(e.value)
        return False

    def _self_ext(self, func) -> bool:
        """self.<ext>.fn(...), self.<fn-from-ext>(...), Cls._ext.fn(...)"""
        d = dotted(func) or ""
        if "()" not in d and any(p in self.mod.ext_attrs for p in d.split(".")[:-1]):
            return True
        node = func
        while isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.self_kind.get(node.attr) == "ext"
            node = node.value
        return False

    def _expr(self, e, tensors, fallback, label):
        for n in ast.walk(e):
            if isinstance(n, ast.Call):
                self._call(n, tensors, fallback, label)
            elif isinstance(n, ast.BinOp):
                if self._is_tensor(n.left, tensors) or self._is_tensor(n.right, tensors):
                    self._work(f"tensor arithmetic `{ast.unparse(n)[:60]}`", fallback)
            elif isinstance(n, ast.Compare):
                if any(self._is_tensor(x, tensors) for x in [n.left] + n.comparators) and not any(
                        isinstance(o, (ast.Is, ast.IsNot)) for o in n.ops):
                    self._work(f"tensor comparison `{ast.unparse(n)[:60]}`", fallback)
            elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
                if self._is_tensor(n.operand, tensors):
                    self._work(f"tensor negation `{ast.unparse(n)[:40]}`", fallback)

    def _call(self, c: ast.Call, tensors, fallback, label):
        d = dotted(c.func) or ""
        if "()" in d:  # a method of a call's result: `ext.f(x).squeeze(1)`, `torch.empty(...).fill_(0)`
            last = d.split(".")[-1]
            if last in META_METHODS or last in VIEW_METHODS:
                return
            if last in CAST_METHODS:
                self.features.add(f"cast .{last}()")
                return
            if self._is_tensor(c.func.value, tensors):
                self._work(f"tensor method `.{last}()`", fallback)
            return
        parts = d.split(".")
        root, last = parts[0], parts[-1]
        if root in self.mod.ext_names or self._self_ext(c.func):
            self.ext_calls.append(d)
            if self.mod.exports_known and last not in self.mod.exports and len(parts) >= 2 and \
                    not self._self_ext(c.func) and last not in ("__call__",):
                self.unexported.add(d)
            return
        if isinstance(c.func, ast.Name):
            name = c.func.id
            if name in self.mod.defs:
                fn = self.mod.defs[name]
                if any(isinstance(n, ast.Call) and ((dotted(n.func) or "").split(".")[0] in self.mod.ext_names)
                       for n in ast.walk(fn)):
                    self.ext_calls.append(name + "->ext")
                targs = set()
                for a, p in zip(c.args, fn.args.args):
                    if self._is_tensor(a, tensors):
                        targs.add(p.arg)
                self._func(fn, targs, name)
                return
            if name in self.mod.class_alias:
                self._walk_class(self.mod.class_alias[name], c, tensors, "forward", skip=1)
                return
            if name in self.mod.classes:
                return
            return  # builtins, locals
        if len(parts) == 2 and root in self.mod.classes and last in ("apply", "forward"):
            self._walk_class(root, c, tensors, "forward", skip=1 if last == "apply" else 0)
            return
        if root == "self" and len(parts) == 2:
            attr = parts[1]
            if attr in self.methods:
                fn = self.methods[attr]
                targs = set()
                for a, p in zip(c.args, fn.args.args[1:]):
                    if self._is_tensor(a, tensors):
                        targs.add(p.arg)
                self._func(fn, targs, "self." + attr)
                return
            kind = self.self_kind.get(attr) or ""
            if kind.startswith("class:"):
                self._walk_class(kind[6:], c, tensors, "forward", skip=1)
                return
            if kind == "layer":
                self._work(f"nn layer call `{ast.unparse(c)[:60]}`", fallback)
            elif kind == "ext":
                self.ext_calls.append(d)
            return
        if root in self.mod.f_alias or d.startswith("torch.nn.functional") or (root == "F"):
            self._work(f"torch.nn.functional `{d}`", fallback)
            return
        if root == "torch" or root in self.mod.imports_torch_alias:
            if len(parts) >= 2 and parts[1] == "cuda":
                if last in CUDA_GRAPH or "graph" in d.lower():
                    self.features.add("cuda graph")
                elif last in STREAM:
                    self.features.add("side stream")
                elif last not in SAFE_TORCH_CUDA and parts[-1] not in ("cuda_stream",):
                    self.features.add(f"torch.cuda call {d}")
                return
            if len(parts) >= 2 and parts[1] in ("backends", "utils", "jit", "compile", "_C", "ops"):
                self.features.add(f"{'.'.join(parts[:2])} in forward")
                if parts[1] in ("ops", "_C", "jit", "compile"):
                    self._work(f"`{d}`", fallback)
                return
            if last in ALLOC:
                return
            if last in TORCH_VIEWS:
                return
            self._work(f"torch compute `{d}`", fallback)
            return
        if isinstance(c.func, ast.Attribute):
            recv = c.func.value
            if last in META_METHODS or last in ("cuda_stream",):
                return
            if last in VIEW_METHODS:
                if last == "contiguous":
                    self.features.add(".contiguous()")
                if last == "reshape":
                    self.features.add(".reshape()")
                return
            if last in CAST_METHODS:
                if self._is_tensor(recv, tensors):
                    if last == "to" and c.args and all(
                            re.search(r"device|cuda|\.device$", ast.unparse(a)) for a in c.args):
                        return
                    self.features.add(f"cast .{last}()")
                return
            if self._is_tensor(recv, tensors) or self._root_is_self_layer(recv):
                if isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and \
                        recv.value.id == "self" and self.self_kind.get(recv.attr) == "layer":
                    self._work(f"nn layer method `{d}`", fallback)
                else:
                    self._work(f"tensor method `.{last}()`", fallback)
            return


def classify(src: str) -> Result:
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        return Result("broken", f"syntax error at line {e.lineno}: {e.msg}")
    mod = Module(tree, src)
    cls = mod.classes.get("ModelNew")
    if cls is None:
        return Result("broken", "no class ModelNew")
    if not mod.ext_names and "load_inline" in src:
        pass
    w = ForwardWalker(mod, cls)
    fwd = w.methods.get("forward")
    if fwd is None:
        # a base class of the file may define forward
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in mod.classes:
                w2 = ForwardWalker(mod, mod.classes[b.id])
                if "forward" in w2.methods:
                    w = ForwardWalker(mod, cls)
                    w.methods.setdefault("forward", w2.methods["forward"])
                    fwd = w.methods["forward"]
        if fwd is None:
            return Result("broken", "ModelNew has no forward")
    body = [s for s in fwd.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or all(isinstance(s, ast.Pass) for s in body):
        return Result("broken", "ModelNew.forward is empty (pass)")
    w.run()
    feats = sorted(w.features)
    if mod.problems:
        has_try = any(isinstance(n, ast.Try) for n in ast.walk(tree))
        if mod.guarded_problems == len(mod.problems) or has_try:
            return Result("hybrid", f"the extension would not build ({mod.problems[0]}); a try/except catches "
                          f"it and another path (torch) does the work", feats + ["guarded load_inline fails"])
        return Result("broken", mod.problems[0], feats)
    if w.unexported:
        return Result("broken", f"forward calls {sorted(w.unexported)[0]}, which load_inline does not export",
                      feats)
    undefined = sorted(u for u in w.undefined if u not in ("cuda_extension",))
    if undefined:
        return Result("broken", f"forward uses undefined name {undefined[0]}", feats)
    main = [w for w, fb in w.torch_work if not fb]
    fallback = [w for w, fb in w.torch_work if fb == "except"]
    extfb = [w for w, fb in w.torch_work if fb == "ext"]
    dead = [w for w, fb in w.torch_work if fb == "input"]
    if not w.ext_calls:
        what = main[0] if main else "no extension call"
        return Result("hybrid", f"forward never calls the extension; torch does the work ({what})", feats)
    if main:
        return Result("hybrid", f"torch in forward: {main[0]}" + (f" (+{len(main) - 1} more)" if len(main) > 1
                                                                  else ""), feats)
    if fallback:
        return Result("hybrid", f"try/except falls back to torch: {fallback[0]}", feats)
    if extfb:
        return Result("hybrid", f"falls back to torch when the extension is unavailable: {extfb[0]}", feats)
    extra = []
    if dead:
        extra.append(f"torch only in a branch on the inputs' properties the task never takes ({dead[0]})")
    for f in feats:
        if f.startswith("cast") or f in (".contiguous()", ".reshape()", "cuda graph", "side stream"):
            extra.append(f)
    why = "all tensor work in the extension" + ("; " + "; ".join(extra) if extra else "")
    return Result("honest", why, feats)


def main(argv):
    for p in argv:
        r = classify(open(p, encoding="utf-8", errors="replace").read())
        print(f"{r.cls:7s} {p}: {r.why}  {r.features}")


if __name__ == "__main__":
    main(sys.argv[1:])
