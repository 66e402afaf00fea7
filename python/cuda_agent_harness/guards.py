"""Runtime guards around the candidate's forward (HACKS.md A2, C1, C2).

- `block_functional()` is the published guard: every public callable of `torch.nn.functional` is replaced
  by one that raises, so neither model_new.py nor an `nn` module it uses can compute through `F.*`.
- `OpGuard` is a TorchDispatchMode: while `watch()` is active it sees every operator dispatched on this
  thread — from model_new.py and from C++ bindings alike (`at::relu` in a binding goes through the
  dispatcher) — counts them, and refuses every op outside ALLOWED_OPS: the forward may create tensors,
  change their metadata and copy them where the copy keeps dtype, device and layout (COPY_OPS:
  `.contiguous()`, `.clone()`, `dst.copy_(src)`, `.to(copy=True)` — data movement, no arithmetic on
  values; issue 46), never compute with torch. A copy that converts (`.to(torch.float16)`, `.double()`,
  `.cpu()`, a copy_ between dtypes or devices) is refused. A refused op raises inside the forward and is
  remembered, so a candidate that catches the exception (a try/except fallback) still fails when
  `watch()` ends. A blocked `F.*` call is remembered the same way.
- Under a policy that lets torch compute (kernelbench; `set_policy_rules` from the job spec's
  "policy_rules", src/judge/precision.h PolicyRules) the guard lets every `aten` op through and F is not
  blocked — torch may do part of the work — but the forward must call a function of cuda_extension
  (counted by `count_extension_calls`; none is `no_custom_kernel`), and on CUDA no op may compute on the
  host: `.item()` and ops with a CPU tensor (other than a 0-dim scalar) in or out are refused (the device
  clock never sees host work). Non-aten ops stay refused.
- `ThreadWatch` compares the process's thread counts (Python and OS) with a baseline, so work deferred to
  a thread that outlives the forward is caught.

Limits (covered by the static checks, not here): the dispatch mode is per thread, so ops run by a thread
the candidate starts and joins inside the forward are not seen; kernels called directly (`at::native::`,
`at::cpu::`, `at::cuda::`), code that excludes the Python dispatch key, and libraries that launch their own
kernels (cuBLAS, Triton, CuPy) bypass the dispatcher; on the CPU, Python-level computation (NumPy,
`tolist()`) dispatches nothing. Ops of custom TORCH_LIBRARY operators run with the mode suspended, which
is why every op outside `aten` (and the profiler's range markers) is refused.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from .errors import JobError

# Operators the candidate's forward may dispatch: tensor creation, pure metadata (views: never a copy),
# size/stride queries and stream bookkeeping. Keys are "namespace::name" (every overload) or
# "namespace::name.overload" (that overload only). Anything else — arithmetic, reductions, GEMM, dtype and
# device conversions, .item() and random fills — is refused; copies are COPY_OPS' (below).
ALLOWED_OPS: dict[str, str] = {}


def _allow(category: str, names: str) -> None:
    for name in names.split():
        ALLOWED_OPS[name if "::" in name else f"aten::{name}"] = category


# Creation: new tensors, uninitialised or filled with a constant (computed from nothing in the inputs).
# lift_fresh wraps a tensor made outside the dispatcher (torch.tensor(...), torch.from_numpy).
_allow("creation", "empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros "
                   "ones ones_like new_ones full full_like new_full scalar_tensor arange lift_fresh zero_ "
                   "fill_.Scalar fill.Scalar")
# Metadata: views of the same storage. reshape/flatten that must copy arrive as clone (refused) first.
_allow("metadata", "view _unsafe_view _reshape_alias as_strided alias detach unsqueeze squeeze t transpose "
                   "permute expand slice select narrow split split_with_sizes unbind chunk diagonal unfold "
                   "view_as_real view_as_complex")
_allow("query", "size stride numel dim sym_size sym_stride sym_numel sym_storage_offset storage_offset "
                "is_contiguous is_non_overlapping_and_dense is_same_size")
_allow("memory", "record_stream")
ALLOWED_NAMESPACES = ("profiler",)  # record_function ranges inside the forward
# Copies: allowed when every tensor they read and write has one dtype, one device and one layout and
# carries no lazy conjugate or negation (`copy_ops_reason`). `.contiguous()` and a reshape that must copy
# arrive as clone, `.to(copy=True)` / `.to(same dtype, memory_format=...)` as _to_copy. They move data and
# compute nothing: what a copy can return (a copy of an input, of a weight, of a tensor made earlier) a
# one-line copy kernel could return too, and the output checks judge it the same way
# (docs/decisions/integrity.md, "Copies in the forward").
COPY_OPS = frozenset({"aten::clone", "aten::copy_", "aten::copy", "aten::_to_copy"})
REFUSED_OP_HINT = ("only allocation, metadata ops and copies that keep dtype and device are allowed; "
                   "compute in your own kernel")
THREAD_SETTLE_SECONDS = 0.05


# The policy's rules for this job's candidate (set once per job from its spec, set_policy_rules) and the
# count of cuda_extension calls (count_extension_calls). Mutated in place, never rebound: the process
# watch pins this module's callables and classes, and a counter on a class would read as patching.
_POLICY = {"torch_compute": False, "weights_by_position": False}
_EXTENSION_CALLS = [0]


def torch_compute_allowed() -> bool:
    """Whether the job's policy lets torch compute (kernelbench)."""
    return _POLICY["torch_compute"]


