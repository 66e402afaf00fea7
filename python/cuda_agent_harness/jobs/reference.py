"""The `reference` job (trusted: never loads candidate code): expected outputs of a task.

Spec, files written, serving and kept rounds: docs/harness-protocol.md, "`reference`".
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .. import go, sampled_checks
from ..comparison import Floors
from ..errors import JobError, new_result, phase, run_reporting
from ..inputs import input_set_count, make_input_set, timed_call_set, timing_set_seed, transformed
from ..models import detached_state, load_trusted, seeded_reference, synchronize, write_reference_weights
from ..nested import map_tensors, named_tensors, signature, tensor_bytes, to_cpu
from ..noise import NoiseProbe
from ..phases import PhaseClock
from ..precision import apply_backend_flags
from ..serving import Serving
from ..spec import require, require_device, write_result
from ..task_module import import_task
from . import compare as compare_job

# Keeps one expected output (key, the file it would be, the output, its noise floors by tensor path,
# noise.py): returns the file it was written to, or None when it stays in memory (a served job, within
# its budget). Floors travel beside the output: in memory, or in FLOORS_SUFFIX next to its file.
Keep = Callable[[str, str, object, Floors], str | None]
# How many bytes of expected outputs a served reference keeps in memory (per judgement: 8 or 16 run at
# once on a host, 16-32 GiB of its RAM); the rest goes to expected_dir as without serving.
# KernelBench's median output is 118 MiB (all of a judgement's outputs stay in memory); its largest
# is 8 GiB (written, as before).
KEEP_BYTES = 2 << 30
# How many bytes of them stay on the GPU where they were computed (per judgement). A 256 MiB output
# took 0.25 s to copy to fresh host memory (five checks and two spot checks of level1/88: 1.6–2.0 s
# of the reference's stage, which then ended after the build); on the device it takes none, and the
# comparison, which runs on the device, no copy back. At most 1 GiB: 8 judgements at once on an
# 80 GB H100 peaked at 60–72 GB with the 14 cases of bench/judge_latency.py, 75–78 GB when the
# reference kept up to 2 GiB there (docs/decisions/processes.md).
KEEP_DEVICE_BYTES = 1 << 30


def all_finite(value: Any) -> bool:
    return all(bool(torch.isfinite(t).all()) for _, t in named_tensors(value, "output")
               if t.is_floating_point() or t.is_complex())


def float_dtypes(*values: Any) -> list[str]:
    names = set()
    for value in values:
        for _, t in named_tensors(value, "value"):
            if t.is_floating_point() or t.is_complex():
                names.add(str(t.dtype).replace("torch.", ""))
    return sorted(names)


def run_forward(model: Any, inputs: list[Any], device: str, what: str) -> Any:
    """The reference output on `inputs` (already on the device), where it was computed: a tensor
    that is a view into a larger block is copied out of it (keeping it must not keep the block)."""
    with phase("task", f"Model.forward ({what})"):
        with torch.no_grad():
            output = model(*inputs)
        synchronize(device)
        return map_tensors(output, own_storage)


def own_storage(t: torch.Tensor) -> torch.Tensor:
    """`t` detached, copied out of its storage when that storage holds more than `t` itself."""
    t = t.detach()
    if t.layout == torch.strided and t.untyped_storage().nbytes() > t.numel() * t.element_size():
        return t.clone()
    return t


def per_check(spec: dict[str, Any], key: str, count: int, default: float, nonzero: bool) -> list[float]:
    values = require(spec, key, list, default=[default] * count)
    if len(values) != count or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                       and (v != 0 or not nonzero) for v in values):
        raise JobError("internal", f"spec: {key} must hold {count} numbers"
                                   f"{' other than 0' if nonzero else ''}, not {values!r}")
    return [float(v) for v in values]


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    if spec.get("kept") is not None:
        serve_rounds(spec, result)
        return
    serving = Serving(spec)
    if not serving.active:
        reference_outputs(spec, result, save_output)
        return
    serve_judgement(spec, result, serving, warmed=spec.get("wait_for") is not None)


def serve_judgement(spec: dict[str, Any], result: dict[str, Any], serving: Serving, warmed: bool) -> None:
    """One judgement served (see the module doc): the reference's work, its answer, the comparisons.
    `warmed`: the comparison's kernels are loaded already (an early job loaded them before its go)."""
    device = require_device(spec)
    tol = compare_job.tolerance_of(spec)
    budget = require(spec, "keep_bytes", int, default=KEEP_BYTES)
    device_budget = require(spec, "keep_device_bytes", int, default=KEEP_DEVICE_BYTES)
    kept: dict[str, Callable[[], object]] = {}  # key -> the expected output
    kept_floors: dict[str, Floors] = {}  # key -> its noise floors (noise.py), when it has any
    kept_bytes = kept_device_bytes = 0

    def keep(key: str, path: str, output: Any, floors: Floors) -> str | None:
        nonlocal kept_bytes, kept_device_bytes
        if floors:
            kept_floors[key] = floors
        size = tensor_bytes(output)
        if device == "cuda" and kept_device_bytes + size <= device_budget and room_on_device(size):
            kept_device_bytes += size
            kept[key] = lambda: output
            return None
        output = to_cpu(output)
        if kept_bytes + size <= budget:
            kept_bytes += size
            kept[key] = lambda: output
            return None
        torch.save(output, path)  # beyond the budget: to the private folder, read at its comparison
        kept[key] = functools.partial(load_trusted, path)
        return path

    reference_outputs(spec, result, keep)  # the task's model and inputs go when it returns
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    if not warmed:
        warm_up(spec)
    serving.answer(serving.requests[0], result)

    def handle(name: str, fields: dict[str, Any], answer: dict[str, Any]) -> None:
        keys = require(fields, "expected_keys", list)
        missing = [k for k in keys if k not in kept]
        if missing:
            raise JobError("internal", f"{name}: no expected output kept under {missing!r}")
        try:
            compare_job.compare_all([kept[k] for k in keys],
                                    require(fields, "actual_paths", list), tol, device, answer,
                                    [kept_floors.get(k, {}) for k in keys])
        finally:
            # Each output is compared once: the verification's checks are not needed for the spot
            # checks after the profile, and the device memory goes back before the candidate's
            # profile needs it.
            for k in keys:
                kept.pop(k, None)
            if device == "cuda":
                torch.cuda.empty_cache()

    result["kept_in_memory_bytes"] = kept_bytes + kept_device_bytes
    result["kept_on_device_bytes"] = kept_device_bytes
    result["answered"] = serving.serve(handle)


