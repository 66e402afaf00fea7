"""The `task_check` job (trusted: task code only): which trivial answers would pass each task.

Spec, trivial answers, progress records and restarts: docs/harness-protocol.md, "`task_check`".
"""

from __future__ import annotations

import faulthandler
import gc
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ..comparison import CHUNK_ELEMENTS, Floors, Tolerance, compare
from ..errors import JobError, describe, one_line, phase, traceback_tail
from ..models import construct, synchronize
from ..nested import as_arg_list, map_tensors, named_tensors, signature, to_device
from ..noise import NoiseProbe
from ..precision import apply_backend_flags
from ..spec import json_safe, require, require_device
from ..task_module import import_task

MAX_INPUTS_TRIED = 4  # tensor inputs tried one by one as the `input` answer
OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


class Progress:
    """The JSONL progress file: finished tasks already in it, and appending new lines as they come."""

    def __init__(self, path: str):
        self.path = path
        self.finished: set[str] = set()
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for line in text.splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a crash
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    self.finished.add(entry["name"])
            ends_cleanly = not text or text.endswith("\n")
        else:
            ends_cleanly = True
        self.file = open(path, "a", encoding="utf-8")
        if not ends_cleanly:
            self.file.write("\n")  # never glue a new line onto a cut one

    def append(self, entry: dict[str, Any]) -> None:
        self.file.write(json.dumps(json_safe(entry), allow_nan=False) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())


def moments(t: torch.Tensor) -> tuple[float, float]:
    """Mean and standard deviation of the finite elements of a real tensor (0, 0 when none)."""
    flat = t.detach().reshape(-1)

    def finite_chunks() -> Iterator[torch.Tensor]:
        for start in range(0, flat.numel(), CHUNK_ELEMENTS):
            c = flat[start:start + CHUNK_ELEMENTS].to(torch.float64)
            yield c[torch.isfinite(c)]

    count, total = 0, 0.0
    for c in finite_chunks():
        count += c.numel()
        total += float(c.sum().item())
    if count == 0:
        return 0.0, 0.0
    mean = total / count
    spread = sum(float(((c - mean) ** 2).sum().item()) for c in finite_chunks())
    return mean, math.sqrt(spread / count)


