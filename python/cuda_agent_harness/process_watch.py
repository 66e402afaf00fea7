"""What candidate code must leave as it found it in its process, checked at run time after each piece of it
ran (import and construction, every forward): the run-time side of static rules that a scanner can miss
(macros, code generated at build time, state behind a handle), so that a hack the static rules do not
see is still caught (docs/hacks.md, "Defence in depth").

- Compilers (C1; static rule torch_compiler): `torch._dynamo`, `torch._inductor` or `triton` loaded by
  candidate code is `"forbidden_op"`.
- Patched callables (HACKS A4; static rules torch_patching, timer_patching, python_api): the functions
  and classes the harness measures and checks with — `time`, `os`, `threading`, `builtins`, `torch`,
  `torch.cuda`, the profilers, the dispatch-mode machinery, `torch.Tensor`, `nn.Module`, CUDA events and
  streams, and every module of this harness — are pinned (the objects themselves, their `__code__` and
  `__defaults__`, and the whole `__dict__` of the pinned classes) before candidate code is imported. One
  replaced, deleted or rewritten afterwards, from Python or from C++ through pybind11, is `"patching"`.
- Process-wide settings (A8, B5; static rule global_flags): torch's intra- and inter-op thread counts
  and the initial seed of the default generators (changed only by `manual_seed`/`seed`). A change is
  `"global_flags"`.
- Processes (D; static rules process_escape): a process the candidate's code started — ended and reaped
  (the kernel's resource usage of reaped children grew) or still running (a new entry in this
  process's `/proc/self/task/*/children`) — is `"process_escape"`.
- Threads (A2; static rule host_thread): during a forward, starting a thread through `threading` or
  `_thread` raises and is remembered (`"spawned_threads"`), even when the candidate catches the
  exception; a Python thread left running after loading or a forward fails too. A native thread
  (`std::thread`, `pthread_create`) that a forward creates is seen through the pid namespace's last
  pid (`/proc/sys/kernel/ns_last_pid`), which counts every thread created in it: in the sandbox the
  job is alone in its namespace with the sandbox's init, so the counter moving during a forward means
  the forward started a thread — even one that ended before the forward returned, which
  `guards.ThreadWatch` (counts after the forward) cannot see. Counted only where the job is alone in
  its namespace (not without the sandbox) and on the CPU: on CUDA the profiler and the libraries may
  start threads of their own inside a call (the jobs pass count_created_threads=False there).

    watch = ProcessWatch(device)          # before model_new is imported
    model = build_candidate(...)
    watch.check("loading ModelNew")
    watch.reset()                         # after the harness's own seeding, right before a forward
    with watch.no_thread_starts("check 0"):
        output = model(*inputs)
    watch.check("check 0")
"""

from __future__ import annotations

import _thread
import contextlib
import os
import resource
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .errors import JobError

HARNESS_PACKAGE = "cuda_agent_harness"
# Modules whose callables are pinned (those loaded when the watch starts; a module loaded later was
# never the harness's).
PINNED_MODULES = ("builtins", "time", "os", "threading", "_thread", "gc", "torch", "torch.cuda",
                  "torch.cuda.streams", "torch.autograd", "torch.autograd.profiler", "torch.profiler",
                  "torch.utils._python_dispatch", "torch.serialization")
# Classes whose whole __dict__ is pinned: a method added to one shadows a base class's.
PINNED_CLASSES = ("torch.Tensor", "torch.nn.Module", "torch.cuda.Event", "torch.cuda.Stream",
                  "torch.utils._python_dispatch.TorchDispatchMode", "threading.Thread")
# Compilers that generate kernels instead of the candidate (static rule torch_compiler): imported by
# candidate code, they are refused by name (importing torch._dynamo also re-wraps torch functions,
# which the pins would report as patching).
COMPILER_MODULES = ("torch._dynamo", "torch._inductor", "triton")
# Class attributes Python itself caches on first use (copyreg's, when torch.save pickles a tensor).
CLASS_CACHES = frozenset({"__slotnames__"})
MAX_NAMES_SHOWN = 4
THREAD_STARTERS = (("threading.Thread.start", threading.Thread, "start"),
                   ("_thread.start_new_thread", _thread, "start_new_thread"),
                   ("_thread.start_new", _thread, "start_new"),
                   ("_thread.start_joinable_thread", _thread, "start_joinable_thread"),
                   ("threading._start_new_thread", threading, "_start_new_thread"),
                   ("threading._start_joinable_thread", threading, "_start_joinable_thread"))


