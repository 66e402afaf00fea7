"""The `profile` job: per-call times of the candidate, or of a baseline (eager / torch.compile).

What it loads, times, checks and answers, and its gos: docs/harness-protocol.md, "`profile`".
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any, cast

import torch

from .. import go, sampled_checks, timing
from ..errors import JobError, phase
from ..guards import (
    OpGuard,
    ThreadWatch,
    block_functional,
    set_policy_rules,
    start_torch_threads,
    thread_counts,
    warm_blas,
)
from ..hardware_queues import forget_queue_setting
from ..inputs import make_timing_sets, timed_call_set
from ..integrity import (
    EarlierOutputs,
    Frozen,
    ModelState,
    check_output,
    check_weights,
    frozen_budget,
    poison_free_memory,
    reference_weights,
    summarize,
    weight_tensors,
)
from ..models import (
    WEIGHTS_FILE,
    WEIGHTS_KEYS,
    LoadedWeights,
    build_candidate,
    build_reference,
    load_trusted,
    reference_state_dict,
    synchronize,
)
from ..nested import as_arg_list, cpu_copy, named_tensors, tensor_bytes
from ..output_files import no_checksums, save_output
from ..phases import PhaseClock
from ..precision import apply_backend_flags, check_flags_unchanged
from ..process_watch import ProcessWatch
from ..shared_memory import SharedMemoryFiller
from ..spec import require, require_device
from ..task_module import import_task
from .candidate import CheckInputs, run_checks

TARGETS = ("candidate", "eager", "compile")
WAITS_FOR_GO = True  # after the profiler started (runner.py)


def build_model(spec: dict[str, Any], target: str, task: Any, init_inputs: list[Any], state_dict: dict[str, Any],
                device: str) -> tuple[torch.nn.Module, LoadedWeights]:
    """(the model to time, how the reference weights were loaded: models.py build_candidate; a baseline's
    by name); a baseline failure is the task's ("task"), a candidate's has its own kinds."""
    if target == "candidate":
        candidate_dir = require(spec, "candidate_dir", str)
        extension_dir = require(spec, "extension_dir", str)
        return build_candidate(candidate_dir, extension_dir, init_inputs, state_dict, device)
    model = build_reference(task, init_inputs, state_dict, device)
    if target == "compile":
        with phase("task", "torch.compile(Model)"):
            model = cast(torch.nn.Module, torch.compile(model))  # an OptimizedModule
    return model, LoadedWeights()


def spot_check_calls(spec: dict[str, Any], iters: int) -> list[int]:
    """spec["spot_check_calls"]: distinct timed-call indices in [0, iters) (default none)."""
    calls = require(spec, "spot_check_calls", list, default=[])
    for i in calls:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < iters:
            raise JobError("internal", f"spec: spot_check_calls must hold timed-call indices in "
                                       f"[0, {iters}), not {i!r}")
    if len(set(calls)) != len(calls):
        raise JobError("internal", "spec: spot_check_calls holds an index twice")
    return list(calls)


def spot_fill(spot_calls: list[int], result: dict[str, Any]) -> Callable[[int], None] | None:
    """Before each spot-checked timed call: every SM's shared memory filled with 3.0e38 (HACKS B12). The
    verification's repeated check fills it too, but under its shared lease other processes' kernels can
    overwrite the fill before the candidate's kernel reads it; a timed call runs under the exclusive
    lease, so what the candidate's kernel finds there is the fill."""
    if not spot_calls:
        return None
    filler = SharedMemoryFiller()
    if filler.error:
        result["shared_memory_fill_note"] = filler.error
    result["shared_memory_fills"] = []

    def fill(i: int) -> None:
        if i in spot_calls:
            result["shared_memory_fills"].append(filler.fill())
    return fill


