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
from .guards import count_extension_calls, torch_compute_allowed, weights_by_position_allowed
from .integrity import checksum
from .nested import as_arg_list

CANDIDATE_MODULES = ("model_new", "cuda_extension")
MAX_KEYS_SHOWN = 8
# The profile job's record of how it loaded the weights (weights_record), in its output folder when it
# verifies before it is timed: the judge reads it once the checks are marked done.
WEIGHTS_FILE = "weights.json"
WEIGHTS_ALLOWED_WAY = ("keep the model's parameters: same names, or under --policy kernelbench the same number "
                       "and shapes in the same order")


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


def load_state_dict_strict(model: torch.nn.Module, state_dict: dict[str, Any], kind: str, hint: str = "") -> None:
    """load_state_dict(strict=True); the failure reason lists missing and unexpected keys (then `hint`)."""
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
                      f"unexpected keys {_shown(unexpected)}{hint}")
        else:
            reason = f"{name}.load_state_dict(strict=True) raised {describe(exc)}"
        raise JobError(kind, reason) from exc


def _entry(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    return type(value).__name__


def match_by_position(reference: dict[str, Any], own: dict[str, Any]) -> dict[str, str]:
    """{reference name: ModelNew name} for the state_dict entries whose names differ, paired in their
    state_dict (registration) order: KernelBench builds Model and ModelNew under one seed and never moves
    weights, so a ModelNew that registers the same tensors under other names passes there. Raises
    ValueError saying what differs: the counts of the unmatched entries, or the first pair whose shape or
    dtype differs."""
    ref_only = [k for k in reference if k not in own]
    own_only = [k for k in own if k not in reference]
    if len(ref_only) != len(own_only):
        raise ValueError(f"by position, the reference's {len(ref_only)} unmatched entries {_shown(ref_only)} "
                         f"against ModelNew's {len(own_only)} {_shown(own_only)}: another count")
    for ref_name, own_name in zip(ref_only, own_only, strict=True):
        a, b = reference[ref_name], own[own_name]
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape or \
                a.dtype != b.dtype:
            raise ValueError(f"by position, the reference's {ref_name} ({_entry(a)}) pairs with ModelNew's "
                             f"{own_name} ({_entry(b)}): another shape or dtype")
    return dict(zip(ref_only, own_only, strict=True))


def renamed_state(state_dict: dict[str, Any], renaming: dict[str, str]) -> OrderedDict[str, Any]:
    """`state_dict` with its keys renamed (`renaming`: reference name -> ModelNew name), in its order."""
    return OrderedDict((renaming.get(k, k), v) for k, v in state_dict.items())


def load_reference_weights(model: torch.nn.Module, state_dict: dict[str, Any], by_position: bool) -> dict[str, str]:
    """Loads the reference weights into ModelNew strictly by name; failing that, with `by_position` (the
    policy's weights_by_position), by position (match_by_position) and strictly under ModelNew's names.
    Returns the renaming ({} when loaded by name); failures are JobError("state_dict") naming the
    allowed way."""
    name_keys = set(state_dict)
    try:
        own = OrderedDict(torch.nn.Module.state_dict(model))
    except BaseException:  # noqa: BLE001 - load_state_dict_strict reports it
        own = None
    if not by_position or own is None or set(own) == name_keys:
        load_state_dict_strict(model, state_dict, "state_dict", f" ({WEIGHTS_ALLOWED_WAY})")
        return {}
    try:
        renaming = match_by_position(state_dict, own)
    except ValueError as exc:
        missing = sorted(set(own) - name_keys)
        unexpected = sorted(name_keys - set(own))
        raise JobError("state_dict", f"{type(model).__name__}.load_state_dict(strict=True) failed: missing keys "
                                     f"{_shown(missing)}; unexpected keys {_shown(unexpected)}; {exc} "
                                     f"({WEIGHTS_ALLOWED_WAY})") from None
    load_state_dict_strict(model, renamed_state(state_dict, renaming), "state_dict", f" ({WEIGHTS_ALLOWED_WAY})")
    return renaming


def build_candidate(candidate_dir: str, extension_dir: str, init_inputs: list[Any], state_dict: dict[str, Any],
                    device: str, by_position: bool | None = None) -> tuple[torch.nn.Module, dict[str, str]]:
    """ModelNew from the candidate's files, with the reference weights loaded strictly: by name, or where
    the policy allows (`by_position`; None: the job's policy_rules) by position. Returns the model and the
    renaming of the reference's names to ModelNew's ({} when loaded by name): the weights' checks compare
    under ModelNew's names (renamed_state)."""
    model_class = import_model_new(candidate_dir, extension_dir)
    model = construct(model_class, init_inputs, device, "construct")
    if by_position is None:
        by_position = weights_by_position_allowed()
    return model, load_reference_weights(model, state_dict, by_position)


def weights_record(renaming: dict[str, str]) -> dict[str, Any]:
    """What a job's result says of how the weights were loaded: "weights" ("by_name" or "by_position") and,
    by position, "weights_renamed" (reference name -> ModelNew name, the first MAX_KEYS_SHOWN)."""
    if not renaming:
        return {"weights": "by_name"}
    return {"weights": "by_position", "weights_renamed": dict(list(renaming.items())[:MAX_KEYS_SHOWN])}


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
