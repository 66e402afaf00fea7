"""The `candidate` job (untrusted: runs candidate code; never sees expected outputs).

The order of its work and the guards around each forward: docs/harness-protocol.md, "`candidate`".
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from typing import Any

import torch

from .. import go, sampled_checks
from ..errors import JobError, phase
from ..guards import OpGuard, ThreadWatch, block_functional, set_policy_rules, start_torch_threads, warm_blas
from ..hardware_queues import forget_queue_setting
from ..inputs import make_input_set, transformed
from ..integrity import (
    POISON_HUGE,
    EarlierOutputs,
    Frozen,
    ModelState,
    check_output,
    check_weights,
    frozen_budget,
    poison_free_memory,
    reference_weights,
    release_poison,
    summarize,
    weight_tensors,
)
from ..models import (
    build_candidate,
    load_trusted,
    reference_state_dict,
    synchronize,
)
from ..nested import as_arg_list, named_tensors, tensor_bytes
from ..output_files import no_checksums, save_output
from ..phases import PhaseClock
from ..precision import apply_backend_flags, check_flags_unchanged
from ..process_watch import ProcessWatch
from ..shared_memory import SharedMemoryFiller
from ..spec import require, require_device
from ..task_module import import_task
from .reference import per_check


def guarded_forward(model: torch.nn.Module, inputs: list[Any], device: str, guard: OpGuard, what: str,
                    watch: ProcessWatch | None = None, sync: bool = True) -> Any:
    """One forward under no_grad with F blocked, the op guard on and (with `watch`) Python threads
    refused, then (with `sync`) a device-wide synchronise."""
    no_threads = watch.no_thread_starts(what) if watch is not None else contextlib.nullcontext()
    with torch.no_grad(), block_functional(guard.record), guard.watch(what), no_threads:
        output = model(*inputs)
    if sync:
        synchronize(device)
    return output


class CheckInputs:
    """The input set of each check, made from its seed with its scale and shift."""

    def __init__(self, spec: dict[str, Any], device: str, task: Any = None) -> None:
        self.task = task if task is not None else import_task(require(spec, "task_path", str))
        self.seeds = require(spec, "check_seeds", list)
        self.scales = per_check(spec, "input_scales", len(self.seeds), 1.0, nonzero=True)
        self.shifts = per_check(spec, "input_shifts", len(self.seeds), 0.0, nonzero=False)
        self.device = device
        plan = sampled_checks.plan(spec)  # the sampled sets the reference fingerprinted
        self.sampled_seed, self.sampled_count = plan.seed, plan.count

    def __len__(self) -> int:
        return len(self.seeds)

    def make(self, i: int) -> list[Any]:
        inputs = make_input_set(self.task, self.seeds[i], self.device, f"check {i}")
        return transformed(inputs, self.scales[i], self.shifts[i])

    def make_sampled(self, k: int) -> list[Any]:
        return make_input_set(self.task, sampled_checks.sampled_set_seed(self.sampled_seed, k), self.device,
                              f"sampled check {k}")


def run_check(i: int, model: torch.nn.Module, inputs: list[Any], device: str, guard: OpGuard,
              threads: ThreadWatch, weights: Frozen, output_dir: str, result: dict[str, Any], flags: dict[str, Any],
              what: str = "", poison: float = math.nan, another_state: bool = False,
              filler: SharedMemoryFiller | None = None, clock: PhaseClock | None = None,
              watch: ProcessWatch | None = None, earlier: EarlierOutputs | None = None,
              state: ModelState | None = None) -> None:
    """One checked forward. With `another_state`, the device is left in another state for it (HACKS
    B12): later allocations shifted and, on CUDA (`filler`), every SM's shared memory filled with
    3.0e38 — after the inputs are made (their kernels would overwrite shared memory) and before the
    free memory is poisoned (which uses no shared memory)."""
    what = what or f"check {i}"
    lap = clock.lap if clock is not None else (lambda name: None)
    named_inputs = named_tensors(inputs, "input")
    frozen_inputs = Frozen(named_inputs, device, frozen_budget(device))
    lap("freeze")
    shift = None
    if another_state:
        if filler is not None:
            result["shared_memory_fill"] = filler.fill()
        shift = torch.empty(4096 + 96, dtype=torch.uint8, device=device)  # moves later allocations
    # Sized by what a call needs: the inputs, and the outputs once a check has shown their size.
    need = tensor_bytes(inputs) + result.get("output_bytes", 0)
    result["poisoned_bytes"] = poison_free_memory(device, need, poison)
    lap("poison")
    threads.reset()
    if watch is not None:
        watch.reset()
    with phase("forward", f"{what}: ModelNew.forward"):
        output = guarded_forward(model, inputs, device, guard, what, watch)
    lap("forward")
    del shift
    threads.check(what)
    if watch is not None:
        watch.check(what)
    check_flags_unchanged(flags, what)
    check_output(output, device, named_inputs + weight_tensors(model) + (earlier.named if earlier else []),
                 path=f"{what}: output")
    result["output_bytes"] = max(result.get("output_bytes", 0), tensor_bytes(output))  # a checked output
    if state is not None:
        state.check(what)
    changed = frozen_inputs.differences(named_inputs)
    if changed:
        raise JobError("mutated_input", f"{what}: the forward changed its inputs: {summarize(changed)} "
                                        f"(inputs must be left untouched)")
    check_weights(weights, model, f"{what}: after the forward")
    lap("guards")
    save_output(output, os.path.join(output_dir, f"output_{i}.pt"))
    if earlier is not None:
        earlier.add(output, f"the output of {what}")
    release_poison(device)
    lap("save")


def run_sampled_checks(checks: CheckInputs, model: torch.nn.Module, device: str, guard: OpGuard,
                       threads: ThreadWatch, output_dir: str, flags: dict[str, Any], watch: ProcessWatch,
                       earlier: EarlierOutputs) -> None:
    """The sampled checks (sampled_checks.py): one guarded forward per sampled input set, its output's
    fingerprint queued on the device; all of them copied back once and written as sampled.json in
    `output_dir` for the judge to compare with the reference's. The forward runs under the op guard
    with F blocked and Python threads refused, and its output must be plain and its own, as in a full
    check; nothing waits for the device between them. The thread counts and the process are checked
    after the last (torch's seed, which making each input set changes, set back first)."""
    pending = sampled_checks.Pending(sampled_checks.Weights(checks.sampled_seed, device))
    watch.reset()
    seed = torch.initial_seed()
    for k in range(checks.sampled_count):
        inputs = checks.make_sampled(k)
        what = f"sampled check {k}"
        with phase("forward", f"{what}: ModelNew.forward"):
            output = guarded_forward(model, inputs, device, guard, what, watch, sync=False)
        check_output(output, device, named_tensors(inputs, "input") + weight_tensors(model) + earlier.named,
                     path=f"{what}: output")
        pending.add(output)
        del inputs, output
    with phase("forward", "the sampled checks: ModelNew.forward"):
        fingerprints = pending.finish()  # waits for the device: an error of the candidate's shows here
    torch.manual_seed(seed)  # the seed the watch's baseline holds, which making the inputs changed
    watch.check("the sampled checks")
    threads.check("the sampled checks")
    check_flags_unchanged(flags, "the sampled checks")
    with open(os.path.join(output_dir, sampled_checks.FILE_NAME), "w", encoding="utf-8") as f:
        json.dump({"seed": checks.sampled_seed, "count": len(fingerprints), "fingerprints": fingerprints}, f)


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    device = require_device(spec)
    no_checksums()  # of the output files (output_files.py), before any candidate code is loaded
    candidate_dir = require(spec, "candidate_dir", str)
    extension_dir = require(spec, "extension_dir", str)
    init_inputs_path = require(spec, "init_inputs_path", str)
    state_dict_path = require(spec, "state_dict_path", str)
    output_dir = require(spec, "output_dir", str)
    repeat = require(spec, "repeat_first_check", bool, default=False)
    result.update({"checks_run": 0, "aten_ops": {}})
    clock = PhaseClock(result)
    os.makedirs(output_dir, exist_ok=True)
    flags = apply_backend_flags(spec.get("backend_flags"))
    set_policy_rules(spec.get("policy_rules"))
    result["backend_flags"] = flags

    init_inputs = as_arg_list(load_trusted(init_inputs_path))
    checks = CheckInputs(spec, device)
    clock.lap("load")
    state_dict, private = reference_state_dict(state_dict_path, checks.task, device)
    clock.lap("weights")
    start_torch_threads(device)
    clock.lap("threads")
    warm_blas(device)
    clock.lap("blas")
    forget_queue_setting(device)
    clock.lap("context")
    if spec.get("wait_for", {}).get("then") is not None:
        # Prepared under the reference's shared lease, while the candidate still compiles: nothing of
        # this may still run on the device once the judge releases it (go.py, "then").
        synchronize(device)
        if not go.wait_for_then(spec, result):
            return
        clock.lap("then_wait")

    # Pins taken before any candidate code is imported. Threads a forward creates are counted on the CPU:
    # whether CUDA's libraries start threads of their own inside a call is for the GPU matrix run to show.
    watch = ProcessWatch(device, count_created_threads=device == "cpu")
    with watch.no_thread_starts("loading ModelNew"):
        model, loaded = build_candidate(candidate_dir, extension_dir, init_inputs, state_dict, device)
    watch.check("loading ModelNew", created_threads=False)  # torch and CUDA may start theirs lazily
    result.update(loaded.record())
    # Loaded by position (kernelbench): the weights are compared under ModelNew's names, with its own
    # entries as it built them.
    weights = reference_weights(loaded.state(state_dict), device, private)
    del state_dict
    check_weights(weights, model, "after load_state_dict")
    clock.lap("model")
    run_checks(checks, model, device, weights, output_dir, result, flags, clock, watch, repeat)


def run_checks(checks: CheckInputs, model: torch.nn.Module, device: str, weights: Frozen, output_dir: str,
               result: dict[str, Any], flags: dict[str, Any], clock: PhaseClock, watch: ProcessWatch,
               repeat: bool) -> None:
    """One checked forward per check seed, writing output_{i}.pt, then (with `repeat`) check 0 again under
    another allocator state (the module doc). Records checks_run, the ATen ops and the thread counts in
    `result`. The candidate's profile job runs these too when it verifies before it is timed
    (profile.py)."""
    result.update({"checks_run": 0, "aten_ops": {}})
    state = ModelState(model, sys.modules.get("model_new"))
    earlier = EarlierOutputs(frozen_budget(device) // 4)
    guard = OpGuard(device)
    threads = ThreadWatch()
    try:
        for i in range(len(checks)):
            inputs = checks.make(i)
            clock.lap("inputs")
            run_check(i, model, inputs, device, guard, threads, weights, output_dir, result, flags, clock=clock,
                      watch=watch, earlier=earlier, state=state)
            del inputs
            result["checks_run"] = i + 1
        if repeat and len(checks):
            filler = SharedMemoryFiller() if device == "cuda" else None
            if filler is not None and filler.error:
                result["shared_memory_fill_note"] = filler.error
            clock.lap("repeat_setup")
            run_check(len(checks), model, checks.make(0), device, guard, threads, weights, output_dir,
                      result, flags, what="repeat of check 0", poison=POISON_HUGE, another_state=True,
                      filler=filler, clock=clock, watch=watch, earlier=earlier, state=state)
            result["repeated_check"] = True
        if checks.sampled_count:
            run_sampled_checks(checks, model, device, guard, threads, output_dir, flags, watch, earlier)
            clock.lap("sampled_checks")
            result["sampled_checks"] = checks.sampled_count
    finally:
        result["aten_ops"] = guard.ops()
        result.update(threads.to_dict())
