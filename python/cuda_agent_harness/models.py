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
WEIGHTS_ALLOWED_WAY = ("keep the model's parameters: same names, or under --policy kernelbench the same shapes "
                       "and dtypes in the same order, entries of ModelNew's own beside them keeping its initialisation")


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


def is_counter(name: str, value: Any) -> bool:
    """BatchNorm's `num_batches_tracked`: an integer counter, not a weight (no forward in eval mode
    reads it), so by position an unmatched one is neither paired nor required, on either side."""
    return (name == "num_batches_tracked" or name.endswith(".num_batches_tracked")) and \
        isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex())


def _key(value: Any) -> tuple[Any, ...] | None:
    """What must agree for two entries to pair: shape and dtype (None: not a tensor, pairs with nothing)."""
    return (tuple(value.shape), value.dtype) if isinstance(value, torch.Tensor) else None


def _in_order(ref_keys: list[Any], own_keys: list[Any], from_the_end: bool) -> list[int]:
    """The indices into own_keys that ref_keys pair with in order (each own entry once, the order kept),
    taking the earliest own entry each time, or with `from_the_end` the latest. It stops at the first
    reference entry left without a partner: a list shorter than ref_keys means there is no such pairing
    (from the start, its length is that entry's index)."""
    refs = list(reversed(ref_keys)) if from_the_end else ref_keys
    owns = list(reversed(own_keys)) if from_the_end else own_keys
    picks: list[int] = []
    j = 0
    for key in refs:
        while j < len(owns) and (key is None or owns[j] != key):
            j += 1
        if j == len(owns):
            break
        picks.append(j)
        j += 1
    if from_the_end:
        return [len(owns) - 1 - n for n in reversed(picks)]
    return picks


class LoadedWeights:
    """How the reference weights went into ModelNew (load_reference_weights): `renaming` (reference name
    -> ModelNew name, the entries paired by position; {} when every loaded entry matched by name), `own`
    (ModelNew's entries the reference has no entry for, which keep ModelNew's own initialisation, in its
    order; only under weights_by_position), `not_loaded` (the reference's unmatched BatchNorm counters,
    `num_batches_tracked`, that ModelNew has no entry for) and `own_values` (exact copies of the `own`
    entries as ModelNew built them, taken before the load)."""

    def __init__(self, renaming: dict[str, str] | None = None, own: dict[str, Any] | None = None,
                 not_loaded: list[str] | None = None):
        self.renaming = dict(renaming or {})
        self.own_values: OrderedDict[str, Any] = OrderedDict(own or {})
        self.own = list(self.own_values)
        self.not_loaded = list(not_loaded or [])

    def state(self, state_dict: dict[str, Any]) -> OrderedDict[str, Any]:
        """The state ModelNew holds right after the load, under its names: the reference's entries
        (renamed where paired by position; the counters in `not_loaded` left out), then ModelNew's own.
        What the weights' checks compare against (integrity.check_weights)."""
        loaded = renamed_state({k: v for k, v in state_dict.items() if k not in self.not_loaded}, self.renaming)
        loaded.update(self.own_values)
        return loaded

    def record(self) -> dict[str, Any]:
        """What a job's result says of it (verify.weights in the JudgeResult): "weights" ("by_position"
        where entries were paired by position, else "by_name"), "weights_renamed" (by position), and
        where not empty "weights_own" (ModelNew's entries that kept its own initialisation) and
        "weights_not_loaded" (the reference's counters ModelNew lacks); each at most MAX_KEYS_SHOWN."""
        out: dict[str, Any] = {"weights": "by_position" if self.renaming else "by_name"}
        if self.renaming:
            out["weights_renamed"] = dict(list(self.renaming.items())[:MAX_KEYS_SHOWN])
        if self.own:
            out["weights_own"] = self.own[:MAX_KEYS_SHOWN]
        if self.not_loaded:
            out["weights_not_loaded"] = self.not_loaded[:MAX_KEYS_SHOWN]
        return out


# The keys of LoadedWeights.record(), in a job's result and the profile job's WEIGHTS_FILE.
WEIGHTS_KEYS = ("weights", "weights_renamed", "weights_own", "weights_not_loaded")