class CandidateChecks:
    """The candidate's guards in the profile job: the op guard around each call, checks after it."""

    def __init__(self, model: torch.nn.Module, device: str, spot_calls: list[int], flags: dict[str, Any],
                 watch: ProcessWatch, fingerprints: sampled_checks.TimedFingerprints | None = None):
        self.model = model
        self.fingerprints = fingerprints  # of the calls on fingerprinted sets (sampled_checks.py)
        self.flags = flags
        self.watch = watch
        self.state = ModelState(model, sys.modules.get("model_new"))
        self.earlier = EarlierOutputs(timing.OUTPUT_BUDGET_BYTES)
        self.device = device
        self.guard = OpGuard(device)
        self.threads = ThreadWatch()
        self.spot_labels = {f"timed call {i}": i for i in spot_calls}
        self.snapshots: dict[int, Any] = {}  # spot-checked outputs, copied as soon as the call returned

    def call(self, inputs: list[Any], label: str) -> Any:
        with self.guard.watch(label), self.watch.no_thread_starts(label):
            return self.model(*inputs)

    def after(self, label: str, inputs: list[Any], output: Any) -> None:
        self.threads.check(label)
        self.watch.check(label)
        check_flags_unchanged(self.flags, label)
        check_output(output, self.device,
                     named_tensors(inputs, "input") + weight_tensors(self.model) + self.earlier.named,
                     path=f"{label}: output")
        if self.fingerprints is not None:  # a plain tensor output, as check_output made sure
            self.fingerprints.add(label, output)
        self.state.check(label)
        self.earlier.add(output, f"the output of {label}")
        if label in self.spot_labels:
            self.snapshots[self.spot_labels[label]] = cpu_copy(output)
        self.watch.reset()  # the baseline of the next call (outside its timed region)

    def check_outputs_unchanged(self, outputs: list[Any]) -> None:
        """Each spot-checked output must still equal its copy taken right after its call (HACKS.md A2:
        work deferred past the timer, e.g. to a thread, shows as an output that changed later)."""
        for i, snapshot in sorted(self.snapshots.items()):
            later = named_tensors(cpu_copy(outputs[i]), "output")
            if Frozen.adopt(named_tensors(snapshot, "output")).differences(later):
                raise JobError("bad_output", f"timed call {i}: the output changed after the call "
                                             f"returned (work must be finished when the forward returns)")


def save_spot_checks(calls: list[int], sets: int, warmup: int, outputs: list[Any] | dict[int, Any],
                     output_dir: str) -> list[dict[str, Any]]:
    """Writes timed_output_{i}.pt (outputs[i], moved to the CPU) for each spot-checked call i."""
    os.makedirs(output_dir, exist_ok=True)
    entries = []
    for i in calls:
        output_path = os.path.join(output_dir, f"timed_output_{i}.pt")
        save_output(outputs[i], output_path)
        entries.append({"call": i, "input_set": timed_call_set(i, warmup, sets), "output_path": output_path})
    return entries


def check_spot_inputs(calls: list[int], pristine: dict[int, Frozen], input_sets: list[list[Any]],
                      warmup: int) -> None:
    """The input sets of spot-checked calls must still equal their copies taken before any call."""
    for i in calls:
        used = named_tensors(input_sets[timed_call_set(i, warmup, len(input_sets))], "input")
        differences = pristine[i].differences(used)
        if differences:
            raise JobError("mutated_input", f"timed call {i}: the candidate changed its inputs: "
                                            f"{summarize(differences)} (inputs must be left untouched)")