def serve_rounds(spec: dict[str, Any], result: dict[str, Any]) -> None:
    """A kept reference (see the module doc): serves one judgement per round, each from the fields
    of its round's go (spec["round"]: the first from the runner's go, the next ones from
    kept["signals_dir"]/<r>/<kept["go"]>), until a round fails, `max_rounds` were served, or no go
    comes within `idle_s` (or at kept["stop"])."""
    kept = require(spec, "kept", dict)
    rounds_dir = require(kept, "rounds_dir", str)
    signals_dir = require(kept, "signals_dir", str)
    stop = require(kept, "stop", str)
    go_name = require(kept, "go", str)
    idle_s = float(require(kept, "idle_s", (int, float)))
    max_rounds = require(kept, "max_rounds", int)
    fixed = {k: v for k, v in spec.items() if k not in ("round", "wait_for", "kept", "result_path")}
    result["rounds"] = 0
    go_wait = result.get("go_wait_seconds", 0.0)  # round 0's: the runner waited for its go
    while True:
        fields = require(spec, "round", dict)
        if any(k in fixed for k in fields):
            raise JobError("internal", f"a round's go may not change the kept job's own fields: "
                                       f"{sorted(k for k in fields if k in fixed)}")
        round_spec = fixed | fields
        torch.set_default_dtype(torch.float32)  # as a fresh process has it, whatever the last task set
        round_result = new_result()
        round_result["go_wait_seconds"] = go_wait  # in the round's answers, as a fresh job has it
        serving = Serving(round_spec)
        if not serving.active:
            raise JobError("internal", "a kept reference's round needs a serve section")
        start = time.perf_counter()
        run_reporting(functools.partial(serve_judgement, round_spec, round_result, serving, warmed=True),
                      round_result)
        healthy = round_result["ok"] and not serving.failed and device_healthy(round_spec)
        round_result["seconds"] = time.perf_counter() - start
        round_result["round"] = result["rounds"]
        round_result["reusable"] = healthy and result["rounds"] + 1 < max_rounds
        write_result(require(round_spec, "round_end_path", str), round_result)
        result["rounds"] += 1
        if not round_result["reusable"]:
            return
        del round_spec, round_result, serving
        gc.collect()
        if fixed.get("device") == "cuda":
            torch.cuda.empty_cache()
        # The next round's folders; its ready mark says the job waits for that round's go.
        answers = os.path.join(rounds_dir, str(result["rounds"]), "answers")
        for sub in ("answers", "shared", "private"):
            os.makedirs(os.path.join(rounds_dir, str(result["rounds"]), sub), exist_ok=True)
        waiting = {"wait_for": {"go": os.path.join(signals_dir, str(result["rounds"]), go_name),
                                "stop": stop, "timeout_s": idle_s,
                                "ready": os.path.join(answers, "ready")}}
        waited: dict[str, Any] = {}
        if not go.wait_for_go(waiting, waited):
            return  # idle too long, or the judge let it go: the job ends
        go_wait = waited["go_wait_seconds"]
        spec["round"] = waiting.get("round")


