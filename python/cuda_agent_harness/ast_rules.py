"""Static rules for model_new.py: an allowlist of what the candidate's Python may do (HACKS.md A2, A3, A4,
B2, B4, C1, C2).

The published rule is "no torch operations in model_new.py beyond tensor creation, tensor properties and
the custom ops". Read as an allowlist, per part of the file:

- everywhere: imports only of torch, torch.nn, cuda_extension, math, typing, numbers and __future__; no
  dynamic code (exec, eval, getattr, dunder attributes), no try/except, no patching of torch or any
  imported module, no torch.nn.functional, torch.compile/jit, torch.ops/_C/library, side streams,
  threads, profiler or global-flag calls; classes derive only from nn.Module or classes of this file;
- `__init__` may build anything from torch: parameters and buffers (nn.Linear declared so the
  state_dict matches is fine), since the reference state_dict is loaded over them;
- everything else (forward, helpers it calls, module-level code) may call only cuda_extension, tensor
  creation (torch.empty*/zeros*/ones*/full*), metadata (shape, size(), dim(), dtype, ...) and pure views
  (view, unsqueeze, squeeze, transpose, permute, narrow, select, ...), and functions of this file.

Which values are tensors is decided by a small taint analysis: forward's parameters (except those
annotated int/float/bool/str), tensor attributes of self (parameters, buffers, submodules and anything
`__init__` did not plainly assign a number to), results of cuda_extension calls and tensor creation, and
everything computed from those. Arithmetic, comparisons, truth tests, indexing with tensors and methods
other than metadata/views on a tainted value are torch computation. Metadata (x.shape, x.size(0)) is not
tainted, so shape arithmetic is fine. docs/static-rules.md lists every rule.

    violations = check_source(source)
    if violations: print(violations[0].reason())
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Iterable

FILE_NAME = "model_new.py"


@dataclass(frozen=True)
class Rule:
    name: str
    rationale: str
    matches: str


RULES: tuple[Rule, ...] = (
    Rule("forbidden_import",
         "Only torch, torch.nn, cuda_extension, math, typing, numbers and __future__ are needed; every other "
         "module is a way around the rules.",
         "import/from-import of any other module, relative imports, from torch import *"),
    Rule("host_thread",
         "Threads and processes can do (or finish) the work after the timed call returned (A2).",
         "threading, _thread, multiprocessing, concurrent, asyncio, torch.multiprocessing, torch.futures, "
         "torch.distributed, async def, await"),
    Rule("native_access",
         "ctypes and friends reach native memory: patch timers, GOT entries, the harness (A4).",
         "ctypes, _ctypes, cffi, mmap"),
    Rule("introspection",
         "gc, inspect, sys and frame access find the harness's objects and the expected outputs (B2).",
         "gc, inspect, sys, traceback, types, weakref, builtins, importlib, pickle, marshal, dis, runpy, "
         "code"),
    Rule("reference_access",
         "The reference model and the harness must never be imported by the candidate (B2).",
         "model, reference, cuda_agent_harness, utils, verification, profiling"),
    Rule("process_escape",
         "Processes, signals and the environment reach outside the judged call (D).",
         "os, subprocess, signal, socket, pty, resource, shlex"),
    Rule("file_io",
         "Files are where the harness keeps inputs and expected outputs (B2, D).",
         "open(), io, pathlib, shutil, tempfile, glob, fcntl"),
    Rule("clock_read",
         "A model needs no clock; clocks let code tell warm-up, checking and timing apart (A5).",
         "time, timeit, datetime"),
    Rule("library_compute",
         "The work must be done by the candidate's CUDA kernels, not another library (C1).",
         "numpy, scipy, triton, cupy, numba, jax, tensorflow"),
    Rule("dynamic_code",
         "Code built or looked up at run time is code the rules never saw.",
         "exec, eval, compile, __import__, globals, locals, vars, getattr, setattr, delattr, breakpoint; "
         "dunder attributes and names other than __init__/__name__/__doc__; metaclasses; defining "
         "__getattr__, __call__, __new__, __del__ and similar hooks"),
    Rule("torch_patching",
         "Assigning to attributes of torch or another imported module replaces what the harness calls "
         "(torch.cuda.synchronize = lambda: None) or flips global flags (allow_tf32) (A4, A8, B11).",
         "assignment, augmented assignment or del on an attribute of an imported module or a name bound "
         "to a torch object"),
    Rule("torch_functional",
         "torch.nn.functional is the reference's compute (C1).",
         "any reference to torch.nn.functional (F.*, nn.functional.*)"),
    Rule("torch_compiler",
         "torch.compile and the JIT generate the kernels instead of the candidate (C1).",
         "torch.compile, torch.jit, torch._dynamo, torch._inductor, torch.fx, torch.export, torch.compiler"),
    Rule("torch_ops",
         "torch.ops, torch._C, torch.library and torch.utils are back doors to ATen kernels and to "
         "compiling code at run time (C1).",
         "torch.ops, torch._C and every other torch._* name, torch.library, torch.utils, torch.overrides"),
    Rule("side_stream",
         "Work on a stream the harness does not wait for escapes the timer (A1).",
         "torch.cuda.Stream/stream/set_stream/ExternalStream/StreamContext, torch.Stream, CUDA graphs"),
    Rule("timer_patching",
         "The profiler is what the judge times with (A4).",
         "torch.profiler, torch.autograd.profiler, torch.cuda.profiler"),
    Rule("global_flags",
         "Seeds, thread counts and precision flags change the reference's or the baseline's behaviour "
         "(A8, B5, B11).",
         "torch.set_*, torch.manual_seed/seed, torch.random, torch.use_deterministic_algorithms, "
         "torch.cuda.set_*, torch.cuda.manual_seed*"),
    Rule("try_except",
         "A try/except decides which code runs; a fallback to torch when the custom op fails is the "
         "classic hack (C2).",
         "every try statement"),
    Rule("forbidden_base_class",
         "Classes may derive only from nn.Module, object or classes of this file; an nn layer base class "
         "brings its torch forward along (C1).",
         "a base class other than nn.Module, object or a class defined in model_new.py"),
    Rule("lazy_output",
         "Tensor subclasses and __torch_function__/__torch_dispatch__ objects compute when read, after the "
         "timer stopped (A3).",
         "subclassing torch.Tensor, defining __torch_function__ or __torch_dispatch__"),
    Rule("module_override",
         "Overriding nn.Module machinery (_load_from_state_dict, state_dict, _apply, register_*) runs code "
         "outside forward, where neither the rules nor the timer look.",
         "defining a method named like an nn.Module method other than __init__, forward, extra_repr"),
    Rule("module_state",
         "State kept across calls is a cache or a call counter (B4, A5): outputs keyed by id or content, "
         "behaviour that differs between warm-up and timing.",
         "global/nonlocal; assigning to self.* or to module-level names outside __init__; mutating "
         "module-level or self containers; id()/hash()"),
    Rule("torch_compute",
         "Outside __init__, torch may only create tensors and describe them; everything else is the "
         "reference's compute (C1).",
         "a torch.* call or reference outside the allowlist (torch.empty/empty_like/empty_strided, "
         "zeros*, ones*, full*, Size, device, finfo/iinfo, dtypes, no_grad)"),
    Rule("tensor_compute",
         "Tensor methods and operators run torch kernels (C1).",
         "on a tensor: arithmetic, comparisons, truth tests, in-place writes, indexing with tensors or "
         "lists, formatting, builtins other than len/isinstance/type, and methods other than metadata "
         "(size, dim, numel, stride, is_contiguous, data_ptr ...) and views (view, unsqueeze, squeeze, "
         "transpose, permute, narrow, select, chunk, split, unbind, detach ...)"),
    Rule("nn_module_call",
         "Calling a torch.nn layer runs torch's implementation; declare it in __init__ for the state_dict "
         "and pass its .weight/.bias to your kernel (C1).",
         "calling a submodule that is not a class of this file, or its forward"),
    Rule("unknown_call",
         "Outside __init__ only cuda_extension, tensor creation, metadata and functions of this file may be "
         "called.",
         "a call of anything else"),
    Rule("unanalysable",
         "A file the rules cannot analyse (too large, nested too deeply) is rejected rather than trusted.",
         "model_new.py larger than 256 KiB, or one the checker cannot walk"),
)

RULES_BY_NAME = {rule.name: rule for rule in RULES}
_RULE_ORDER = {rule.name: index for index, rule in enumerate(RULES)}


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int
    message: str
    file: str = FILE_NAME

    def as_dict(self) -> dict:
        return {"rule": self.rule, "file": self.file, "line": self.line, "message": self.message}

    def reason(self) -> str:
        return f"{self.rule}: {self.file}:{self.line}: {self.message}"


# --------------------------------------------------------------------------------------------------
# Vocabulary

# One line per rule that a torch path or an import can break, appended to the message.
RULE_HINTS = {
    "torch_functional": "torch.nn.functional is the reference's compute; write a kernel",
    "torch_compiler": "generated kernels are not the candidate's",
    "torch_ops": "a back door to ATen kernels or to compiling code at run time",
    "host_thread": "work would run outside the call",
    "timer_patching": "the judge times with the profiler",
    "side_stream": "launch on the current stream (c10::cuda::getCurrentCUDAStream() in C++)",
    "global_flags": "global flags and seeds change the reference and the baselines",
    "native_access": "native memory access is how timers get patched",
    "introspection": "introspection finds the harness's objects",
    "reference_access": "the reference and the harness are off limits",
    "process_escape": "processes and the environment are outside the call",
    "file_io": "files hold the harness's inputs and expected outputs",
    "clock_read": "a model needs no clock",
    "library_compute": "the work must be your CUDA kernels",
    "forbidden_import": "allowed: torch, torch.nn, cuda_extension, math, typing, numbers",
}

ALLOWED_MODULES = {"torch", "torch.nn", "cuda_extension", "math", "typing", "numbers", "__future__"}

# Modules named by a specific rule (the module or any submodule of it); everything else not allowed is
# forbidden_import.
MODULE_RULES = {
    "threading": "host_thread", "_thread": "host_thread", "multiprocessing": "host_thread",
    "concurrent": "host_thread", "asyncio": "host_thread", "sched": "host_thread",
    "ctypes": "native_access", "_ctypes": "native_access", "cffi": "native_access", "mmap": "native_access",
    "gc": "introspection", "inspect": "introspection", "sys": "introspection",
    "traceback": "introspection", "types": "introspection", "weakref": "introspection",
    "builtins": "introspection", "importlib": "introspection", "pkgutil": "introspection",
    "runpy": "introspection", "code": "introspection", "codeop": "introspection", "pickle": "introspection",
    "marshal": "introspection", "dis": "introspection", "copyreg": "introspection",
    "model": "reference_access", "reference": "reference_access", "cuda_agent_harness": "reference_access",
    "utils": "reference_access", "verification": "reference_access", "profiling": "reference_access",
    "os": "process_escape", "subprocess": "process_escape", "signal": "process_escape",
    "socket": "process_escape", "pty": "process_escape", "resource": "process_escape",
    "shlex": "process_escape", "posix": "process_escape",
    "io": "file_io", "pathlib": "file_io", "shutil": "file_io", "tempfile": "file_io", "glob": "file_io",
    "fcntl": "file_io",
    "time": "clock_read", "timeit": "clock_read", "datetime": "clock_read",
    "numpy": "library_compute", "scipy": "library_compute", "triton": "library_compute",
    "cupy": "library_compute", "numba": "library_compute", "jax": "library_compute",
    "tensorflow": "library_compute",
}

DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr",
                    "setattr", "delattr", "breakpoint"}
ALLOWED_DUNDER_ATTRS = {"__init__", "__name__", "__qualname__", "__doc__"}
ALLOWED_DUNDER_NAMES = {"__name__", "__doc__", "__all__"}
FORBIDDEN_DUNDER_METHODS = {"__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__del__",
                            "__call__", "__new__", "__init_subclass__", "__class_getitem__", "__set_name__",
                            "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__get__",
                            "__set__", "__delete__", "__instancecheck__", "__subclasscheck__"}
LAZY_DUNDER_METHODS = {"__torch_function__", "__torch_dispatch__"}

# nn.Module methods a candidate may not override (torch calls them outside forward).
NN_MODULE_METHODS = set("""
_apply _call_impl _wrapped_call_impl _load_from_state_dict _save_to_state_dict _register_state_dict_hook
_register_load_state_dict_pre_hook _named_members _get_name _replicate_for_data_parallel _get_backward_hooks
_maybe_warn_non_full_backward_hook add_module apply bfloat16 buffers children compile cpu cuda double eval
float get_buffer get_extra_state get_parameter get_submodule half ipu load_state_dict modules mtia
named_buffers named_children named_modules named_parameters parameters register_backward_hook
register_buffer register_forward_hook register_forward_pre_hook register_full_backward_hook
register_full_backward_pre_hook register_load_state_dict_post_hook register_load_state_dict_pre_hook
register_module register_parameter register_state_dict_post_hook register_state_dict_pre_hook requires_grad_
set_extra_state set_submodule share_memory state_dict to to_empty train type xpu zero_grad
""".split())

TORCH_DTYPES = set("""float32 float float16 half bfloat16 float64 double int8 int16 short int32 int int64 long
uint8 bool complex64 cfloat complex128 cdouble float8_e4m3fn float8_e5m2""".split())

# torch names forward may call.
TORCH_CALLS_ALLOWED = {f"torch.{n}" for n in """empty empty_like empty_strided zeros zeros_like ones ones_like
full full_like is_tensor is_floating_point is_complex numel Size device finfo iinfo no_grad inference_mode
get_default_dtype""".split()} | {f"torch.cuda.{n}" for n in """is_available current_device device_count
get_device_properties get_device_capability""".split()}

# torch names forward may refer to without calling them (types, dtypes, memory formats).
TORCH_VALUES_ALLOWED = TORCH_CALLS_ALLOWED | {f"torch.{n}" for n in TORCH_DTYPES} | {
    f"torch.{n}" for n in "Tensor dtype contiguous_format channels_last preserve_format strided".split()}

# Names `from torch import X` may bind (and torch.nn names are all fine to import).
TORCH_IMPORTS_ALLOWED = {n.split(".", 1)[1] for n in TORCH_VALUES_ALLOWED if n.count(".") == 1} | {"nn"}

TENSOR_METADATA_METHODS = set("""size dim ndimension numel nelement stride is_contiguous data_ptr element_size
get_device storage_offset is_floating_point is_complex is_signed is_same_size dim_order""".split())
TENSOR_VIEW_METHODS = set("""view view_as unsqueeze squeeze transpose permute t narrow select unbind chunk
split split_with_sizes tensor_split movedim moveaxis swapaxes swapdims detach diagonal""".split())
TENSOR_CREATION_METHODS = {"new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full"}
TENSOR_METADATA_ATTRS = set("""shape dtype device ndim is_cuda is_cpu layout requires_grad is_leaf is_sparse
is_quantized is_meta itemsize nbytes""".split())

# Attributes of a torch.nn layer that hold configuration (numbers, tuples, strings), not tensors.
MODULE_CONFIG_ATTRS = set("""in_features out_features in_channels out_channels kernel_size stride padding
dilation groups padding_mode output_padding transposed eps momentum affine track_running_stats num_features
normalized_shape elementwise_affine num_groups num_channels embedding_dim num_embeddings padding_idx max_norm
norm_type scale_grad_by_freq sparse num_heads head_dim embed_dim kdim vdim batch_first dropout p inplace
negative_slope alpha beta threshold value lambd min_val max_val dim start_dim end_dim training
return_indices ceil_mode count_include_pad divisor_override output_size approximate upscale_factor
scale_factor mode align_corners hidden_size input_size num_layers bidirectional nonlinearity
proj_size""".split())

SAFE_BUILTINS = set("""len range int float bool str tuple list dict set frozenset min max abs round isinstance
issubclass enumerate zip reversed sorted sum any all divmod pow print super type callable repr format slice
map filter iter next hasattr NotImplementedError ValueError RuntimeError TypeError AssertionError Exception
object staticmethod classmethod property""".split())
BUILTINS_ON_TENSORS = {"len", "isinstance", "type", "tuple", "list", "zip", "enumerate", "print", "iter",
                       "callable", "super", "ValueError", "RuntimeError", "TypeError", "AssertionError",
                       "NotImplementedError", "Exception"}
STATE_BUILTINS = {"id", "hash"}
SCALAR_ANNOTATIONS = {"int", "float", "bool", "str"}

FORWARD = "forward"
INIT = "init"
# Expressions as deep as the parser accepts (a few thousand terms) are checked, not refused: Python
# calls between Python functions do not use the C stack (3.11+).
RECURSION_LIMIT = 20000


# --------------------------------------------------------------------------------------------------
# Helpers


def _is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":` — never runs when the harness imports model_new.py."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    sides = [test.left, *test.comparators]
    return (len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def _module_rule(module: str) -> str | None:
    """The rule an import of `module` breaks, or None when it is allowed."""
    if module in ALLOWED_MODULES:
        return None
    top = module.split(".", 1)[0]
    if top == "torch":
        return _torch_path_rule(module) or "forbidden_import"
    return MODULE_RULES.get(top, "forbidden_import")


def _torch_path_rule(path: str) -> str | None:
    """The universal rule a torch path (torch.nn.functional.relu) breaks, or None."""
    parts = path.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return None
    second = parts[1]
    if second == "nn" and len(parts) > 2 and parts[2] == "functional":
        return "torch_functional"
    if second in {"compile", "jit", "_dynamo", "_inductor", "fx", "export", "compiler"}:
        return "torch_compiler"
    if second in {"ops", "library", "utils", "overrides"} or second.startswith("_"):
        return "torch_ops"
    if second in {"multiprocessing", "futures", "distributed"}:
        return "host_thread"
    if second == "profiler" or (second in {"autograd", "cuda"} and len(parts) > 2 and parts[2] == "profiler"):
        return "timer_patching"
    if second == "Stream" or (second == "cuda" and len(parts) > 2 and parts[2] in {
            "Stream", "stream", "set_stream", "ExternalStream", "StreamContext", "graph", "graphs",
            "CUDAGraph", "make_graphed_callables"}):
        return "side_stream"
    last = parts[-1]
    if last.startswith("set_") or last in {"manual_seed", "manual_seed_all", "seed", "seed_all",
                                           "use_deterministic_algorithms"} or second == "random":
        return "global_flags"
    return None


def _annotation_is_scalar(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id in SCALAR_ANNOTATIONS
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value in SCALAR_ANNOTATIONS
    return False


def _params(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *args.kwonlyargs,
            *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]


def _target_names(target: ast.expr) -> Iterable[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _self_attr(node: ast.expr) -> str | None:
    """`name` for `self.name`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _snippet(node: ast.AST) -> str:
    """The source of a short expression, for messages; long ones are not unparsed (that would make
    checking quadratic in the expression's size)."""
    line, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    start, stop = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", 0)
    if line is None or end != line or stop - start > 80:
        return "this expression"
    return ast.unparse(node)


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


