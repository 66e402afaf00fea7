"""Building the models a job runs: trusted file loading, the candidate's `ModelNew`, the task's `Model`.

Used by the `reference`, `candidate` and `profile` jobs. Every step raises `JobError` with the
protocol's kind for the side that is at fault (`import`/`construct`/`state_dict` for a candidate, `task`
for a reference).

Models are built on the device they run on (inside `torch.device(device)`, so parameter
initialisation runs there: a 32768² Linear takes milliseconds on a GPU and seconds on the CPU); a
constructor that fails there is run again on the CPU, as it was written.

The reference weights travel as a seed, not a file, when the task builds them deterministically: the
reference job writes state_dict.seed.json (the init seed and a checksum per tensor) and each consumer
rebuilds the same weights on its device (`reference_state_dict`); otherwise it writes state_dict.pt.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections import OrderedDict
from typing import Any

import torch

from .errors import JobError, describe, phase
from .guards import count_extension_calls, torch_compute_allowed
from .integrity import checksum
from .nested import as_arg_list

CANDIDATE_MODULES = ("model_new", "cuda_extension")
MAX_KEYS_SHOWN = 8


def load_trusted(path: str) -> Any:
    """torch.load with weights_only=True of a file the judge wrote; failure is an internal error."""
    with phase("internal", f"loading {os.path.basename(path)}"):
        return torch.load(path, map_location="cpu", weights_only=True)


def synchronize(device: str) -> None:
    """Waits for all work on the device (a no-op on the CPU)."""
    if device == "cuda":
        torch.cuda.synchronize()


def import_model_new(candidate_dir: str, extension_dir: str) -> type:
    """Imports candidate_dir/model_new.py as a fresh `model_new` module and returns its ModelNew.

    sys.path starts with extension_dir (cuda_extension.so) then candidate_dir, and stale `model_new` /
    `cuda_extension` modules are dropped first, so the candidate's own files are the ones imported.
    """
    path = os.path.join(candidate_dir, "model_new.py")
    if not os.path.isfile(path):
        raise JobError("import", f"model_new.py not found in {candidate_dir}")
    for name in CANDIDATE_MODULES:
        sys.modules.pop(name, None)
    for folder in (candidate_dir, extension_dir):
        while folder in sys.path:
            sys.path.remove(folder)
    sys.path[:0] = [extension_dir, candidate_dir]
    importlib.invalidate_caches()
    spec = importlib.util.spec_from_file_location("model_new", path)
    assert spec is not None and spec.loader is not None  # a .py file's path always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_new"] = module
    with phase("import", "importing model_new.py"):
        if torch_compute_allowed():
            # Under a policy that lets torch compute, the guard must know that the forward called the
            # candidate's extension (guards.py): its functions are counted before model_new sees them.
            try:
                extension = importlib.import_module("cuda_extension")
            except ImportError:
                extension = None  # model_new's own import fails, or it imports none: no call counts
            if extension is not None:
                count_extension_calls(extension)
        spec.loader.exec_module(module)
    model_class: type | None = getattr(module, "ModelNew", None)
    if model_class is None:
        raise JobError("import", "model_new.py defines no ModelNew")
    return model_class


def construct(model_class: type, init_inputs: list[Any], device: str, kind: str) -> torch.nn.Module:
    """`model_class(*init_inputs).eval().to(device)`, built inside `torch.device(device)` first and on
    the CPU where that raises; a failure on the CPU too is `JobError(kind)`."""
    name = model_class.__name__
    with phase(kind, f"{name}(*init_inputs)"):
        model = None
        if device != "cpu":
            try:
                with torch.device(device):
                    model = model_class(*init_inputs)
            except Exception:  # noqa: BLE001 - written for the CPU: built there below
                model = None
        if model is None:
            model = model_class(*init_inputs)
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"{name} is not a torch.nn.Module")
        return model.eval().to(device)


def _shown(keys: list[str]) -> str:
    if len(keys) <= MAX_KEYS_SHOWN:
        return "[" + ", ".join(keys) + "]"
    return "[" + ", ".join(keys[:MAX_KEYS_SHOWN]) + f", ... (+{len(keys) - MAX_KEYS_SHOWN} more)]"


def load_state_dict_strict(model: torch.nn.Module, state_dict: dict[str, Any], kind: str) -> None:
    """load_state_dict(strict=True); the failure reason lists missing and unexpected keys."""
    name = type(model).__name__
    try:
        model.load_state_dict(state_dict, strict=True)
    except BaseException as exc:  # reported as the model's failure
        try:
            own = set(model.state_dict().keys())
        except BaseException:  # noqa: BLE001 - a broken state_dict() leaves only the message
            own = set(state_dict.keys())
        missing = sorted(own - set(state_dict.keys()))
        unexpected = sorted(set(state_dict.keys()) - own)
        if missing or unexpected:
            reason = (f"{name}.load_state_dict(strict=True) failed: missing keys {_shown(missing)}; "
                      f"unexpected keys {_shown(unexpected)}")
        else:
            reason = f"{name}.load_state_dict(strict=True) raised {describe(exc)}"
        raise JobError(kind, reason) from exc


def build_candidate(candidate_dir: str, extension_dir: str, init_inputs: list[Any], state_dict: dict[str, Any],
                    device: str) -> torch.nn.Module:
    """ModelNew from the candidate's files, with the reference weights loaded strictly."""
    model_class = import_model_new(candidate_dir, extension_dir)
    model = construct(model_class, init_inputs, device, "construct")
    load_state_dict_strict(model, state_dict, "state_dict")
    return model