def device_healthy(spec: dict[str, Any]) -> bool:
    """Whether the device still works after a round (a CUDA error is sticky: the next round would
    fail it as the task's error)."""
    if spec.get("device") != "cuda":
        return True
    try:
        torch.cuda.synchronize()
        return bool((torch.ones(1, device="cuda") + 1).item() == 2)
    except Exception:  # noqa: BLE001 - any failure means: do not reuse
        return False


def room_on_device(size: int) -> bool:
    """Whether `size` more bytes kept on the current GPU still leave half of it free: the candidate's
    jobs of this judgement and the other judgements on the device (8 at once: 60–72 GB of an 80 GB
    H100 at their peak, with the 14 cases of bench/judge_latency.py) need it more."""
    free, total = torch.cuda.mem_get_info()
    return free - size >= total // 2


def warm_up(spec: dict[str, Any]) -> None:
    """A served reference on the GPU (a kept one too) loads the comparison's kernels before its first
    comparison (compare.warm_up); as an early job, while it waits for its go."""
    if spec.get("serve") is not None or spec.get("kept") is not None:
        compare_job.warm_up(spec)


def save_output(_key: str, path: str, output: Any, floors: Floors) -> str:
    torch.save(to_cpu(output), path)
    compare_job.save_floors(path, floors)
    return path