def match_by_position(reference: dict[str, Any], own: dict[str, Any]) -> tuple[dict[str, str], list[str], list[str]]:
    """Pairs the state_dict entries whose names differ by position, for KernelBench's rules: KernelBench
    builds Model and ModelNew under one seed and never moves weights, so a ModelNew that registers the
    same tensors under other names, or has entries of its own beside them, passes there.

    The unmatched entries of each side are taken in state_dict (registration) order, unmatched BatchNorm
    counters (`num_batches_tracked`, is_counter) left out on both sides. With as many on each side, they
    pair one to one (each pair of one shape and dtype). Where ModelNew has more, the reference's pair in
    order with ModelNew's entries of the same shape and dtype, and the rest of ModelNew's keep its own
    initialisation; that pairing must be the only one (the earliest and the latest in-order pairing
    agree), else it is ambiguous and refused. Where the reference has more, it is refused: every weight
    of the reference must reach ModelNew.

    Returns (renaming: {reference name: ModelNew name}, ModelNew's entries kept as its own, in its order
    (its unmatched counters included), the reference's counters not loaded). Raises ValueError saying
    what differs: the counts, the first pair or entry whose shape or dtype differs, or the ambiguity."""
    ref_only = [k for k in reference if k not in own]
    own_only = [k for k in own if k not in reference]
    not_loaded = [k for k in ref_only if is_counter(k, reference[k])]
    ref_rest = [k for k in ref_only if k not in not_loaded]
    own_rest = [k for k in own_only if not is_counter(k, own[k])]
    if len(ref_rest) > len(own_rest):
        raise ValueError(f"by position, the reference's {len(ref_rest)} unmatched entries {_shown(ref_rest)} "
                         f"against ModelNew's {len(own_rest)} {_shown(own_rest)}: another count (ModelNew "
                         "lacks some of the reference's weights; every one must have its place in ModelNew)")
    if len(ref_rest) == len(own_rest):
        for ref_name, own_name in zip(ref_rest, own_rest, strict=True):
            a, b = reference[ref_name], own[own_name]
            if _key(a) is None or _key(a) != _key(b):
                raise ValueError(f"by position, the reference's {ref_name} ({_entry(a)}) pairs with ModelNew's "
                                 f"{own_name} ({_entry(b)}): another shape or dtype")
        paired = own_rest
    else:
        ref_keys = [_key(reference[k]) for k in ref_rest]
        own_keys = [_key(own[k]) for k in own_rest]
        first = _in_order(ref_keys, own_keys, from_the_end=False)
        if len(first) < len(ref_rest):
            i = len(first)
            raise ValueError(f"by position, the reference's {ref_rest[i]} ({_entry(reference[ref_rest[i]])}) "
                             f"finds no entry of its shape and dtype in order among ModelNew's {len(own_rest)} "
                             f"unmatched {_shown(own_rest)}")
        last = _in_order(ref_keys, own_keys, from_the_end=True)  # complete: a pairing exists
        if first != last:
            i = next(n for n in range(len(first)) if first[n] != last[n])
            raise ValueError(f"by position, the reference's {ref_rest[i]} ({_entry(reference[ref_rest[i]])}) "
                             f"could pair with ModelNew's {own_rest[first[i]]} or {own_rest[last[i]]}: "
                             "ambiguous (give ModelNew's entry the reference's name, or its own entries "
                             "shapes the reference's do not have)")
        paired = [own_rest[n] for n in first]
    renaming = dict(zip(ref_rest, paired, strict=True))
    taken = set(paired)
    return renaming, [k for k in own_only if k not in taken], not_loaded


def renamed_state(state_dict: dict[str, Any], renaming: dict[str, str]) -> OrderedDict[str, Any]:
    """`state_dict` with its keys renamed (`renaming`: reference name -> ModelNew name), in its order."""
    return OrderedDict((renaming.get(k, k), v) for k, v in state_dict.items())


def load_reference_weights(model: torch.nn.Module, state_dict: dict[str, Any], by_position: bool) -> LoadedWeights:
    """Loads the reference weights into ModelNew strictly by name; failing that, with `by_position` (the
    policy's weights_by_position), as match_by_position pairs them: the reference's entries under
    ModelNew's names and ModelNew's own entries as it built them, strictly (every entry of ModelNew's
    given). Failures are JobError("state_dict") naming the allowed way."""
    name_keys = set(state_dict)
    try:
        own = OrderedDict(torch.nn.Module.state_dict(model))
    except BaseException:  # noqa: BLE001 - load_state_dict_strict reports it
        own = None
    if not by_position or own is None or set(own) == name_keys:
        load_state_dict_strict(model, state_dict, "state_dict", f" ({WEIGHTS_ALLOWED_WAY})")
        return LoadedWeights()
    try:
        renaming, kept, not_loaded = match_by_position(state_dict, own)
    except ValueError as exc:
        missing = sorted(set(own) - name_keys)
        unexpected = sorted(name_keys - set(own))
        raise JobError("state_dict", f"{type(model).__name__}.load_state_dict(strict=True) failed: missing keys "
                                     f"{_shown(missing)}; unexpected keys {_shown(unexpected)}; {exc} "
                                     f"({WEIGHTS_ALLOWED_WAY})") from None
    own_values = OrderedDict((k, own[k].detach().clone() if isinstance(own[k], torch.Tensor) else own[k])
                             for k in kept)
    loaded = LoadedWeights(renaming, own_values, not_loaded)
    load_state_dict_strict(model, loaded.state(state_dict), "state_dict", f" ({WEIGHTS_ALLOWED_WAY})")
    return loaded


def build_candidate(candidate_dir: str, extension_dir: str, init_inputs: list[Any], state_dict: dict[str, Any],
                    device: str, by_position: bool | None = None) -> tuple[torch.nn.Module, LoadedWeights]:
    """ModelNew from the candidate's files, with the reference weights loaded strictly: by name, or where
    the policy allows (`by_position`; None: the job's policy_rules) by position. Returns the model and how
    the weights were loaded (LoadedWeights): the weights' checks compare against its `state`, under
    ModelNew's names with ModelNew's own entries."""
    model_class = import_model_new(candidate_dir, extension_dir)
    model = construct(model_class, init_inputs, device, "construct")
    if by_position is None:
        by_position = weights_by_position_allowed()
    return model, load_reference_weights(model, state_dict, by_position)


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