def _real_answer(e: torch.Tensor, make: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """`make` applied to a real view: complex tensors as (real, imag) pairs, integers through float64."""
    if e.is_complex():
        return torch.view_as_complex(make(torch.view_as_real(e.resolve_conj())).contiguous())
    if e.is_floating_point():
        return make(e)
    values = make(e.to(torch.float64))
    if e.dtype == torch.bool:
        return values >= 0.5
    info = torch.iinfo(e.dtype)
    return values.round().clamp(info.min, info.max).to(e.dtype)


def constant_like(e: torch.Tensor) -> torch.Tensor:
    return _real_answer(e, lambda r: torch.full_like(r, moments(r)[0]))


def noise_like(e: torch.Tensor) -> torch.Tensor:
    def make(r: torch.Tensor) -> torch.Tensor:
        mean, std = moments(r)
        return torch.randn_like(r) * std + mean
    return _real_answer(e, make)


def output_leaves(output: Any) -> list[torch.Tensor]:
    return [t for _, t in named_tensors(output, "output")]


def input_answers(output: Any, inputs: list[Any]) -> list[tuple[str, Any]]:
    """(input name, answer) pairs for the `input` answer; empty when some output tensor has no match."""
    named = named_tensors(inputs, "input")

    def matches(leaf: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
        return [(n, t) for n, t in named if t.shape == leaf.shape and t.dtype == leaf.dtype]

    if isinstance(output, torch.Tensor):
        return [(n, t) for n, t in matches(output)[:MAX_INPUTS_TRIED]]
    leaves = output_leaves(output)
    if not leaves or any(not matches(leaf) for leaf in leaves):
        return []
    chosen: list[str] = []

    def first_match(leaf: torch.Tensor) -> torch.Tensor:
        name, t = matches(leaf)[0]
        chosen.append(name)
        return t

    answer = map_tensors(output, first_match)
    return [(", ".join(chosen), answer)]


def fingerprint(inputs: list[Any]) -> list[Any]:
    """Per input tensor: shape, dtype and (sum, sum of squares) in float64; other values as text."""
    prints = []
    for name, t in named_tensors(inputs, "input"):
        if t.is_complex():
            t = torch.view_as_real(t)
        flat = t.detach().reshape(-1)
        s = q = 0.0
        for start in range(0, flat.numel(), CHUNK_ELEMENTS):
            c = flat[start:start + CHUNK_ELEMENTS].to(torch.float64)
            s += float(torch.nan_to_num(c).sum().item())
            q += float(torch.nan_to_num(c * c).sum().item())
        prints.append((name, tuple(t.shape), str(t.dtype), s, q))
    return prints


def no_looser(tight: Tolerance, loose: Tolerance) -> bool:
    """True when `loose` accepts every answer `tight` accepts: the same mode and no bound of `tight`
    above the one of `loose`, for every dtype (the comparison is monotone in atol, rtol and rnorm)."""
    if tight.mode != loose.mode:
        return False
    for name in set(tight.limits) | set(loose.limits):
        a = tight.limits.get(name, tight.limits["default"])
        b = loose.limits.get(name, loose.limits["default"])
        if a.atol > b.atol or a.rtol > b.rtol:
            return False
        if b.rnorm is not None and (a.rnorm is None or a.rnorm > b.rnorm):
            return False
    return True


class TaskChecker:
    """Checks one task after another in this process."""

    def __init__(self, device: str, tolerances: dict[str, Tolerance], seed: int, backend_flags: Any):
        self.device = device
        self.tolerances = tolerances
        self.seed = seed
        self.backend_flags = backend_flags
        # looser[p]: the other policies that accept whatever p accepts. Comparisons of large outputs
        # dominate the job's time, so a result is carried over instead of compared again: a pass to
        # the looser policies, a failure to the tighter ones.
        self.looser = {p: [q for q in tolerances if q != p and no_looser(tolerances[p], tolerances[q])]
                       for p in tolerances}

    def judge(self, expected: Any, answer: Any, floors: Floors | None = None) -> dict[str, Any]:
        """{"pass": {policy: bool}, "rel_norm_err": float} of one answer; `floors`: the reference's
        noise floors of `expected` (noise.py), which the scaled policies apply as the judge does."""
        passes: dict[str, bool] = {}
        rel_norm = None
        while len(passes) < len(self.tolerances):
            # Loosest first: most trivial answers fail, and then the tighter policies need no comparison.
            policy = next(p for p in self.tolerances if p not in passes and not any(
                q not in passes and p not in self.looser[q] for q in self.looser[p]))
            report = compare(expected, answer, self.tolerances[policy], floors=floors)
            passes[policy] = report.ok
            if rel_norm is None:
                rel_norm = report.rel_norm_err
            for other in self.tolerances:
                implied = other in self.looser[policy] if report.ok else policy in self.looser[other]
                if implied and other not in passes:
                    passes[other] = report.ok
        return {"pass": {p: passes[p] for p in self.tolerances}, "rel_norm_err": rel_norm}

    def make_inputs(self, task: Any, seed: int, what: str) -> list[Any]:
        """get_inputs() seeded; on CUDA created on the device directly (CPU + copy if that raises)."""
        torch.manual_seed(seed)
        if self.device == "cuda":
            try:
                with torch.device("cuda"):
                    made: list[Any] = to_device(as_arg_list(task.get_inputs()), "cuda")
                    return made
            except Exception:  # noqa: BLE001 - some tasks only work with CPU defaults
                torch.manual_seed(seed)
        with phase("task", f"get_inputs() ({what})"):
            made = to_device(as_arg_list(task.get_inputs()), self.device)
        return made

    def build_model(self, task: Any, init_inputs: list[Any]) -> torch.nn.Module:
        """Model(*init_inputs) with the weights created on the device where that works."""
        torch.manual_seed(self.seed)
        if self.device == "cuda":
            try:
                with torch.device("cuda"):
                    return construct(task.Model, init_inputs, "cuda", "task")
            except JobError:
                torch.manual_seed(self.seed)
        return construct(task.Model, init_inputs, self.device, "task")

    def forward(self, model: Any, inputs: list[Any], what: str) -> Any:
        with phase("task", f"Model.forward ({what})"):
            with torch.no_grad():
                output = model(*inputs)
            synchronize(self.device)
            return output

    def check(self, path: str, record: dict[str, Any]) -> None:
        """Fills `record` for the task at `path`; raises JobError when the task cannot run."""
        apply_backend_flags(self.backend_flags)
        torch.set_default_dtype(torch.float32)
        task = import_task(path)
        try:
            self.check_task(task, record)
        finally:
            sys.modules.pop(task.__name__, None)  # nothing of a finished task stays reachable

    def check_task(self, task: Any, record: dict[str, Any]) -> None:
        """Model, input sets A and B, the expected outputs, then every trivial answer and policy."""
        with phase("task", "get_init_inputs()"):
            torch.manual_seed(self.seed)
            init_inputs = as_arg_list(task.get_init_inputs())
        model = self.build_model(task, init_inputs)
        seed_a, seed_b = self.seed + 1, self.seed + 2
        inputs = self.make_inputs(task, seed_a, "input set A")
        print_a = fingerprint(inputs)
        expected = self.forward(model, inputs, "input set A")
        record["output_signature"] = signature(expected)
        # The noise floors the judge's reference would measure (scaled policies only), so that a
        # trivial answer passes here exactly where it would pass the judge.
        floors: Floors = {}
        if any(t.mode == "scaled" for t in self.tolerances.values()):
            floors = NoiseProbe(model).floors(inputs, expected)
        if floors:
            record["noise_floors"] = floors
        answers: dict[str, Any] = {}
        record["answers"] = answers
        if not output_leaves(expected):
            record["note"] = "the output holds no tensor: no trivial answer applies"
            return
        with phase("internal", "comparing trivial answers"):
            answers["zeros"] = self.judge(expected, map_tensors(expected, torch.zeros_like), floors)
            answers["constant"] = answers["noise"] = None
            if any(leaf.numel() > 1 for leaf in output_leaves(expected)):
                answers["constant"] = self.judge(expected, map_tensors(expected, constant_like), floors)
                torch.manual_seed(self.seed + 3)
                answers["noise"] = self.judge(expected, map_tensors(expected, noise_like), floors)
        answers["input"] = None
        if input_answers(expected, inputs):
            # The forward may have changed its inputs in place: the answer is the input as made.
            del inputs
            inputs = self.make_inputs(task, seed_a, "input set A again")
            with phase("internal", "comparing the input as the answer"):
                for name, answer in input_answers(expected, inputs):
                    entry = self.judge(expected, answer, floors)
                    entry["input"] = name
                    best = answers["input"]
                    if best is None or sum(entry["pass"].values()) > sum(best["pass"].values()):
                        answers["input"] = entry
        del inputs
        inputs_b = self.make_inputs(task, seed_b, "input set B")
        record["inputs_vary"] = fingerprint(inputs_b) != print_a
        expected_b = self.forward(model, inputs_b, "input set B")
        del inputs_b
        with phase("internal", "comparing the outputs of input sets A and B"):
            answers["independent"] = self.judge(expected, expected_b, floors)


def release(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def cuda_usable() -> bool:
    """False when the CUDA context is broken (a device-side error poisons every later call)."""
    try:
        torch.cuda.synchronize()
        probe = torch.ones(1, device="cuda") + 1
        return float(probe.item()) == 2.0
    except Exception:  # noqa: BLE001
        return False


def tolerances_of(spec: dict[str, Any]) -> dict[str, Tolerance]:
    raw = require(spec, "tolerances", dict)
    if not raw:
        raise JobError("internal", "spec: tolerances must name at least one policy")
    try:
        return {name: Tolerance.from_spec(t) for name, t in raw.items()}
    except (ValueError, AttributeError) as exc:
        raise JobError("internal", f"spec: tolerances: {exc}") from exc


def task_list(spec: dict[str, Any]) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = require(spec, "tasks", list)
    for t in tasks:
        if not isinstance(t, dict) or not all(isinstance(t.get(k), str) for k in ("name", "path")):
            raise JobError("internal", f"spec: each task needs a name and a path, not {t!r}")
    return tasks


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    device = require_device(spec)
    tasks = task_list(spec)
    tolerances = tolerances_of(spec)
    seed = require(spec, "seed", int, default=1234)
    timeout = require(spec, "task_timeout_s", (int, float), default=0)
    backend_flags = spec.get("backend_flags")
    result["backend_flags"] = apply_backend_flags(backend_flags)
    result.update({"torch_version": torch.__version__, "tasks_checked": 0, "tasks_skipped": 0})
    if device == "cuda" and not torch.cuda.is_available():
        raise JobError("internal", "device cuda requested but torch sees no CUDA device")
    progress = Progress(require(spec, "progress_path", str))
    checker = TaskChecker(device, tolerances, seed, backend_flags)
    for entry in tasks:
        name = entry["name"]
        if name in progress.finished:
            result["tasks_skipped"] += 1
            continue
        progress.append({"started": name})
        record = {"name": name, "id": entry.get("id"), "ok": True, "error_kind": None, "reason": ""}
        start = time.perf_counter()
        if timeout > 0:
            faulthandler.dump_traceback_later(timeout, exit=True, file=sys.stderr)
        try:
            checker.check(entry["path"], record)
        except BaseException as exc:  # noqa: BLE001 - one task's failure never ends the job
            kind = exc.kind if isinstance(exc, JobError) else "internal"
            reason = exc.reason if isinstance(exc, JobError) else f"harness error: {describe(exc)}"
            cause = exc.__cause__ if isinstance(exc, JobError) else exc
            if isinstance(cause, OUT_OF_MEMORY):
                kind = "oom"
            record.update({"ok": False, "error_kind": kind, "reason": one_line(reason),
                           "traceback": traceback_tail(cause, 12)})
            del cause  # its traceback holds the task's frames and their tensors
        finally:
            if timeout > 0:
                faulthandler.cancel_dump_traceback_later()
        record["seconds"] = time.perf_counter() - start
        release(device)
        if not record["ok"] and device == "cuda" and not cuda_usable():
            record["reason"] += " (the CUDA context is no longer usable)"
            progress.append(record)
            raise JobError("restart", f"{name}: the CUDA context is no longer usable; "
                                      f"the remaining tasks need a new process")
        progress.append(record)
        result["tasks_checked"] += 1