def reference_outputs(spec: dict[str, Any], result: dict[str, Any], keep: Keep) -> None:
    """The reference's work (see the module doc); `keep` takes each expected output."""
    device = require_device(spec)
    task_path = require(spec, "task_path", str)
    data_dir = require(spec, "data_dir", str)
    init_seed = require(spec, "init_seed", int)
    check_seeds = require(spec, "check_seeds", list)
    result.update({"num_checks": 0, "output_signature": None})
    scales = per_check(spec, "input_scales", len(check_seeds), 1.0, nonzero=True)
    shifts = per_check(spec, "input_shifts", len(check_seeds), 0.0, nonzero=False)
    result["backend_flags"] = apply_backend_flags(spec.get("backend_flags"))
    result["input_scales"] = []
    result["input_shifts"] = []
    expected_dir = spec.get("expected_dir") or data_dir
    os.makedirs(data_dir, exist_ok=True)
    os.makedirs(expected_dir, exist_ok=True)

    clock = PhaseClock(result)
    task = import_task(task_path)
    clock.lap("task")
    init_inputs, model = seeded_reference(task, init_seed, device)  # the first CUDA call inits CUDA
    clock.lap("model")
    state_dict = detached_state(model)
    torch.save(to_cpu(init_inputs), os.path.join(data_dir, "init_inputs.pt"))
    result["weights_from"] = write_reference_weights(task, init_seed, state_dict, device,
                                                     os.path.join(data_dir, "state_dict.pt"))
    clock.lap("save")

    # The reference's noise floors (noise.py) where an output is its own rounding error: scaled mode only.
    scaled = spec.get("tolerance") is not None and compare_job.tolerance_of(spec).mode == "scaled"
    probe = NoiseProbe(model) if scaled else None
    unscaled_finite = True
    for i, seed in enumerate(check_seeds):
        inputs = make_input_set(task, seed, device, f"check {i}")
        scale, shift = (scales[i], shifts[i]) if i > 0 else (1.0, 0.0)
        output = None
        floors: Floors = {}
        if scale != 1.0 or shift != 0.0:
            moved = transformed(inputs, scale, shift)
            try:
                output = run_forward(model, moved, device, f"check {i}, inputs x {scale:g} + {shift:g}")
            except JobError:
                output = None
            if output is not None and unscaled_finite and not all_finite(output):
                output = None
            if output is None:
                scale, shift = 1.0, 0.0  # the task does not allow this transform
            elif probe is not None:
                floors = probe.floors(moved, output)
            del moved
        if output is None:
            output = run_forward(model, inputs, device, f"check {i}")
            if probe is not None:
                floors = probe.floors(inputs, output)
        clock.lap("forward")
        if i == 0:
            unscaled_finite = all_finite(output)
            result["output_signature"] = signature(output)
            result["float_dtypes"] = float_dtypes(inputs, init_inputs, state_dict, output)
        del inputs
        keep(f"check {i}", os.path.join(expected_dir, f"expected_{i}.pt"), output, floors)
        clock.lap("save")
        result["input_scales"].append(scale)
        result["input_shifts"].append(shift)
        result["num_checks"] = i + 1
    timing = None
    if spec.get("timing") is not None:
        timing = spot_expected(spec, task, model, device, expected_dir, result, keep, probe)
        clock.lap("spot_checks")
    if sampled_checks.plan(spec).count:
        result["sampled_checks"] = sampled_reference(spec, task, model, device, probe, timing)
        clock.lap("sampled_checks")
    if probe is not None and probe.measured:
        result["noise_floor_forwards"] = probe.measured  # float64 forwards run to measure floors


@dataclass
class TimingSets:
    """The candidate profile's input sets as the reference sees them (inputs.py): `sets` of them from
    `seed`, and the outputs (with their noise floors) it already computed for the spot checks."""

    task: Any
    seed: int
    sets: int
    device: str
    outputs: dict[int, Any] = field(default_factory=dict)
    floors: dict[int, Floors] = field(default_factory=dict)

    def forward(self, model: Any, k: int, probe: NoiseProbe | None) -> tuple[Any, Floors | None]:
        """(set k's output, its noise floors); the spot checks' are reused, others queued unsynchronised."""
        if k in self.outputs:
            return self.outputs[k], self.floors.get(k)
        inputs = make_input_set(self.task, timing_set_seed(self.seed, k), self.device, f"timing input set {k}")
        with phase("task", f"Model.forward (timing input set {k})"):
            with torch.no_grad():
                output = model(*inputs)
        return output, probe.floors_if_suspected(inputs, output) if probe is not None else None


