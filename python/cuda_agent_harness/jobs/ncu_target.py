"""The `ncu_target` job: the candidate's forward, once, between cudaProfilerStart and cudaProfilerStop.

`cuda-agent profile --ncu` (src/ncu/) runs this job under Nsight Compute with `--profile-from-start off`,
so ncu profiles the kernels of exactly one forward call: the one after `warmup` calls (module loading,
first-touch allocations and lazy initialisation happen in the warm-up, unprofiled). Nothing here is
judged: the job builds the reference weights itself (the task's Model after manual_seed(seed)), loads
them into ModelNew as the judge does — under the judgement's policy rules (the spec's "policy_rules":
under --policy kernelbench by position, models.load_reference_weights) — makes one input set
(get_inputs() after manual_seed(seed + 1)) and reports how the call went. No timing is taken here; the
times ncu measures (clocks locked, kernels replayed) stay in ncu's report and never reach a reward or a
baseline.

The job runs candidate code: the judge contains it like the `candidate` job (its sources, extension and
the task file readable, only its own folder writable).
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import JobError, phase
from ..guards import set_policy_rules
from ..inputs import make_input_set
from ..models import LoadedWeights, build_candidate, detached_state, seeded_reference
from ..nested import as_arg_list
from ..precision import apply_backend_flags
from ..spec import require, require_device
from ..task_module import import_task

MAX_WARMUP = 100


def target(spec: dict[str, Any], device: str) -> tuple[torch.nn.Module, list[Any], LoadedWeights]:
    """ModelNew with the seeded reference weights loaded under the spec's policy rules (as the judge's
    candidate job loads them), the profiled call's input set, and how the weights were loaded. Any
    device: `run` is the CUDA-only job, the tests build the target on the CPU."""
    task_path = require(spec, "task_path", str)
    candidate_dir = require(spec, "candidate_dir", str)
    extension_dir = require(spec, "extension_dir", str)
    seed = require(spec, "seed", int, default=1234)
    set_policy_rules(spec.get("policy_rules"))
    task = import_task(task_path)
    init_inputs, reference = seeded_reference(task, seed, device)
    state = detached_state(reference)
    del reference
    model, loaded = build_candidate(candidate_dir, extension_dir, as_arg_list(init_inputs), state, device)
    del state
    return model, make_input_set(task, seed + 1, device), loaded


def run(spec: dict[str, Any], result: dict[str, Any]) -> None:
    device = require_device(spec)
    if device != "cuda":
        raise JobError("internal", "spec: the ncu target runs on device 'cuda' only")
    warmup = require(spec, "warmup", int, default=3)
    if not 0 <= warmup <= MAX_WARMUP:
        raise JobError("internal", f"spec: warmup must be in [0, {MAX_WARMUP}], not {warmup}")
    result.update({"warmup": warmup, "profiled_calls": 0, "backend_flags": None})
    result["backend_flags"] = apply_backend_flags(spec.get("backend_flags"))
    torch.cuda.init()
    model, inputs, loaded = target(spec, device)
    result.update(loaded.record())

    with torch.no_grad():
        for i in range(warmup):
            with phase("forward", f"warm-up call {i + 1}: ModelNew.forward"):
                model(*inputs)
        with phase("forward", "after the warm-up calls: torch.cuda.synchronize"):
            torch.cuda.synchronize()
        # Only what runs between these two calls is profiled (ncu --profile-from-start off).
        torch.cuda.profiler.start()
        try:
            with phase("forward", "the profiled call: ModelNew.forward"):
                model(*inputs)
                torch.cuda.synchronize()
        finally:
            torch.cuda.profiler.stop()
    result["profiled_calls"] = 1
