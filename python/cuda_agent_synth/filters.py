"""The filters of `cuda-agent synth`: named stages a candidate program must pass, cheapest first.

Each stage returns None (kept), or a reason (dropped); `skip` stages log "skipped". Definitions
(docs/synth.md):

- parse: the code parses and defines Model, get_inputs and get_init_inputs at the top level.
- stochastic_static: Model's code names no op the catalog found stochastic (Dropout, rrelu, ...) and its
  methods other than __init__ call no random function (rand*, bernoulli, multinomial, normal, ...).
- contamination: AST similarity (similarity.py) to every task of the evaluation suite <= threshold.
- dedup: no kept task with the same ops in the same order has similarity >= the dedup threshold.
- eager: the program imports, Model(*get_init_inputs()) builds (in eval mode, as the judge builds it),
  the forward runs and its output holds tensors, all finite.
- stochastic: two forwards under the same seed give identical outputs, and a forward under another seed
  gives the same output again (randomness at call time).
- trivial: none of the judge's trivial answers passes the comparison under the judge's tolerance:
  zeros, a constant, mean/std noise, the input itself, the output of another input set (the output does
  not depend on the input) — the answers of the `task_check` job.
- runtime: the median eager forward time is inside [min_ms, max_ms].
- compile: torch.compile(model, fullgraph=True) runs and its output matches the eager one under the
  judge's tolerance (skipped unless enabled: by default only on CUDA).
"""

from __future__ import annotations

import ast
import contextlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from cuda_agent_harness.comparison import Tolerance, compare
from cuda_agent_harness.errors import JobError, one_line
from cuda_agent_harness.jobs.task_check import TaskChecker, output_leaves
from cuda_agent_harness.models import construct, synchronize
from cuda_agent_harness.nested import as_arg_list, to_device
from cuda_agent_harness.task_module import import_task

from .catalog import identical
from .similarity import Corpus, tokens

STAGES = ("parse", "stochastic_static", "contamination", "dedup", "eager", "stochastic", "trivial",
          "runtime", "compile")

RANDOM_CALLS = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                "bernoulli", "bernoulli_", "multinomial", "normal", "normal_", "uniform_", "poisson",
                "exponential_", "geometric_", "cauchy_", "log_normal_", "random_"}
TRIVIAL_ANSWERS = ("zeros", "constant", "noise", "input", "independent")
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


@dataclass
class FilterConfig:
    device: str = "cpu"
    tolerance: Tolerance = field(default_factory=lambda: Tolerance.from_spec(
        {"mode": "fixed", "limits": {"default": {"atol": 1e-2, "rtol": 1e-2}}}))
    stochastic_names: set = field(default_factory=set)  # from the catalog
    contamination_threshold: float = 0.9
    dedup_threshold: float = 0.95
    min_ms: float = 0.1
    max_ms: float = 100.0
    compile_check: bool = False
    compile_backend: str = "inductor"
    seed: int = 1234
    timing_runs: int = 10
    # Held around every timed measurement when candidates are filtered in parallel on one device, so
    # that the runtime window sees one program at a time (multiprocessing.Lock; None: no other).
    timing_lock: Any = None


@dataclass
class Candidate:
    code: str
    ops: list
    path: str  # where the code is written for import
    log: dict = field(default_factory=dict)  # stage -> "pass" | "skipped" | reason
    eager_ms: float | None = None
    compile_ms: float | None = None
    similarity: float | None = None
    tokens: list = field(default_factory=list)


def check_parse(c: Candidate) -> str | None:
    try:
        tree = ast.parse(c.code)
    except SyntaxError as exc:
        return f"does not parse: {exc.msg} (line {exc.lineno})"
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in REQUIRED if n not in defined]
    if missing:
        return "defines no " + ", ".join(missing)
    c.tokens = tokens(c.code)
    return None


def check_stochastic_static(c: Candidate, cfg: FilterConfig) -> str | None:
    tree = ast.parse(c.code)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    for method in model.body:
        for node in ast.walk(method):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name is None:
                continue
            if name in cfg.stochastic_names:
                return f"uses {name}, a stochastic op (op catalog)"
            in_forward = isinstance(method, ast.FunctionDef) and method.name != "__init__"
            if in_forward and name in RANDOM_CALLS and isinstance(method, ast.FunctionDef):
                return f"calls {name} in {method.name}(): random at call time"
    return None


def check_contamination(c: Candidate, cfg: FilterConfig, suite: Corpus) -> str | None:
    score, name = suite.max_similarity(c.tokens, cfg.contamination_threshold)
    c.similarity = round(score, 4)
    if score > cfg.contamination_threshold:
        return f"AST similarity {score:.3f} to {name} (> {cfg.contamination_threshold})"
    return None


def check_dedup(c: Candidate, cfg: FilterConfig, kept: dict) -> str | None:
    same_ops: Corpus | None = kept.get(tuple(c.ops))
    if same_ops is None:
        return None
    score, name = same_ops.max_similarity(c.tokens, cfg.dedup_threshold - 1e-9)
    if score >= cfg.dedup_threshold:
        return f"near-duplicate of kept task {name} (same ops, AST similarity {score:.3f})"
    return None