def build_reference(task: Any, init_inputs: list[Any], state_dict: dict[str, Any] | None,
                    device: str) -> torch.nn.Module:
    """The task's Model; with `state_dict` given, the reference weights are loaded strictly."""
    model = construct(task.Model, init_inputs, device, "task")
    if state_dict is not None:
        load_state_dict_strict(model, state_dict, "task")
    return model


def seeded_reference(task: Any, init_seed: int, device: str) -> tuple[list[Any], torch.nn.Module]:
    """(init_inputs, Model) as the reference job makes them: seed, get_init_inputs(), Model(...)."""
    torch.manual_seed(init_seed)
    with phase("task", "get_init_inputs()"):
        init_inputs = as_arg_list(task.get_init_inputs())
    return init_inputs, build_reference(task, init_inputs, None, device)


def detached_state(model: torch.nn.Module) -> OrderedDict[str, Any]:
    with phase("task", "Model.state_dict()"):
        return OrderedDict((k, v.detach() if isinstance(v, torch.Tensor) else v)
                           for k, v in model.state_dict().items())


def state_checksums(state: dict[str, Any]) -> dict[str, Any]:
    return {k: checksum(v) for k, v in state.items() if isinstance(v, torch.Tensor)}


def seed_file(state_dict_path: str) -> str:
    """Where the reference job leaves the seed instead of state_dict.pt."""
    return os.path.splitext(state_dict_path)[0] + ".seed.json"


def write_reference_weights(task: Any, init_seed: int, state: dict[str, Any], device: str, state_dict_path: str) -> str:
    """Writes the seed file when a second build from the seed gives the same weights, else the
    state_dict on the CPU; returns which ("seed" or "file")."""
    sums = state_checksums(state)
    _, again = seeded_reference(task, init_seed, device)
    same = state_checksums(detached_state(again)) == sums
    del again
    for stale in (state_dict_path, seed_file(state_dict_path)):  # consumers take the .pt first
        if os.path.exists(stale):
            os.remove(stale)
    if same:
        with open(seed_file(state_dict_path), "w") as f:
            json.dump({"init_seed": init_seed, "checksums": sums}, f)
        return "seed"
    torch.save(OrderedDict((k, v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in state.items()),
               state_dict_path)
    return "file"


def reference_state_dict(state_dict_path: str, task: Any, device: str) -> tuple[dict[str, Any], bool]:
    """The reference weights: state_dict.pt when the reference job wrote it, else rebuilt from its
    seed file on `device` and checked against its checksums. Returns (state_dict, private): private
    when the tensors are this function's own (nothing else refers to them)."""
    if os.path.exists(state_dict_path):
        return load_trusted(state_dict_path), False
    meta = load_seed_file(seed_file(state_dict_path))
    _, model = seeded_reference(task, meta["init_seed"], device)
    state = detached_state(model)
    del model
    if state_checksums(state) != meta["checksums"]:
        raise JobError("internal", "the reference weights rebuilt from the init seed differ from the "
                                   "reference job's (the task's Model initialises non-deterministically)")
    return state, True


def load_seed_file(path: str) -> dict[str, Any]:
    with phase("internal", f"loading {os.path.basename(path)}"):
        with open(path) as f:
            meta: dict[str, Any] = json.load(f)
        if not isinstance(meta.get("init_seed"), int) or not isinstance(meta.get("checksums"), dict):
            raise ValueError("init_seed or checksums missing")
        return meta