def weights_by_position_allowed() -> bool:
    """Whether the job's policy lets ModelNew take the reference weights by position (kernelbench)."""
    return _POLICY["weights_by_position"]


def extension_calls() -> int:
    """How many calls of cuda_extension's functions this process has made."""
    return _EXTENSION_CALLS[0]


def set_policy_rules(value: object) -> None:
    """Takes the job spec's "policy_rules" ({"torch_compute": bool, "weights_by_position": bool}, each
    optional; None: the paper's rules)."""
    if value is None:
        value = {}
    if not isinstance(value, dict) or set(value) - set(_POLICY) or \
            not all(isinstance(value.get(key, False), bool) for key in _POLICY):
        raise JobError("internal", f"spec: policy_rules must be {{\"torch_compute\": bool, "
                                   f"\"weights_by_position\": bool}}, not {value!r}")
    for key in _POLICY:
        _POLICY[key] = value.get(key, False)


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        _EXTENSION_CALLS[0] += 1
        return fn(*args, **kwargs)

    call.__name__ = getattr(fn, "__name__", "extension_function")
    call.__doc__ = getattr(fn, "__doc__", None)
    return call


def count_extension_calls(module: Any) -> None:
    """Replaces every public callable of the built cuda_extension module with one that counts its calls
    (before model_new imports it, so that `from cuda_extension import f` binds the counted one too)."""
    for name in dir(module):
        if not name.startswith("_") and callable(getattr(module, name)):
            setattr(module, name, _counted(getattr(module, name)))


def _on_host(value: Any, out: bool) -> bool:
    """A CPU tensor among an op's arguments (a 0-dim one, a wrapped scalar, only as a result) or results."""
    found = []

    def visit(x: Any) -> None:
        if isinstance(x, torch.Tensor):
            if x.device.type == "cpu" and (out or x.dim() > 0):
                found.append(x)
        elif isinstance(x, (list, tuple)):
            for item in x:
                visit(item)
        elif isinstance(x, dict):
            for item in x.values():
                visit(item)

    visit(value)
    return bool(found)