class Runner:
    """The dynamic stages of one candidate: imports it once and keeps the model and inputs."""

    def __init__(self, c: Candidate, cfg: FilterConfig):
        self.c, self.cfg = c, cfg
        self.task: Any = None
        self.model: Any = None
        self.inputs: list = []
        self.expected: Any = None

    def forward(self, model: Any, seed: int | None = None) -> Any:
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            out = model(*self.inputs)
        synchronize(self.cfg.device)
        return out

    def eager(self) -> str | None:
        try:
            self.task = import_task(self.c.path)
            torch.manual_seed(self.cfg.seed)
            init = as_arg_list(self.task.get_init_inputs())
            self.model = construct(self.task.Model, init, self.cfg.device, "task")
            torch.manual_seed(self.cfg.seed + 1)
            self.inputs = to_device(as_arg_list(self.task.get_inputs()), self.cfg.device)
            self.expected = self.forward(self.model, self.cfg.seed)
        except JobError as exc:
            return "does not run: " + one_line(exc.reason, 200)
        except Exception as exc:  # noqa: BLE001 - any failure drops the candidate
            return "does not run: " + one_line(f"{type(exc).__name__}: {exc}", 200)
        leaves = output_leaves(self.expected)
        if not leaves:
            return "the output holds no tensor"
        if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in leaves):
            return "the output is not finite (nan or inf)"
        return None

    def stochastic(self) -> str | None:
        again = self.forward(self.model, self.cfg.seed)
        if not _same(self.expected, again):
            return "two runs with the same seed give different outputs"
        other = self.forward(self.model, self.cfg.seed + 7)
        if not _same(self.expected, other):
            return "the output depends on the random seed at call time (stochastic)"
        return None

    def trivial(self) -> str | None:
        checker = TaskChecker(self.cfg.device, {"judge": self.cfg.tolerance}, self.cfg.seed, None)
        record: dict = {}
        try:
            checker.check_task(self.task, record)
        except JobError as exc:
            return "does not run in the trivial-answer check: " + one_line(exc.reason, 200)
        answers = record.get("answers") or {}
        if not answers:
            return record.get("note", "no trivial answer applies")
        if record.get("inputs_vary") is False:
            return "get_inputs() gives the same inputs for different seeds"
        for name in TRIVIAL_ANSWERS:
            entry = answers.get(name)
            if entry and entry["pass"]["judge"]:
                what = {"independent": "the output of another input set (the output does not depend on the input)",
                        "input": "the input itself"}.get(name, name)
                return f"a trivial answer passes the judge's comparison: {what}"
        return None

    def time_ms(self, model: Any) -> float:
        self.forward(model)
        with self.cfg.timing_lock or contextlib.nullcontext():
            return self._time_ms(model)

    def _time_ms(self, model: Any) -> float:
        times = []
        for _ in range(self.cfg.timing_runs):
            start = time.perf_counter()
            self.forward(model)
            times.append((time.perf_counter() - start) * 1000)
            if sum(times) > 20 * self.cfg.max_ms:
                break
        return statistics.median(times)

    def runtime(self) -> str | None:
        ms = self.time_ms(self.model)
        self.c.eager_ms = round(ms, 4)
        if ms < self.cfg.min_ms:
            return f"too fast: eager {ms:.3g} ms < {self.cfg.min_ms} ms"
        if ms > self.cfg.max_ms:
            return f"too slow: eager {ms:.3g} ms > {self.cfg.max_ms} ms"
        return None

    def compiled(self) -> str | None:
        try:
            compiled = torch.compile(self.model, fullgraph=True, backend=self.cfg.compile_backend)
            out = self.forward(compiled, self.cfg.seed)
        except Exception as exc:  # noqa: BLE001 - dynamo, inductor or the compiled code failed
            return "torch.compile fails: " + one_line(f"{type(exc).__name__}: {exc}", 200)
        report = compare(self.expected, out, self.cfg.tolerance)
        if not report.ok:
            return "the compiled output differs from eager: " + one_line(str(report.reason), 150)
        self.c.compile_ms = round(self.time_ms(compiled), 4)
        return None


def _same(a: Any, b: Any) -> bool:
    la, lb = output_leaves(a), output_leaves(b)
    return len(la) == len(lb) and all(identical(x, y) for x, y in zip(la, lb, strict=False))


def _run_stages(c: Candidate, stages: list) -> tuple[str | None, str | None]:
    for name, stage in stages:
        reason = stage()
        if reason == "skipped":
            c.log[name] = "skipped"
            continue
        if reason is not None:
            c.log[name] = reason
            return name, reason
        c.log[name] = "pass"
    return None, None


def run_static_filters(c: Candidate, cfg: FilterConfig, suite: Corpus, kept: dict) -> tuple[str | None, str | None]:
    """The stages that read only the code (parse .. dedup): no device, milliseconds. Fills c.log;
    returns (stage, reason) of the first drop or (None, None)."""
    return _run_stages(c, [("parse", lambda: check_parse(c)),
                           ("stochastic_static", lambda: check_stochastic_static(c, cfg)),
                           ("contamination", lambda: check_contamination(c, cfg, suite) if len(suite) else "skipped"),
                           ("dedup", lambda: check_dedup(c, cfg, kept))])


def run_dynamic_filters(c: Candidate, cfg: FilterConfig) -> tuple[str | None, str | None]:
    """The stages that run the program (eager .. compile), after the static ones passed."""
    runner = Runner(c, cfg)
    try:
        return _run_stages(c, [("eager", runner.eager), ("stochastic", runner.stochastic),
                               ("trivial", runner.trivial), ("runtime", runner.runtime),
                               ("compile", lambda: runner.compiled() if cfg.compile_check else "skipped")])
    finally:
        if runner.task is not None:
            import sys
            sys.modules.pop(runner.task.__name__, None)


def run_filters(c: Candidate, cfg: FilterConfig, suite: Corpus, kept: dict) -> tuple[str | None, str | None]:
    """Runs every stage in order; fills c.log; returns (stage, reason) of the first drop or (None, None)."""
    stage, reason = run_static_filters(c, cfg, suite, kept)
    if stage is not None:
        return stage, reason
    return run_dynamic_filters(c, cfg)