def _resolve(dotted: str) -> Any:
    """The class named "module.Class" when its module is loaded, else None."""
    module_name, _, attr = dotted.rpartition(".")
    module = sys.modules.get(module_name)
    return vars(module).get(attr) if module is not None else None


class Pins:
    """The pinned callables and classes (see the module docstring)."""

    def __init__(self) -> None:
        self.modules: dict[str, Any] = {}              # name -> the module object in sys.modules
        self.entries: dict[str, dict[str, Any]] = {}   # module name -> {attr: the callable}
        self.classes: dict[str, tuple[type, dict[str, Any]]] = {}  # "module.Class" -> (class, copy of its __dict__)
        self.code: list[tuple[str, Any, Any, Any]] = []  # (name, function, its __code__, its __defaults__)
        names = list(PINNED_MODULES) + sorted(n for n in sys.modules
                                              if n == HARNESS_PACKAGE or n.startswith(HARNESS_PACKAGE + "."))
        for name in names:
            module = sys.modules.get(name)
            if module is None:
                continue
            self.modules[name] = module
            pinned = {attr: value for attr, value in vars(module).items() if callable(value)}
            self.entries[name] = pinned
            for attr, value in pinned.items():
                self._pin_code(f"{name}.{attr}", value)
                if isinstance(value, type) and name.startswith(HARNESS_PACKAGE) and \
                        getattr(value, "__module__", "") == name:
                    self._pin_class(f"{name}.{attr}", value)
        for dotted in PINNED_CLASSES:
            cls = _resolve(dotted)
            if isinstance(cls, type):
                self._pin_class(dotted, cls)

    def _pin_code(self, name: str, value: Any) -> None:
        code = getattr(value, "__code__", None)
        if code is not None:
            self.code.append((name, value, code, getattr(value, "__defaults__", None)))

    def _pin_class(self, name: str, cls: type) -> None:
        members = dict(vars(cls))
        self.classes[name] = (cls, members)
        for key, value in members.items():
            target = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            self._pin_code(f"{name}.{key}", target)

    def changed(self) -> list[str]:
        """What differs from the pins: "time.perf_counter", "torch.Tensor.add (added)", ..."""
        found = []
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules['{name}']")
            now = vars(module)
            for attr, value in self.entries[name].items():
                current = now.get(attr)
                if current is not value:
                    found.append(f"{name}.{attr}" + (" (deleted)" if current is None else ""))
        for name, (cls, pinned) in self.classes.items():
            current = vars(cls)
            if current.keys() != pinned.keys():
                found += [f"{name}.{key} (deleted)" for key in pinned.keys() - current.keys()]
                found += [f"{name}.{key} (added)" for key in current.keys() - pinned.keys() - CLASS_CACHES]
            for key, value in pinned.items():
                if key in current and current[key] is not value:
                    found.append(f"{name}.{key}")
        for name, function, code, defaults in self.code:
            if function.__code__ is not code or getattr(function, "__defaults__", None) is not defaults:
                found.append(f"{name} (its code)")
        return sorted(set(found))


NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"
# What the watch itself calls, taken when this module is imported (before any candidate code).
_active_count = threading.active_count
_listdir = os.listdir
_getrusage = resource.getrusage
_getppid = os.getppid
_getpid = os.getpid


def _alone_in_pid_namespace() -> bool:
    """Whether this process's pid namespace holds only it and the sandbox's init (its parent, pid 1):
    then the namespace's last pid counts every thread and process this one creates."""
    try:
        pids = {int(p) for p in _listdir("/proc") if p.isdigit()}
    except OSError:
        return False
    return _getppid() == 1 and pids <= {1, _getpid()}


def _last_pid() -> int | None:
    """The last thread or process id handed out in this pid namespace (None: unreadable)."""
    try:
        with open(NS_LAST_PID) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _child_usage() -> tuple[Any, ...]:
    """Resource usage of this process's reaped children: grows with every child that ended."""
    u = _getrusage(resource.RUSAGE_CHILDREN)
    return (u.ru_utime, u.ru_stime, u.ru_maxrss, u.ru_minflt, u.ru_majflt, u.ru_nvcsw, u.ru_nivcsw)


def _live_children() -> set[int]:
    """Pids of this process's running children (every thread's /proc children list; empty when the
    kernel has no such file)."""
    pids: set[int] = set()
    try:
        tasks = _listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return pids