def op_allowed(name: str, namespace: str) -> bool:
    """Whether the operator `name` ("aten::fill_.Scalar", "aten::view") may run in the forward."""
    if namespace in ALLOWED_NAMESPACES:
        return True
    return name in ALLOWED_OPS or name.split(".", 1)[0] in ALLOWED_OPS


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def copy_ops_reason(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> str | None:
    """Why a copy op (COPY_OPS) that ran is refused, or None when it only moved data: every tensor it
    read or wrote (`args`, `kwargs`, `out`) has the same dtype, device and layout, and none is a lazy
    conjugate or negation (a clone of one would materialise the arithmetic)."""
    tensors = _tensors((args, kwargs)) + _tensors(out)
    if not tensors:
        return "copies nothing"
    first = tensors[0]
    for t in tensors[1:]:
        if t.dtype != first.dtype:
            return f"converts between {_dtype(first)} and {_dtype(t)}"
        if t.device != first.device:
            return f"moves data between {first.device} and {t.device}"
        if t.layout != first.layout:
            return f"converts between layouts {first.layout} and {t.layout}"
    if any(t.is_conj() or t.is_neg() for t in tensors):
        return "materialises a lazy conjugate or negation"
    return None


class ForbiddenOp(RuntimeError):
    """Raised inside the candidate's forward when it dispatches a refused operator."""


class OpGuard(TorchDispatchMode):
    """Counts the ops of the candidate's forwards and refuses compute ops; see the module docstring.

    `counts` maps "aten.relu.default" to how often it ran (allowed or not, over every `watch()`);
    `violation` is the reason of the first refused op or blocked call, None while there was none.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps __torch_dispatch__ in torch._dynamo.disable unless this says False; that wrapper
        # imports torch._dynamo (about 2 s) at the first op of the first forward, and adds a call per op.
        return False

    def __init__(self, device: str = "cpu") -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # TorchDispatchMode's, unannotated
        self.counts: collections.Counter[str] = collections.Counter()
        self.violation: str | None = None
        self.device = device
        self.torch_compute = torch_compute_allowed()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        shown = str(func)
        self.counts[shown] += 1
        if self.torch_compute and func.namespace == "aten":
            return self.torch_op(func, shown, args, kwargs or {})
        if func.name().split(".", 1)[0] in COPY_OPS:
            return self.copy_op(func, shown, args, kwargs or {})
        if not op_allowed(func.name(), func.namespace):
            self.refuse(f"forbidden torch op during the candidate's forward: {shown} ({REFUSED_OP_HINT})")
        return func(*args, **(kwargs or {}))

    def copy_op(self, func: Any, shown: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A copy: allowed when it keeps dtype, device and layout (copy_ops_reason), refused otherwise.
        Its inputs are checked before it runs (a copy_ between dtypes writes nothing), its result after."""
        reason = copy_ops_reason(func, args, kwargs, None)
        out = func(*args, **kwargs) if reason is None else None
        if reason is None:
            reason = copy_ops_reason(func, args, kwargs, out)
        if reason is not None:
            self.refuse(f"forbidden torch op during the candidate's forward: {shown} {reason} (a conversion "
                        f"computes new values: convert inside your own kernel; copies that keep dtype and "
                        f"device — .contiguous(), .clone(), dst.copy_(src) — are allowed)")
        return out

    def torch_op(self, func: Any, shown: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """An aten op under a policy that lets torch compute: allowed, but on CUDA not on the host."""
        host = self.device == "cuda" and not op_allowed(func.name(), func.namespace)
        if host and (func.name() == "aten::_local_scalar_dense" or _on_host((args, kwargs), out=False)):
            self.refuse(f"host computation during the candidate's forward: {shown} reads or computes on "
                        f"the host, where the device clock does not see it (torch ops are allowed under "
                        f"--policy kernelbench, on the device)")
        out = func(*args, **kwargs)
        if host and _on_host(out, out=True):
            self.refuse(f"host computation during the candidate's forward: {shown} moves data to the host, "
                        f"where the device clock does not see the work (torch ops are allowed under "
                        f"--policy kernelbench, on the device)")
        return out

    def refuse(self, reason: str) -> None:
        self.record(reason)
        raise ForbiddenOp(reason)

    def record(self, reason: str) -> None:
        """Remembers a violation (the first one is the one reported)."""
        if self.violation is None:
            self.violation = reason

    def ops(self) -> dict[str, int]:
        """The op counts, by name."""
        return dict(sorted(self.counts.items()))

    @contextlib.contextmanager
    def watch(self, what: str) -> Iterator[None]:
        """Runs the body with the mode active; any violation becomes JobError("forbidden_op").

        `what` prefixes the reason ("check 2"). A violation wins over the exception it caused, and is
        reported also when the candidate caught that exception and returned normally. A forward that
        leaves another mode on top of the stack, or pops this one, is a violation too. Under a policy that
        lets torch compute, a forward that called no function of cuda_extension is
        JobError("no_custom_kernel").
        """
        calls_before = extension_calls()
        try:
            with self:
                yield
                if _get_current_dispatch_mode() is not self:
                    self.record("the candidate's forward changed torch's dispatch mode stack (ops it ran "
                                "afterwards were not checked)")
        except BaseException as exc:
            if self.violation is not None:
                raise JobError("forbidden_op", f"{what}: {self.violation}") from exc
            raise
        if self.violation is not None:
            raise JobError("forbidden_op", f"{what}: {self.violation}")
        if self.torch_compute and extension_calls() == calls_before:
            raise JobError("no_custom_kernel",
                           f"{what}: the forward called no function of cuda_extension: torch computed it "
                           f"alone; under --policy kernelbench torch may do part of the work, and your own "
                           f"kernel must do the rest")


def _raiser(name: str, on_block: Callable[[str], None] | None) -> Callable[..., Any]:
    def blocked(*args: Any, **kwargs: Any) -> Any:
        if on_block is not None:
            on_block(f"forbidden call during the candidate's forward: torch.nn.functional.{name} "
                     f"(torch.nn.functional is not allowed)")
        raise RuntimeError(f"torch.nn.functional.{name} is not allowed in ModelNew's forward")

    blocked.__name__ = name
    return blocked


def public_callables() -> dict[str, Callable[..., Any]]:
    """Name → object of every public callable attribute of torch.nn.functional."""
    found = {}
    for name in dir(F):
        if name.startswith("_"):
            continue
        attr = getattr(F, name)
        if callable(attr):
            found[name] = attr
    return found


# The names block_functional replaces, read at its first use (after the candidate's module loaded), and
# its raisers per `on_block`: a forward of the verification's sampled checks enters it once each, and
# reading dir(F) and making ~200 raisers every time cost more than the rest of the guards together.
_BLOCKED_NAMES: list[str] = []
_RAISERS: dict[Any, dict[str, Callable[..., Any]]] = {}


def _raisers(on_block: Callable[[str], None] | None) -> dict[str, Callable[..., Any]]:
    if not _BLOCKED_NAMES:
        _BLOCKED_NAMES.extend(public_callables())
    raisers = _RAISERS.get(on_block)
    if raisers is None:
        if len(_RAISERS) >= 8:  # a few guards per process; never grows without bound
            _RAISERS.clear()
        raisers = _RAISERS[on_block] = {name: _raiser(name, on_block) for name in _BLOCKED_NAMES}
    return raisers


@contextlib.contextmanager
def block_functional(on_block: Callable[[str], None] | None = None) -> Iterator[None]:
    """Replaces every public callable of torch.nn.functional with a raiser for the duration.

    `on_block(reason)` is called before each refusal (OpGuard.record, so a caught refusal still counts).
    Under a policy that lets torch compute nothing is blocked.
    """
    if torch_compute_allowed():
        yield
        return
    raisers = _raisers(on_block)
    originals = {name: getattr(F, name) for name in raisers if hasattr(F, name)}
    try:
        for name in originals:
            setattr(F, name, raisers[name])
        yield
    finally:
        for name, attr in originals.items():
            setattr(F, name, attr)


def thread_counts() -> tuple[int, int]:
    """(Python threads alive, OS threads of this process)."""
    try:
        os_threads = len(os.listdir("/proc/self/task"))
    except OSError:  # no procfs: only the Python count is available
        os_threads = 0
    return threading.active_count(), os_threads


def start_torch_threads(device: str) -> None:
    """Starts the threads torch creates lazily (the intra-op pool, the CUDA context's own threads), so
    that a legitimate forward does not appear to spawn them."""
    torch.get_num_threads()
    torch.ones(1 << 20).add_(1)  # large enough to run on every intra-op thread
    if device == "cuda":
        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()


def warm_blas(device: str) -> None:
    """Initialises cuBLAS in this process with one small GEMM of the harness's own (torch's handle and
    workspace for the current stream, the library's start-up), before any candidate code: otherwise a
    candidate's first GEMM pays for it inside the verification or the timing's warm-up, both on a
    judgement's path (H100: a first 1024x8192x8192 GEMM in a fresh process 84-249 ms, 31-46 ms after
    this; the kernel the shape needs is still loaded on its first use). Only on CUDA."""
    if device != "cuda":
        return
    a = torch.ones(64, 64, device="cuda")
    torch.mm(a, a)
    torch.cuda.synchronize()


class ThreadWatch:
    """Thread counts against a baseline: more threads than at the baseline is `spawned_threads`."""

    def __init__(self) -> None:
        self.before = thread_counts()
        self.after = self.before

    def reset(self) -> None:
        """Takes the baseline now."""
        self.before = thread_counts()
        self.after = self.before

    def grew(self) -> bool:
        (py_before, os_before), (py_after, os_after) = self.before, self.after
        return py_after > py_before or os_after > os_before

    def check(self, what: str) -> None:
        """Counts again; raises JobError("spawned_threads") when either count grew.

        A thread that was joined has left Python's count, but the OS can list it for a moment while it
        exits, so an OS count that grew alone is read again for up to THREAD_SETTLE_SECONDS. (Deferred
        work that ends within that moment is caught by the output checks instead.)
        """
        self.after = thread_counts()
        deadline = time.monotonic() + THREAD_SETTLE_SECONDS
        while self.grew() and self.after[0] <= self.before[0] and time.monotonic() < deadline:
            time.sleep(0.002)
            self.after = thread_counts()
        if self.grew():
            (py_before, os_before), (py_after, os_after) = self.before, self.after
            raise JobError("spawned_threads",
                           f"{what}: the candidate's forward left threads running ({py_before} -> "
                           f"{py_after} Python threads, {os_before} -> {os_after} OS threads); "
                           f"all work must be done when the forward returns")

    def to_dict(self) -> dict[str, Any]:
        return {"threads_before": {"python": self.before[0], "os": self.before[1]},
                "threads_after": {"python": self.after[0], "os": self.after[1]}}