def verify_before_timing(spec: dict[str, Any], task: Any, model: torch.nn.Module, device: str, weights: Frozen,
                         result: dict[str, Any], flags: dict[str, Any], clock: PhaseClock, watch: ProcessWatch,
                         profiler: timing.DeviceProfiler | timing.CuptiProfiler | None) -> bool:
    """The verification's checks in this process (see the module doc), then the wait for the go of the
    timing inside timing.BETWEEN_RANGE; False when the judge called the job off meanwhile."""
    wait = spec.get("wait_for")
    if wait is not None and wait.get("time") is None:  # it would time at once, outside its lease
        raise JobError("internal", "spec: a job that waits for its go and checks the candidate needs "
                                   "wait_for.time, the go of its timing")
    verification: dict[str, Any] = {}
    result["verification"] = verification
    output_dir = require(spec, "output_dir", str)
    os.makedirs(output_dir, exist_ok=True)
    # How the weights were loaded, for the judge's record of the verification (read at `checked`).
    with open(os.path.join(output_dir, WEIGHTS_FILE), "w", encoding="utf-8") as f:
        json.dump({k: result[k] for k in WEIGHTS_KEYS if k in result}, f)
    run_checks(CheckInputs(spec, device, task), model, device, weights, output_dir, verification, flags, clock,
               watch, require(spec, "repeat_first_check", bool, default=False))
    synchronize(device)
    between = profiler.range(timing.BETWEEN_RANGE) if profiler is not None else contextlib.nullcontext()
    with between:
        if not go.wait_for_time(spec, result):
            return False
        synchronize(device)
    clock.lap("time_wait")
    return True


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    # Only these spec fields are read before the go: a standby learns everything else from its go.
    device = require_device(spec)
    no_checksums()  # of the spot-checked outputs' files (output_files.py)
    target = require(spec, "target", str)
    if target not in TARGETS:
        raise JobError("internal", f"spec: target must be one of {', '.join(TARGETS)}, not '{target}'")
    flags = apply_backend_flags(spec.get("backend_flags"))
    result["backend_flags"] = flags
    clock = PhaseClock(result)
    profiler = None
    if device == "cuda":
        torch.cuda.init()
        profiler = timing.start_device_profiler()
        clock.lap("profiler_start")
    if target == "compile" and spec.get("wait_for") is not None:
        # Seconds of imports that need no device lease: done while waiting, not while holding it.
        importlib.import_module("torch._dynamo")
        importlib.import_module("torch._inductor.compile_fx")
        clock.lap("compiler_import")
    def called_off() -> None:  # the judge stopped the job while it waited for a go
        if profiler is not None:
            profiler.stop()

    timing.freeze_garbage()  # the imports' objects, while no lease is held
    if not go.wait_for_go(spec, result):
        return called_off()
    clock.lap("wait")

    task_path = require(spec, "task_path", str)
    set_policy_rules(spec.get("policy_rules") if target == "candidate" else None)
    seed = require(spec, "seed", int)
    warmup = require(spec, "warmup", int, default=5)
    iters = require(spec, "iters", int, default=20)
    flush_l2 = require(spec, "flush_l2", bool, default=True)
    if target == "compile":
        warmup = max(warmup, 1)  # the first call compiles; it must never be a timed one
    calls = spot_check_calls(spec, iters)
    output_dir = require(spec, "output_dir", str) if calls else None
    kind = "forward" if target == "candidate" else "task"
    result.update({
        "target": target, "device_us": None, "wall_us": [], "median_device_us": None,
        "median_wall_us": None, "mean_device_us": None, "kernels": [], "warmup": warmup,
        "iters": iters, "num_threads": torch.get_num_threads(), "min_bytes": None, "spot_checks": [],
    })
    if target == "compile":
        result["compile_seconds"] = None

    init_inputs = as_arg_list(load_trusted(require(spec, "init_inputs_path", str)))
    task = import_task(task_path)
    state_dict, private = reference_state_dict(require(spec, "state_dict_path", str), task, device)
    clock.lap("weights")
    input_sets = make_timing_sets(task, seed, warmup + iters, device)
    clock.lap("inputs")
    result["input_sets"] = len(input_sets)
    # Copies taken before any model code runs: the spot-checked calls' inputs must stay untouched.
    budget = frozen_budget(device) // max(1, len(calls))
    pristine = {i: Frozen(named_tensors(input_sets[timed_call_set(i, warmup, len(input_sets))], "input"),
                          device, budget) for i in calls}
    start_torch_threads(device)
    warm_blas(device)
    calibration = timing.Calibration(device)  # its operands and kernels: measured under the exclusive lease
    uuid = timing.device_uuid(device)  # before any model code runs: what it reports is the judge's
    # The fill kernel is loaded (the driver compiles its PTX) while preparing, not under the exclusive lease.
    fill = spot_fill(calls, result) if target == "candidate" and device == "cuda" else None
    forget_queue_setting(device)  # the context has its hardware queues; candidate code cannot read them
    if spec.get("wait_for", {}).get("then") is not None:
        # Prepared under the verification's shared lease: nothing of this may still run on the device
        # once the judge releases it (go.py, "then").
        synchronize(device)
        timing.freeze_garbage()  # the preparation's objects, under the shared lease
        clock.lap("pristine")
        if not go.wait_for_then(spec, result):
            return called_off()
        clock.lap("then_wait")
    # The candidate's process watch: pins taken before its code is imported (process_watch.py).
    # On CUDA the profiler's (and the libraries') own threads may start during a call: created threads are
    # counted on the CPU.
    watch = ProcessWatch(device, count_created_threads=device == "cpu") if target == "candidate" else None
    with watch.no_thread_starts("loading ModelNew") if watch is not None else contextlib.nullcontext():
        model, loaded = build_model(spec, target, task, init_inputs, state_dict, device)
    if watch is not None:
        watch.check("loading ModelNew", created_threads=False)  # torch and CUDA may start theirs lazily
    clock.lap("model")

    checks = None
    guard: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    threads = ThreadWatch()
    if target == "candidate":
        result.update(loaded.record())
    # Loaded by position (kernelbench): the weights are compared under ModelNew's names, with its own
    # entries as it built them.
    weights = reference_weights(loaded.state(state_dict), device, private) \
        if target == "candidate" else None
    del state_dict  # the model holds its own copy; a GB-sized weight must not be held twice while timing
    if weights is not None:
        assert watch is not None  # both are the candidate's
        check_weights(weights, model, "after load_state_dict")
        if spec.get("check_seeds") is not None and not verify_before_timing(
                spec, task, model, device, weights, result, flags, clock, watch, profiler):
            return called_off()
        plan = sampled_checks.plan(spec)  # timed_sets only with the check fields, which verified above
        fingerprints = sampled_checks.TimedFingerprints(plan.seed, device, plan.timed_sets, len(input_sets)) \
            if plan.timed_sets else None
        checks = CandidateChecks(model, device, calls, flags, watch, fingerprints)
        threads = checks.threads
        guard = block_functional(checks.guard.record)
        poison_free_memory(device, tensor_bytes(input_sets[0]))

    def baseline_call(inputs: list[Any], label: str) -> Any:
        return model(*inputs)

    keep = timing.OutputKeeper(set(calls))
    call = checks.call if checks is not None else baseline_call
    after = checks.after if checks is not None else timing.no_check
    try:
        threads.reset()
        if checks is not None:
            checks.watch.reset()
        with torch.no_grad(), guard:
            host_durations: list[float] = []
            first_seconds = timing.warm_up(call, input_sets, warmup, device, kind, after, host_durations)
            clock.lap("warmup")
            result["calibration"] = calibration.measure()
            if uuid:
                result["calibration"]["device_uuid"] = uuid
            if checks is not None:
                checks.watch.reset()  # the calibration's GEMM may start the BLAS library's threads
            clock.lap("calibration")
            if device == "cuda":
                flusher = timing.L2Flusher(flush_l2)
                result["persisting_l2_reset"] = flusher.persisting.available
                fences = timing.StreamFences(checks is not None)
                fences.calibrate(timing.fence_host_seconds(host_durations))
                timings = timing.time_calls_cuda(call, input_sets, warmup, iters, kind, flusher, after,
                                                 started=threads.reset, fences=fences, profiler=profiler,
                                                 keep=keep, before=fill)
            else:
                timings = timing.time_calls_cpu(call, input_sets, warmup, iters, kind, after, keep)
        if checks is None:
            threads.after = thread_counts()  # recorded only: baselines may start threads (compile does)
    finally:
        if checks is not None:
            result["aten_ops"] = checks.guard.ops()
        result.update(threads.to_dict())

    clock.lap("timed")
    if checks is not None and checks.fingerprints is not None:
        with phase(kind, "the timed calls' fingerprints"):
            result["timed_fingerprints"] = checks.fingerprints.finish()  # waits for the device
        clock.lap("fingerprints")
    result["profiler_seconds"] = timings.profiler_seconds
    result.update({"kernels": timings.kernels, "call_kernels": timings.call_kernels,
                   "unjoined": timings.unjoined[:20]})
    if checks is not None and timings.between:
        first = timings.between[0]
        raise JobError("unjoined_stream", f"{first['name']} ran on the device {first['start_us'] / 1e3:.1f} ms "
                                          f"after the checks had returned, while the job waited to be timed "
                                          f"(work must be finished when the forward returns)")
    if checks is not None and timings.unjoined:
        first = timings.unjoined[0]
        raise JobError("unjoined_stream", f"timed call {first['call']}: {first['name']} {first['problem']} "
                                          f"by {first['by_us']:.1f} us (work on a stream of your own must "
                                          f"wait for the current stream and be joined to it before the "
                                          f"forward returns)")
    if checks is not None:
        assert weights is not None  # checks are the candidate's, and so are its weights
        checks.check_outputs_unchanged(timings.outputs)
        check_weights(weights, model, "after the timed calls")
        check_spot_inputs(calls, pristine, input_sets, warmup)
    if target == "compile":
        result["compile_seconds"] = first_seconds
    if iters > 0:
        result["min_bytes"] = timing.bytes_moved(input_sets[timed_call_set(0, warmup, len(input_sets))],
                                                 timings.outputs[0])
    if calls:
        assert output_dir is not None  # required when there are calls to spot-check
        outputs = checks.snapshots if checks is not None else timings.outputs
        result["spot_checks"] = save_spot_checks(calls, len(input_sets), warmup, outputs, output_dir)
    result.update({
        "device_us": timings.device_us,
        "wall_us": timings.wall_us,
        "median_device_us": timing.median(timings.device_us),
        "median_wall_us": timing.median(timings.wall_us),
        "mean_device_us": timing.mean(timings.device_us),
    })
    clock.lap("checks")