def sampled_reference(spec: dict[str, Any], task: Any, model: Any, device: str,
                      probe: NoiseProbe | None = None, timing: TimingSets | None = None) -> dict[str, Any]:
    """The reference's fingerprints (sampled_checks.py): the timing sets' first when the plan asks
    for them and the profile's sets are known, then sampled sets, as many as the budget allows, each
    with its bounds under the spec's tolerance. The sums are queued on the device and copied back at
    the end; the budget's clock waits for the device every few sets."""
    plan = sampled_checks.plan(spec)
    weights = sampled_checks.Weights(plan.seed, device)
    tolerance = compare_job.tolerance_of(spec)
    budget = sampled_checks.Budget(plan.count, plan.min_total, plan.seconds)
    done = 0

    def counted() -> None:
        nonlocal done
        done += 1
        if done % sampled_checks.CLOCK_EVERY == 0:
            synchronize(device)

    timed = None
    if plan.timed and timing is not None:
        pending = sampled_checks.Pending(weights, tolerance)
        while done < timing.sets and budget.more(done):
            output, floors = timing.forward(model, done, probe)
            pending.add(output, floors)
            del output
            counted()
        timed = {"input_sets": timing.sets, "fingerprints": pending.finish()}
    pending = sampled_checks.Pending(weights, tolerance)
    first = done
    while budget.more(done):
        k = done - first
        inputs = make_input_set(task, sampled_checks.sampled_set_seed(plan.seed, k), device, f"sampled check {k}")
        with phase("task", f"Model.forward (sampled check {k})"):
            with torch.no_grad():
                output = model(*inputs)
        pending.add(output, probe.floors_if_suspected(inputs, output) if probe is not None else None)
        del inputs, output
        counted()
    fingerprints = pending.finish()
    section = {"seed": plan.seed, "count": len(fingerprints), "fingerprints": fingerprints,
               "seconds": time.perf_counter() - budget.start}
    if timed is not None:
        section["timed"] = timed
    return section


def spot_expected(spec: dict[str, Any], task: Any, model: Any, device: str, out_dir: str, result: dict[str, Any],
                  keep: Keep, probe: NoiseProbe | None = None) -> TimingSets:
    """spot_expected_{c}.pt for each spot-checked timed call c of the candidate's profile, and
    `min_bytes` (see the module docstring); returns the profile's input sets with the outputs made."""
    timing = require(spec, "timing", dict)
    seed = require(timing, "seed", int)
    warmup = require(timing, "warmup", int)
    iters = require(timing, "iters", int)
    calls = require(timing, "spot_check_calls", list, default=[])
    first = make_input_set(task, timing_set_seed(seed, 0), device, "timing input set 0")
    sets = input_set_count(tensor_bytes(first), warmup + iters)
    result["timing_input_sets"] = sets
    entries = []
    outputs: dict[int, object] = {}
    floors: dict[int, Floors] = {}
    for c in calls:
        k = timed_call_set(c, warmup, sets)
        if k not in outputs:
            inputs = first if k == 0 else make_input_set(task, timing_set_seed(seed, k), device,
                                                         f"timing input set {k}")
            outputs[k] = run_forward(model, inputs, device, f"timed call {c}")
            floors[k] = probe.floors(inputs, outputs[k]) if probe is not None else {}
        key = f"call {c}"
        path = keep(key, os.path.join(out_dir, f"spot_expected_{c}.pt"), outputs[k], floors[k])
        entries.append({"call": c, "input_set": k, "key": key} | ({"path": path} if path else {}))
    result["spot_expected"] = entries
    output = outputs.get(0)
    if output is None:
        output = outputs[0] = run_forward(model, first, device, "timing input set 0")
        floors[0] = probe.floors(first, output) if probe is not None else {}
    result["min_bytes"] = tensor_bytes(first) + tensor_bytes(output)
    return TimingSets(task, seed, sets, device, outputs, floors)