# --------------------------------------------------------------------------------------------------
# The checker


class _Checker:
    """Runs every rule over one module; `violations` holds the results in source order."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.found: dict[tuple[str, int], Violation] = {}
        self.aliases: dict[str, str] = {}        # name -> canonical dotted path of an imported object
        self.module_names: set[str] = set()      # names bound at module level (not imports)
        self.functions: dict[str, ast.FunctionDef] = {}  # module-level functions
        self.classes: dict[str, ast.ClassDef] = {}
        self.attr_kinds: dict[str, dict[str, str]] = {}  # class -> self attribute -> kind
        self.analysed: set[tuple] = set()
        self.skipped: set[int] = set()           # ids of nodes under `if __name__ == "__main__":`

    # -- reporting

    def report(self, rule: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1) or 1
        self.found.setdefault((rule, line), Violation(rule, line, message))

    def violations(self) -> list[Violation]:
        return sorted(self.found.values(), key=lambda v: (v.line, _RULE_ORDER[v.rule]))

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
            if _is_main_guard(node):
                for inner in ast.walk(node):
                    self.skipped.add(id(inner))
        self.collect_module_bindings()
        self.universal(self.tree)
        self.classify_classes()
        self.analyse_module_level()
        for cls in self.classes.values():
            self.check_class(cls)
        return self.violations()

    def walk(self, root: ast.AST) -> Iterable[ast.AST]:
        for node in ast.walk(root):
            if id(node) not in self.skipped:
                yield node

    def collect_module_bindings(self) -> None:
        for node in self.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".", 1)[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
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
                    for name in _target_names(target):
                        if path and isinstance(target, ast.Name):
                            self.aliases[name] = path   # T = torch.Tensor: T is torch.Tensor
                        else:
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

    def check_import(self, node: ast.AST, module: str) -> None:
        rule = _module_rule(module)
        if rule:
            self.report(rule, node, f"import of {module} is not allowed: {RULE_HINTS[rule]}")

    def check_import_from(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.report("forbidden_import", node, "relative imports are not allowed")
            return
        module = node.module or ""
        rule = _module_rule(module)
        if rule:
            self.check_import(node, module)
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name == "*":
                if module.startswith("torch"):
                    self.report("torch_compute", node, f"`from {module} import *` imports torch's operators")
                continue
            if module == "torch" and alias.name not in TORCH_IMPORTS_ALLOWED:
                rule = _torch_path_rule(full) or _module_rule(full)
                if rule and rule != "forbidden_import":
                    self.report(rule, node, f"import of {full} is not allowed: {RULE_HINTS[rule]}")
                else:
                    self.report("torch_compute", node,
                                f"`from torch import {alias.name}`: only nn, Tensor, dtypes and tensor "
                                "creation may be imported from torch")
            elif module.startswith("torch"):
                rule = _torch_path_rule(full)
                if rule:
                    self.report(rule, node, f"import of {full} is not allowed: {RULE_HINTS[rule]}")

    def check_name(self, node: ast.Name, bound: set[str]) -> None:
        name = node.id
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDER_NAMES:
            self.report("dynamic_code", node, f"`{name}` is not allowed")
        elif name == "__name__" and isinstance(node.ctx, ast.Store):
            self.report("dynamic_code", node, "assigning __name__ is not allowed")
        elif isinstance(node.ctx, ast.Load) and name not in bound:
            if name in DYNAMIC_BUILTINS:
                self.report("dynamic_code", node, f"`{name}` builds or looks up code at run time")
            elif name == "open":
                self.report("file_io", node, "`open` accesses files")
        path = self.aliases.get(name)
        if path and isinstance(node.ctx, ast.Load):
            self.check_torch_path(node, path)

    def check_attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ALLOWED_DUNDER_ATTRS:
            self.report("dynamic_code", node, f"`.{node.attr}` is not allowed")
        path = self.dotted(node)
        if path:
            self.check_torch_path(node, path)

    def check_torch_path(self, node: ast.AST, path: str) -> None:
        rule = _torch_path_rule(path)
        if rule:
            self.report(rule, node, f"`{path}` is not allowed: {RULE_HINTS[rule]}")

    def check_patching(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.Delete):
            targets = node.targets
        else:
            targets = [node.target]  # type: ignore[attr-defined]
        for target in targets:
            for element in ast.walk(target):
                if not isinstance(element, (ast.Attribute, ast.Subscript)):
                    continue
                if isinstance(element.ctx, ast.Load):
                    continue
                root = _root_name(element)
                if root is not None and root in self.aliases:
                    shown = self.dotted(element.value) or root
                    is_attribute = isinstance(element, ast.Attribute)
                    what = f"{shown}.{element.attr}" if is_attribute else f"{shown}[...]"
                    self.report("torch_patching", node,
                                f"assigning `{what}` changes an imported module (timers, flags, operators)")

    def check_class_shape(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            path = self.dotted(base)
            if isinstance(base, ast.Name) and base.id in self.classes:
                continue
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            if path == "torch.nn.Module":
                continue
            if path and path.startswith("torch.") and path.split(".")[-1] == "Tensor":
                self.report("lazy_output", node, f"class {node.name} subclasses torch.Tensor")
                continue
            shown = path or _snippet(base)
            self.report("forbidden_base_class", node,
                        f"class {node.name} derives from {shown}; derive from nn.Module")
        for keyword in node.keywords:
            self.report("dynamic_code", node, f"class keyword `{keyword.arg}` (metaclass) is not allowed")
        derives_module = self.derives_from_module(node)
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if item.name in LAZY_DUNDER_METHODS:
                self.report("lazy_output", item, f"defining {item.name} makes lazy outputs")
            elif item.name in FORBIDDEN_DUNDER_METHODS:
                self.report("dynamic_code", item, f"defining {item.name} is not allowed")
            elif derives_module and item.name in NN_MODULE_METHODS:
                self.report("module_override", item,
                            f"overriding nn.Module.{item.name} runs code outside forward")

    def derives_from_module(self, node: ast.ClassDef, seen: frozenset = frozenset()) -> bool:
        for base in node.bases:
            if self.dotted(base) == "torch.nn.Module":
                return True
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                if self.derives_from_module(self.classes[base.id], seen | {node.name}):
                    return True
        return False

    # -- self attributes ---------------------------------------------------------------------------

    def classify_classes(self) -> None:
        for name, cls in self.classes.items():
            kinds: dict[str, str] = {}
            for item in cls.body:
                if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None:
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    for target in targets:
                        for attr in _target_names(target):
                            self.merge_kind(kinds, attr, self.value_kind(item.value, set()))
            init = self.method(cls, "__init__")
            if init is not None:
                self.classify_init(init, kinds, cls, set())
            self.attr_kinds[name] = kinds
        # Attributes inherited from local base classes.
        for name, cls in self.classes.items():
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in self.attr_kinds:
                    for attr, kind in self.attr_kinds[base.id].items():
                        self.merge_kind(self.attr_kinds[name], attr, kind)

    @staticmethod
    def merge_kind(kinds: dict[str, str], attr: str, kind: str) -> None:
        order = ["scalar", "container", "unknown", "tensor", "module", "local"]
        old = kinds.get(attr)
        if old is None or order.index(kind.split(":")[0]) > order.index(old.split(":")[0]):
            kinds[attr] = kind

    def classify_init(self, func: ast.FunctionDef, kinds: dict[str, str], cls: ast.ClassDef,
                      seen: set[str]) -> None:
        """Reads `self.X = value` (and register_buffer/register_parameter) in __init__ and the helpers it
        calls through self."""
        seen.add(func.name)
        scalar_locals = {a.arg for a in _params(func.args)} - {"self"}
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    attr = _self_attr(target)
                    if attr:
                        self.merge_kind(kinds, attr, self.value_kind(node.value, scalar_locals))
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        for element in target.elts:
                            if _self_attr(element):
                                self.merge_kind(kinds, _self_attr(element), "unknown")
            elif isinstance(node, ast.Call):
                called = _self_attr(node.func)
                if called in {"register_buffer", "register_parameter"} and node.args and \
                        isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    self.merge_kind(kinds, node.args[0].value, "tensor")
                elif called == "add_module" and node.args and isinstance(node.args[0], ast.Constant):
                    self.merge_kind(kinds, str(node.args[0].value), "module")
                elif called and called not in seen:
                    helper = self.method(cls, called)
                    if helper is not None:
                        self.classify_init(helper, kinds, cls, seen)

    def value_kind(self, value: ast.expr, scalar_names: set[str]) -> str:
        """What `self.X = value` in __init__ stores: scalar, container, tensor, module (a torch.nn
        layer), local:<Class> (an instance of a class of this file) or unknown."""
        if isinstance(value, ast.Constant):
            return "scalar"
        if isinstance(value, ast.Name):
            return "scalar" if value.id in scalar_names else "unknown"
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)):
            parts = [n for n in ast.walk(value) if isinstance(n, (ast.Call, ast.Attribute, ast.Subscript))]
            names = [n for n in ast.walk(value) if isinstance(n, ast.Name)]
            if not parts and all(n.id in scalar_names for n in names):
                return "scalar"
            return "unknown"
        if isinstance(value, ast.Tuple) and all(isinstance(e, ast.Constant) or
                                                (isinstance(e, ast.Name) and e.id in scalar_names)
                                                for e in value.elts):
            return "scalar"
        if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
            return "container"
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and func.id in self.classes:
                return f"local:{func.id}"
            if isinstance(func, ast.Name) and func.id in {"int", "float", "bool", "str", "tuple", "round",
                                                          "abs", "min", "max", "len"}:
                return "scalar"
            if isinstance(func, ast.Name) and func.id in {"list", "dict", "set"}:
                return "container"
            path = self.dotted(func)
            if path:
                if path.startswith("math."):
                    return "scalar"
                if path.startswith("torch.nn.") and path.split(".")[-1][:1].isupper() and \
                        path != "torch.nn.Parameter" and path != "torch.nn.parameter.Parameter":
                    return "module"
                if path.startswith("torch"):
                    return "tensor"
        return "unknown"

    @staticmethod
    def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item
        return None

    def find_method(self, cls: ast.ClassDef, name: str, seen: frozenset = frozenset()) -> \
            tuple[ast.ClassDef, ast.FunctionDef] | None:
        found = self.method(cls, name)
        if found is not None:
            return cls, found
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                hit = self.find_method(self.classes[base.id], name, seen | {cls.name})
                if hit:
                    return hit
        return None

    # -- profiles ------------------------------------------------------------------------------------

    def analyse_module_level(self) -> None:
        statements = [s for s in self.tree.body
                      if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                                            ast.ImportFrom)) and id(s) not in self.skipped]
        module = ast.Module(body=statements, type_ignores=[])
        _Body(self, module, None, FORWARD, set()).run()

    def check_class(self, cls: ast.ClassDef) -> None:
        """__init__ under the init profile, forward with its tensor parameters tainted; other methods
        through their call sites, or as roots when they are referenced without a call (hooks,
        properties: all parameters tainted) or never referenced (no parameter tainted)."""
        called: set[str] = set()
        referenced: set[str] = set()
        for node in self.walk(cls):
            if isinstance(node, ast.Call) and _self_attr(node.func):
                called.add(_self_attr(node.func))
        for node in self.walk(cls):
            attr = _self_attr(node) if isinstance(node, ast.Attribute) else None
            if attr and isinstance(node.ctx, ast.Load) and attr not in called:
                referenced.add(attr)
        for item in cls.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            params = [a for a in _params(item.args)][1:]
            if item.name == "__init__":
                self.analyse(item, cls, INIT, frozenset())
            elif item.name == FORWARD:
                tainted = frozenset(a.arg for a in params if not _annotation_is_scalar(a.annotation))
                self.analyse(item, cls, FORWARD, tainted)
            elif item.name in referenced or any(isinstance(d, ast.Name) and d.id == "property"
                                                for d in item.decorator_list):
                self.analyse(item, cls, FORWARD, frozenset(a.arg for a in params))
            elif item.name not in called:
                self.analyse(item, cls, FORWARD, frozenset())

    def analyse(self, func: ast.FunctionDef, cls: ast.ClassDef | None, profile: str,
                tainted: frozenset) -> None:
        key = (id(func), profile, tainted)
        if key in self.analysed:
            return
        self.analysed.add(key)
        _Body(self, func, cls, profile, set(tainted)).run()


class _Body:
    """Checks one function body (or the module's top-level statements) under a profile."""

    def __init__(self, checker: _Checker, func: ast.AST, cls: ast.ClassDef | None, profile: str,
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
            self.locals.update(a.arg for a in _params(self.func.args))
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
                    for a in _params(node.args):
                        if a.arg not in self.tainted:
                            self.tainted.add(a.arg)
                            changed = True
                for target, value in pairs:
                    if self.is_tainted(value):
                        for name in _target_names(target):
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
                self.report_tensor(node, f"`{_snippet(node)}` is tensor arithmetic")
        elif isinstance(node, ast.UnaryOp):
            if self.is_tainted(node.operand):
                self.report_tensor(node, f"`{_snippet(node)}` is a tensor operation")
        elif isinstance(node, ast.BoolOp):
            if any(self.is_tainted(v) for v in node.values):
                self.report_tensor(node, f"`{_snippet(node)}` tests a tensor's truth")
        elif isinstance(node, ast.Compare):
            identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
            if not identity and any(self.is_tainted(v) for v in [node.left, *node.comparators]):
                self.report_tensor(node, f"`{_snippet(node)}` compares tensors")
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            if self.is_tainted(node.test):
                self.report_tensor(node, f"`{_snippet(node.test)}` tests a tensor's truth")
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
                           frozenset(a.arg for a in _params(node.args) if a.arg != "self"))

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
                    self.report_tensor(node, f"`{_snippet(node)}` is advanced indexing (a gather)")
            return
        # Store or Del.
        if self.is_tainted(node.value):
            self.report_tensor(node, f"writing into `{_snippet(node.value)}` is an in-place tensor operation")
            return
        root = _root_name(node)
        if root == "self" or (root is not None and root not in self.locals):
            self.c.report("module_state", node, f"writing `{_snippet(node)}` keeps state across calls")

    def visit_store(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        else:
            targets = [node.target]  # type: ignore[attr-defined]
        if isinstance(node, ast.AugAssign) and (self.is_tainted(node.target) or self.is_tainted(node.value)):
            self.report_tensor(node, f"`{_snippet(node).strip()}` is tensor arithmetic")
        for target in targets:
            for element in ast.walk(target):
                if not isinstance(element, ast.Attribute) or isinstance(element.ctx, ast.Load):
                    continue
                root = _root_name(element)
                if root in self.c.aliases and root not in self.locals:
                    continue  # torch_patching, reported by the universal rules
                if root == "self" or root is None or root not in self.locals:
                    self.c.report("module_state", node, f"assigning `{_snippet(element)}` outside "
                                                        "__init__ keeps state across calls")
                elif self.is_tainted(element.value):
                    self.report_tensor(node, f"assigning `{_snippet(element)}` changes a tensor")
        in_function = isinstance(self.func, ast.FunctionDef)
        if in_function and isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in targets:
                for name in _target_names(target):
                    if name in self.c.module_names and name not in self.locals:
                        self.c.report("module_state", node, f"assigning module-level `{name}`")

    def visit_name(self, node: ast.Name) -> None:
        path = self.local_aliases.get(node.id)
        if path is None and node.id not in self.locals:
            path = self.c.aliases.get(node.id)
        if path and path.startswith("torch") and not _torch_path_rule(path) and \
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
        if self.is_call_target(node) or _torch_path_rule(path):
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
        self.c.report("unknown_call", node, f"`{_snippet(func)}(...)` is not a call forward may make")

    def check_path_call(self, node: ast.Call, path: str, tainted_args: list) -> None:
        if path.startswith("cuda_extension."):
            return
        if path.startswith("torch"):
            if _torch_path_rule(path):
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
                          f"calling `{_snippet(func)}` runs a torch.nn layer; pass its parameters to "
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
            self.c.report("module_state", node, f"`{_snippet(func)}(...)` uses state kept across calls")
            return
        if _self_attr(func) is not None and kind in {"tensor", "scalar", "unknown"}:
            self.c.report("unknown_call", node, f"`{_snippet(func)}(...)` is not a call forward may make")
            return
        if self.is_tainted(receiver):
            if method in TENSOR_METADATA_METHODS or method in TENSOR_VIEW_METHODS or \
                    method in TENSOR_CREATION_METHODS:
                return
            self.report_tensor(node, f"`.{method}()` on `{_snippet(receiver)}` runs a torch operator "
                                     "(allowed: metadata such as size()/dim()/stride() and views such as "
                                     "view()/unsqueeze()/transpose())")
            return
        root = _root_name(receiver)
        if root is not None and root not in self.locals and root not in self.c.aliases and \
                (root in self.c.module_names or root == "self"):
            self.c.report("module_state", node, f"`{_snippet(func)}(...)` changes module-level state")
            return
        if root is not None and root in self.locals:
            return  # a method of a local value (a list's append, a shape's index)
        self.c.report("unknown_call", node, f"`{_snippet(func)}(...)` is not a call forward may make")

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
        params = _params(target.args)
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


def check_tree(tree: ast.Module) -> list[Violation]:
    """Every violation of the rules in a parsed model_new.py, in source order. A tree the checker cannot
    walk (nested deeper than the interpreter's recursion limit) is one `unanalysable` violation."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        return _Checker(tree).run()
    except RecursionError:
        return [Violation("unanalysable", 1, "the file is nested too deeply to be checked")]
    finally:
        sys.setrecursionlimit(limit)


def check_source(source: str | bytes) -> list[Violation]:
    """Parses and checks model_new.py's text (a SyntaxError propagates)."""
    return check_tree(ast.parse(source, filename=FILE_NAME))