class ProcessWatch:
    """Pins taken at construction (before candidate code is imported); settings, seeds and children
    compared with the baseline taken by reset() (at construction too)."""

    def __init__(self, device: str, count_created_threads: bool = True):
        self.device = device
        self.pins = Pins()
        self.thread_violation: str | None = None
        self.compilers_loaded = {name for name in COMPILER_MODULES if name in sys.modules}
        # Threads created and ended within a forward leave no other trace than the pid namespace's
        # counter, which is only ours in the sandbox's own namespace (not under CUDA_AGENT_SANDBOX=none).
        self.count_created = count_created_threads and _alone_in_pid_namespace() and _last_pid() is not None
        self.reset()

    def settings(self) -> dict[str, Any]:
        found = {"torch.get_num_threads()": torch.get_num_threads(),
                 "torch.get_num_interop_threads()": torch.get_num_interop_threads(),
                 "torch.initial_seed()": torch.initial_seed()}
        if self.device == "cuda" and torch.cuda.is_initialized():
            found["torch.cuda.initial_seed()"] = torch.cuda.initial_seed()
        return found

    def reset(self) -> None:
        """Takes the baseline of settings and children now (the harness seeds its own inputs between
        forwards; candidate code must not)."""
        self.before = self.settings()
        self.usage = _child_usage()
        self.children = _live_children()
        self.python_threads = _active_count()
        self.last_pid = _last_pid() if self.count_created else None

    def check(self, what: str, created_threads: bool = True) -> None:
        """Raises JobError for the first thing candidate code changed since reset() (pins: since the
        watch began). With `created_threads` (a forward: no lazy start-up of torch or CUDA belongs
        there), a thread created since reset() fails too, even one that has ended."""
        compilers = [n for n in COMPILER_MODULES if n in sys.modules and n not in self.compilers_loaded]
        if compilers:
            raise JobError("forbidden_op", f"{what}: the candidate's code loaded {compilers[0]} (torch.compile "
                                           f"or the JIT: kernels generated by torch are not the candidate's)")
        patched = self.pins.changed()  # with anything replaced, no other answer can be trusted
        if patched:
            shown = ", ".join(patched[:MAX_NAMES_SHOWN])
            more = f" and {len(patched) - MAX_NAMES_SHOWN} more" if len(patched) > MAX_NAMES_SHOWN else ""
            raise JobError("patching", f"{what}: the candidate's code replaced {shown}{more} (torch, time, "
                                       f"builtins and the harness must be left as they are)")
        if self.thread_violation is not None:
            raise JobError("spawned_threads", f"{what}: {self.thread_violation}")
        if _active_count() > self.python_threads:
            raise JobError("spawned_threads", f"{what}: the candidate's code left a Python thread running "
                                              f"({self.python_threads} -> {_active_count()})")
        after = self.settings()
        changed = [f"{k}: {self.before[k]} -> {after.get(k)}" for k in self.before if after.get(k) != self.before[k]]
        if changed:
            raise JobError("global_flags", f"{what}: the candidate changed process-wide settings "
                                           f"({'; '.join(changed)}): thread counts and seeds are the judge's")
        started = sorted(_live_children() - self.children)
        if started:
            raise JobError("process_escape", f"{what}: the candidate's code started a process (pid "
                                             f"{started[0]} still running); a model runs no processes")
        if _child_usage() != self.usage:
            raise JobError("process_escape", f"{what}: the candidate's code started a process (one ended "
                                             f"meanwhile); a model runs no processes")
        if created_threads and self.last_pid is not None:
            now = _last_pid()
            if now is not None and now != self.last_pid:
                raise JobError("spawned_threads", f"{what}: the candidate's code started {now - self.last_pid} "
                                                  f"thread(s) (ended or not); all work must be done inside the "
                                                  f"forward, on its caller's thread")

    @contextlib.contextmanager
    def no_thread_starts(self, what: str) -> Iterator[None]:
        """Starting a Python thread inside raises, and is remembered for check() (a candidate that
        catches the exception still fails)."""
        originals = []
        for name, owner, attr in THREAD_STARTERS:
            original = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
            if original is None:
                continue
            originals.append((owner, attr, original))
            setattr(owner, attr, self._refuser(name, what))
        try:
            yield
        except BaseException as exc:
            if self.thread_violation is not None:  # the refusal wins over the exception it caused
                raise JobError("spawned_threads", f"{what}: {self.thread_violation}") from exc
            raise
        finally:
            for owner, attr, original in originals:
                setattr(owner, attr, original)

    def _refuser(self, name: str, what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            if self.thread_violation is None:
                self.thread_violation = (f"the candidate's code started a thread ({name}); all work must "
                                         f"be done inside the forward, on its caller's thread")
            raise RuntimeError(f"{name} is not allowed in ModelNew's forward")

        return refused
