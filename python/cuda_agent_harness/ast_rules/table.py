"""The rule table of model_new.py's static rules (name, rationale, what matches) and the Violation they
report; docs/static-rules.md lists the same rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
         "(torch.cuda.synchronize = lambda: None) or flips global flags (allow_tf32) (A4, A8, B11); "
         "assigning to a function of cuda_extension replaces the custom op with anything (C1).",
         "assignment, augmented assignment or del on an attribute of an imported module or a name bound "
         "to a torch object; on an attribute of cuda_extension through any name or attribute holding it "
         "(self.ext.f = torch.relu)"),
    Rule("torch_functional",
         "torch.nn.functional is the reference's compute (C1).",
         "any use of torch.nn.functional (F.relu, nn.functional.gelu, g = F.relu); an unused import of it "
         "is fine"),
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
         "module-level or self containers, also through a local name bound to one; id()/hash()"),
    Rule("torch_compute",
         "Outside __init__, torch may only create tensors and describe them; everything else is the "
         "reference's compute (C1).",
         "a torch.* call or reference outside the allowlist (torch.empty/empty_like/empty_strided, "
         "zeros*, ones*, full*, Size, device, finfo/iinfo, dtypes, no_grad, torch.cuda.current_stream; "
         "torch.nn classes referred to but not called, as in isinstance(m, nn.Conv2d)); torch itself "
         "passed as a value"),
    Rule("tensor_compute",
         "Tensor methods and operators run torch kernels (C1).",
         "on a tensor: arithmetic, comparisons, truth tests, in-place writes, indexing with tensors or "
         "lists, formatting, builtins other than len/isinstance/type, and methods other than metadata "
         "(size, dim, numel, stride, is_contiguous, data_ptr ...), views (view, unsqueeze, squeeze, "
         "transpose, permute, narrow, select, chunk, split, unbind, detach ...) and data movement "
         "(contiguous(), cuda(), to(device) with x.device, \"cuda\" or torch.device(\"cuda\"), "
         "dst.copy_(src) into a local tensor that is not an input); "
         "precision changes (to(dtype), half(), float() ...) and moves to the host"),
    Rule("nn_module_call",
         "Calling a torch.nn layer runs torch's implementation; declare it in __init__ for the state_dict "
         "and pass its .weight/.bias to your kernel (C1).",
         "calling a submodule that is not a class of this file, or its forward"),
    Rule("unknown_call",
         "Outside __init__ only cuda_extension (also through an alias: ext = cuda_extension, "
         "self.ext = cuda_extension, self.f = cuda_extension.f), tensor creation, metadata and functions "
         "of this file may be called.",
         "a call of anything else"),
    Rule("backend_switch",
         "Only under a policy that lets torch compute (kernelbench): torch's backend switches make torch's "
         "kernels faster or less precise than the reference's (TF32, cudnn.benchmark, autocast) (B11).",
         "any use of torch.backends, torch.autocast, torch.amp, torch.cuda.amp, torch.set_autocast_*"),
    Rule("no_custom_kernel",
         "Only under a policy that lets torch compute (kernelbench): a candidate must do part of the work "
         "in its own kernel; one that never calls cuda_extension is just torch (C1).",
         "model_new.py with no call of cuda_extension (through any alias) anywhere"),
    Rule("unanalysable",
         "A file the rules cannot analyse (too large, nested too deeply) is rejected rather than trusted.",
         "model_new.py larger than 256 KiB, or one the checker cannot walk"),
)

RULES_BY_NAME = {rule.name: rule for rule in RULES}
RULE_ORDER = {rule.name: index for index, rule in enumerate(RULES)}


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int
    message: str
    file: str = FILE_NAME

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "file": self.file, "line": self.line, "message": self.message}

    def reason(self) -> str:
        return f"{self.rule}: {self.file}:{self.line}: {self.message}"

# One line per rule that a torch path or an import can break, appended to the message.
RULE_HINTS = {
    "torch_functional": "torch.nn.functional is the reference's compute; write a kernel",
    "torch_compiler": "generated kernels are not the candidate's",
    "torch_ops": "a back door to ATen kernels or to compiling code at run time",
    "host_thread": "work would run outside the call; do it inside forward, through cuda_extension",
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
