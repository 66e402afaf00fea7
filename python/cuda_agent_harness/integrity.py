"""Checks on what the candidate's forward returned and touched, and NaN poisoning of free memory.

- `check_output` (HACKS.md A3, B7): every tensor of the output is a plain, dense `torch.Tensor` on the
  expected device with storage of its own: no subclass, no `__torch_function__` object, no self-overlapping
  view (an `expand`ed zero stride), and no storage shared with an input, a parameter or a buffer.
  Failure: JobError("bad_output").
- `Frozen` (HACKS.md B8): exact copies (on the device when memory allows, else SHA-256 digests) of named
  tensors, to tell afterwards whether inputs or weights changed. Comparison is bitwise, so NaN == NaN.
- `poison_free_memory` (HACKS.md B1): fills memory the allocator will hand out next with NaN, so an
  output that is never written holds NaN rather than whatever happened to be there.
- `EarlierOutputs` and `ModelState` (HACKS.md B4, A5; the run-time side of the static rules
  static_state and module_state): earlier calls' outputs are kept alive (within a budget) and a new
  output may not share their memory (a cache keyed by pointer, a stale buffer: `bad_output`); the
  model's attributes (every submodule's `__dict__`, and the items of its dicts, lists and sets) must be
  the same objects after a forward as before it (a cache or a call counter on self: `module_state`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from typing import Any, NoReturn

import torch

from .errors import JobError
from .nested import dtype_name
from .spec import caching_allocator_off

# Leaves an output may hold besides tensors (what torch.load(weights_only=True) can bring back anyway).
SCALAR_TYPES = (int, float, bool, complex, str, bytes, type(None), torch.dtype, torch.device, torch.layout,
                torch.memory_format)

GIB = 1 << 30
CUDA_POISON_CAP = 8 * GIB          # at most this much of the large pool, and a quarter of free memory
CUDA_POISON_FLOOR = 512 << 20      # the large block: this much plus a few times what the job needs,
CUDA_POISON_PER_HINT_BYTE = 4      # so that eight judgements at once leave the GPU room for their work
CUDA_SMALL_POISON = 64 << 20       # the small pool (blocks <= 1 MiB) is separate: poison some of it too
CUDA_POISON_HOLD = GIB             # a job keeps this much unused cache between checks, to refill it
CPU_POISON_CAP = 32 << 20        # glibc's largest mmap threshold: bigger chunks go back to the OS
DIGEST_CHUNK_BYTES = 64 << 20


# ---------------------------------------------------------------------------------------------------
# Output validity


def _defines_torch_function(value: Any) -> bool:
    """Whether the type of `value` has a `__torch_function__` (looked up statically: no candidate code)."""
    return any("__torch_function__" in vars(klass) for klass in type(value).__mro__)


def _children(value: Any) -> Iterator[tuple[str, Any]] | None:
    """(path suffix, child) of a tuple/list/dict, read without calling any override; None for leaves.

    Types are tested with type(), never isinstance(), which an object can fool through `__class__`."""
    kind = type(value)
    if issubclass(kind, tuple):
        return ((f"[{i}]", v) for i, v in enumerate(tuple.__iter__(value)))
    if issubclass(kind, list):
        return ((f"[{i}]", v) for i, v in enumerate(list.__iter__(value)))
    if issubclass(kind, dict):
        return ((f"[{k!r}]", v) for k, v in dict.items(value))
    return None


def storage_range(t: torch.Tensor) -> tuple[int, int] | None:
    """[start, end) bytes of the storage behind `t`; None when it has none (or is not strided)."""
    if t.layout != torch.strided or t.device.type == "meta":
        return None
    storage = t.untyped_storage()
    if storage.nbytes() == 0:
        return None
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def has_internal_overlap(t: torch.Tensor) -> bool:
    """Whether two indices of `t` address the same element (a zero stride, or overlapping strides)."""
    dims = sorted((abs(stride), size) for size, stride in zip(t.shape, t.stride(), strict=True) if size > 1)
    extent = 1  # elements spanned by the dimensions with smaller strides
    for stride, size in dims:
        if stride < extent:
            return True
        extent = stride * (size - 1) + extent
    return False


def _needed_bytes(t: torch.Tensor) -> int:
    """Bytes from the storage's start to the end of the last element of `t`."""
    if t.numel() == 0:
        return 0
    last = t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True))
    return int((last + 1) * t.element_size())


def _check_tensor(t: torch.Tensor, path: str, device: str,
                  protected: list[tuple[str, tuple[str, tuple[int, int]]]]) -> None:
    def bad(why: str) -> NoReturn:
        raise JobError("bad_output", f"{path}: {why}")

    if type(t) is not torch.Tensor:
        bad(f"a {type(t).__name__} (a torch.Tensor subclass), not a plain torch.Tensor")
    if t.device.type != device:
        bad(f"on device {t.device.type}, expected {device}")
    if t.layout != torch.strided:
        bad(f"layout {t.layout} is not allowed: outputs must be dense tensors")
    if t.numel() == 0:
        return
    where = storage_range(t)
    if where is None:
        bad(f"Tensor[{dtype_name(t.dtype)}]{tuple(t.shape)} has no storage")
    if _needed_bytes(t) > where[1] - where[0]:
        bad("its sizes and strides reach past the end of its storage")
    if has_internal_overlap(t):
        bad(f"a self-overlapping view (strides {tuple(t.stride())} for sizes {tuple(t.shape)}, as from "
            f"expand): an output must hold every element in memory of its own")
    for label, (other_device, (lo, hi)) in protected:
        if other_device == t.device.type and where[0] < hi and lo < where[1]:
            bad(f"shares memory with {label}: an output must be a new tensor, not an input, a weight, "
                f"an earlier output or a view of one")


def protected_ranges(named: list[tuple[str, torch.Tensor]]) -> list[tuple[str, tuple[str, tuple[int, int]]]]:
    """(label, (device type, storage range)) of each tensor that has storage."""
    found = []
    for label, t in named:
        where = storage_range(t)
        if where is not None:
            found.append((label, (t.device.type, where)))
    return found


def check_output(value: Any, device: str, protected: list[tuple[str, torch.Tensor]],
                 path: str = "output") -> None:
    """Raises JobError("bad_output") for the first leaf of `value` that is not a valid output tensor.

    `protected` holds (label, tensor) pairs whose storage an output must not share (inputs, weights).
    """
    ranges = protected_ranges(protected)
    _check_value(value, path, device, ranges)


def _check_value(value: Any, path: str, device: str, ranges: list[Any]) -> None:
    if issubclass(type(value), torch.Tensor):
        _check_tensor(value, path, device, ranges)
        return
    children = _children(value)
    if children is not None:
        for suffix, child in children:
            _check_value(child, path + suffix, device, ranges)
        return
    if type(value) in SCALAR_TYPES:
        return
    if _defines_torch_function(value):
        raise JobError("bad_output", f"{path}: a {type(value).__name__} object with __torch_function__, "
                                     f"not a plain torch.Tensor")
    raise JobError("bad_output", f"{path}: a {type(value).__name__} object, not a tensor, a tuple, list or "
                                 f"dict, or a plain scalar")


class EarlierOutputs:
    """The tensors of earlier calls' outputs, labelled, kept alive while they fit in `budget_bytes` (so
    their memory cannot be handed out again, and a new output in it is one returned before)."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = budget_bytes
        self.kept_bytes = 0
        self.named: list[tuple[str, torch.Tensor]] = []

    def add(self, output: Any, label: str) -> None:
        tensors = [(f"{label}{suffix}", t) for suffix, t in _leaf_tensors(output, "")]
        size = sum(t.numel() * t.element_size() for _, t in tensors)
        if self.kept_bytes + size <= self.budget_bytes:
            self.kept_bytes += size
            self.named += tensors


def _leaf_tensors(value: Any, path: str) -> Iterator[tuple[str, torch.Tensor]]:
    if type(value) is torch.Tensor:
        yield path, value
        return
    children = _children(value)
    if children is not None:
        for suffix, child in children:
            yield from _leaf_tensors(child, path + suffix)


class ModelState:
    """The model's attributes as they were: for every submodule, its `__dict__` entries, and the
    globals of the candidate's module (`model_new`, dunder names aside: Python keeps its own there);
    for plain dicts, lists and sets among them, their items too (read with the builtin types' own
    methods)."""

    def __init__(self, model: torch.nn.Module, source: Any = None):
        self.model = model
        self.source = source  # the model_new module, when there is one
        self.before = self._take()

    def _take(self) -> dict[tuple[str, str], tuple[Any, tuple[Any, ...] | None]]:
        state = {}
        for prefix, module in torch.nn.Module.named_modules(self.model):
            for key, value in list(vars(module).items()):
                state[(prefix or type(self.model).__name__, key)] = (value, self._items(value))
        if self.source is not None:
            for key, value in list(vars(self.source).items()):
                if not (key.startswith("__") and key.endswith("__")):
                    state[(self.source.__name__, key)] = (value, self._items(value))
        return state

    @staticmethod
    def _items(value: Any) -> tuple[Any, ...] | None:
        """The items of a plain dict (keys and values), list or set, read without any override."""
        kind = type(value)
        if issubclass(kind, dict):
            return tuple(x for pair in dict.items(value) for x in pair)
        if issubclass(kind, list):
            return tuple(list.__iter__(value))
        if issubclass(kind, set):
            return tuple(set.__iter__(value))
        return None

    @staticmethod
    def _same(a: tuple[Any, ...] | None, b: tuple[Any, ...] | None) -> bool:
        if a is None or b is None:
            return a is b
        return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))

    def differences(self) -> list[str]:
        now = self._take()
        found = []
        for (owner, key), (value, items) in self.before.items():
            if (owner, key) not in now:
                found.append(f"{owner}.{key} was deleted")
                continue
            value_now, items_now = now[(owner, key)]
            if value_now is not value:
                found.append(f"{owner}.{key} was replaced")
            elif not self._same(items, items_now):
                found.append(f"{owner}.{key} changed (a {type(value).__name__} of {len(value)} entries)")
        for owner, key in now.keys() - self.before.keys():
            found.append(f"{owner}.{key} was added")
        return found

    def check(self, what: str) -> None:
        """Raises JobError("module_state") when the model's attributes changed."""
        changed = self.differences()
        if changed:
            raise JobError("module_state", f"{what}: the forward changed the model's state ({summarize(changed)}); "
                                           f"a forward must keep nothing between calls (make streams, buffers "
                                           f"and handles in __init__ and reuse them unchanged)")


# ---------------------------------------------------------------------------------------------------
# Inputs and weights left untouched


def _bits(t: torch.Tensor) -> torch.Tensor:
    """`t` reinterpreted as integers of the same width, so equality is bitwise (NaN equals itself)."""
    if t.is_complex():
        t = torch.view_as_real(t)
    by_size = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        target = by_size.get(t.element_size())
        if target is not None:
            return t.view(target)
    return t


def _meta(t: torch.Tensor) -> tuple[Any, ...]:
    return (t.dtype, tuple(t.shape), t.layout)


def _describe_meta(meta: tuple[Any, ...]) -> str:
    dtype, shape, _ = meta
    return f"Tensor[{dtype_name(dtype)}]{shape}"


def digest(t: torch.Tensor) -> str:
    """SHA-256 of the bytes of `t` (in row-major order), computed on the CPU chunk by chunk."""
    h = hashlib.sha256()
    flat = t.detach().reshape(-1)
    step = max(1, DIGEST_CHUNK_BYTES // max(1, t.element_size()))
    for start in range(0, flat.numel(), step):
        chunk = flat[start:start + step].to("cpu").contiguous()
        if chunk.is_complex():
            chunk = torch.view_as_real(chunk).contiguous()
        h.update(chunk.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


CHECKSUM_CHUNK = 1 << 26
CHECKSUM_MODULUS = 65521


def checksum(t: torch.Tensor) -> list[int]:
    """Two sums over the bits of `t` where it lives (the GPU: fast for gigabytes, unlike digest()):
    of the values read as integers of their width, and of each times (its index mod 65521) + 1, in
    int64 arithmetic that wraps alike in every process on one device. Tells
    weights made from another random stream apart; not meant to resist a forger (its inputs are ours)."""
    flat = _bits(t.detach().contiguous()).reshape(-1)
    total = weighted = 0
    for start in range(0, flat.numel(), CHECKSUM_CHUNK):
        part = flat[start:start + CHECKSUM_CHUNK].to(torch.int64)
        index = torch.arange(start, start + part.numel(), device=part.device) % CHECKSUM_MODULUS + 1
        total += int(part.sum())
        weighted += int((part * index).sum())
    return [total, weighted]


class Frozen:
    """Named tensors as they were, kept as exact copies on `device` within `budget_bytes`, else digests."""

    def __init__(self, named: list[tuple[str, torch.Tensor]], device: str, budget_bytes: int):
        total = sum(t.numel() * t.element_size() for _, t in named)
        self.copies = total <= budget_bytes
        self.meta = {name: _meta(t) for name, t in named}
        self.values: dict[str, torch.Tensor | str] = {}
        for name, t in named:
            if self.copies:
                self.values[name] = t.detach().to(device, copy=True)
            else:
                self.values[name] = digest(t)

    def differences(self, named: list[tuple[str, torch.Tensor]]) -> list[str]:
        """Descriptions of what differs: missing or new names, another dtype/shape, other values."""
        found = []
        current = dict(named)
        for name in self.meta:
            if name not in current:
                found.append(f"{name} is missing")
        for name, t in named:
            if name not in self.meta:
                found.append(f"{name} is new")
            elif _meta(t) != self.meta[name]:
                found.append(f"{name} is now {_describe_meta(_meta(t))}, was "
                             f"{_describe_meta(self.meta[name])}")
            elif not self._same_values(name, t):
                found.append(f"{name} holds other values")
        return found

    def _same_values(self, name: str, t: torch.Tensor) -> bool:
        kept = self.values[name]
        if isinstance(kept, str):
            return digest(t) == kept
        if t.device != kept.device:
            t = t.detach().to(kept.device)
        return torch.equal(_bits(t.detach()), _bits(kept))


    @classmethod
    def adopt(cls, named: list[tuple[str, torch.Tensor]]) -> Frozen:
        """A Frozen that keeps the given tensors themselves as the copies (they must stay private)."""
        frozen = cls([], "cpu", 0)
        frozen.copies = True
        frozen.meta = {name: _meta(t) for name, t in named}
        frozen.values = dict(named)
        return frozen


def frozen_budget(device: str) -> int:
    """Bytes of exact copies a Frozen may keep: a quarter of free device memory, 4 GiB on the CPU."""
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return free // 4
    return 4 * GIB


def summarize(differences: list[str], limit: int = 3) -> str:
    shown = "; ".join(differences[:limit])
    if len(differences) > limit:
        shown += f"; and {len(differences) - limit} more"
    return shown


def model_weights(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The model's state_dict tensors as (name, tensor), read with nn.Module's own state_dict()."""
    return [(n, t) for n, t in torch.nn.Module.state_dict(model).items() if isinstance(t, torch.Tensor)]


def weight_tensors(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """Parameters, buffers and state_dict tensors, labelled for messages (outputs must not share them)."""
    found: list[tuple[str, torch.Tensor]] = [(f"parameter '{n}'", p) for n, p in model.named_parameters()]
    found += [(f"buffer '{n}'", b) for n, b in model.named_buffers()]
    return found + [(f"weight '{n}'", t) for n, t in model_weights(model)]


def reference_weights(state_dict: dict[str, Any], device: str, private: bool = False) -> Frozen:
    """The reference state_dict frozen on `device`: its own tensors when `private` (rebuilt from the
    seed by this job, referred to by nothing else) and on the device, else copies within the budget."""
    named = [(n, t) for n, t in state_dict.items() if isinstance(t, torch.Tensor)]
    if private and all(t.device.type == torch.device(device).type for _, t in named):
        return Frozen.adopt(named)
    return Frozen(named, device, frozen_budget(device))


def check_weights(frozen: Frozen, model: torch.nn.Module, when: str) -> None:
    """Raises JobError("mutated_weights") when the model's state_dict differs from `frozen`."""
    differences = frozen.differences(model_weights(model))
    if differences:
        raise JobError("mutated_weights", f"{when}: the model's state_dict differs from the reference "
                                          f"weights: {summarize(differences)} (weights must stay exactly "
                                          f"as loaded)")


# ---------------------------------------------------------------------------------------------------
# NaN poisoning


def poison_free_memory(device: str, hint_bytes: int = 0, fill: float = math.nan) -> int:
    """Fills memory that the next allocations will reuse with NaN (or `fill`); returns the bytes poisoned.

    A second fill value matters: fmaxf/fminf drop NaN, so a max-reduction that reads uninitialised
    memory passes under NaN and fails under a huge finite value (POISON_HUGE, HACKS B12).

    CUDA: the caching allocator is emptied (fully free segments go back), then NaN blocks are allocated:
    one sized by the job's need (`cuda_poison_bytes`: 512 MiB plus 4 × `hint_bytes`, the inputs and
    outputs of a call; at most a quarter of free memory and 8 GiB), then one of exactly the size of
    every free block left in partly used segments (read from the allocator's snapshot, so every
    fragment is taken without probing), then the small pool up to 64 MiB of poison; all are freed again.
    They stay cached, so the candidate's next allocations on this stream are carved out of NaN.
    Refilled in place instead (the next check's poisoning, after `release_poison` kept the cache): when
    the cache already holds a free large block of the job's need and every free block of it is one this
    stream can be handed (none of another stream's segment, none waiting for another stream's events),
    nothing goes back and every free block is filled again — the same NaN everywhere an allocation can
    land, without the driver's calls (about 70 allocations and frees per check) that every CUDA process
    on the host waits in line for (issue 20).
    CPU: best effort. Chunks of many sizes (64 B to 1 MiB, and one of `hint_bytes`, at most 32 MiB) are
    filled with NaN and freed; malloc hands recently freed chunks out first, but returns chunks above its
    mmap threshold to the OS (fresh pages read as zeros, which fail a check as surely as NaN), and its own
    bookkeeping overwrites a chunk's first bytes.
    """
    if device == "cuda":
        return _poison_cuda(fill, hint_bytes)
    return _poison_cpu(hint_bytes, fill)


POISON_HUGE = 3.0e38  # finite, near float32's largest


def _poison_block(nbytes: int, device: str, fill: float = math.nan) -> torch.Tensor:
    return torch.empty(max(1, nbytes // 4), dtype=torch.float32, device=device).fill_(fill)


SMALL_REQUEST_MAX = 1 << 20  # the allocator serves requests up to 1 MiB from the small pool
SNAPSHOT_PASSES = 3          # fills of the free blocks the allocator reports, until none is left


def _free_blocks() -> list[tuple[str, int]]:
    """(pool, size) of every free block of the caching allocator that an allocation on the current stream
    can be handed: inactive blocks of the current stream's segments (a block waiting for another stream's
    events, or of another stream's segment, is not handed out here)."""
    return _cache_survey()[0]


def _cache_survey() -> tuple[list[tuple[str, int]], bool]:
    """The current stream's free blocks (as `_free_blocks`), and whether the cache holds free memory that
    a fill on this stream cannot reach: an inactive block of another stream's segment, or a block whose
    free waits for another stream's events (either could later be handed out holding old values)."""
    stream = torch.cuda.current_stream().cuda_stream
    device = torch.cuda.current_device()
    blocks, unreachable = [], False
    for segment in torch.cuda.memory_snapshot():
        if segment.get("device", device) != device:
            continue
        states = [b["state"] for b in segment["blocks"]]
        if segment.get("stream", stream) != stream:
            unreachable = unreachable or any(state != "active_allocated" for state in states)
            continue
        unreachable = unreachable or any(state not in ("inactive", "active_allocated") for state in states)
        pool = "small" if segment.get("segment_type") == "small" else "large"
        blocks += [(pool, b["size"]) for b in segment["blocks"] if b["state"] == "inactive"]
    return blocks, unreachable


def _requests(blocks: list[tuple[str, int]]) -> list[int]:
    """Allocation sizes that take exactly those blocks, largest first: best fit then hands each request a
    block of its own size, so nothing is split and no pool grows. Small-pool blocks above 1 MiB (a wholly
    free segment) are taken 1 MiB at a time; a large-pool block of 1 MiB or less cannot be handed out by
    the allocator at all, so it needs no poison."""
    sizes = []
    for pool, size in blocks:
        if pool == "small":
            while size > 0:
                sizes.append(min(size, SMALL_REQUEST_MAX))
                size -= sizes[-1]
        elif size > SMALL_REQUEST_MAX:
            sizes.append(size)
    return sorted(sizes, reverse=True)


def _fill_free_blocks(fill: float, blocks: list[tuple[str, int]] | None = None) -> list[torch.Tensor]:
    """Poison blocks for every free block of the allocator's cache (read from its snapshot, or `blocks`
    when the caller has just read them)."""
    taken: list[torch.Tensor] = []
    for _ in range(SNAPSHOT_PASSES):
        sizes = _requests(blocks if blocks is not None else _free_blocks())
        blocks = None
        if not sizes:
            break
        taken += [_poison_block(size, "cuda", fill) for size in sizes]
    return taken


def cuda_poison_bytes(free: int, hint_bytes: int) -> int:
    """The large NaN block: enough for what a call allocates (its outputs and intermediates come out of
    it; an allocation beyond it gets fresh memory from the driver, never a block this process wrote
    before), never more than a quarter of free memory or 8 GiB. A block of free/4 in every job once
    ran a GPU out of memory with eight judgements at once: each process keeps its poison cached
    through the check."""
    return max(1, min(_poison_need(hint_bytes), free // 4))


def _poison_need(hint_bytes: int) -> int:
    """The large block a job needs, before free memory is asked: 512 MiB plus 4 × `hint_bytes`, at most
    8 GiB."""
    return min(CUDA_POISON_FLOOR + CUDA_POISON_PER_HINT_BYTE * max(0, hint_bytes), CUDA_POISON_CAP)


def release_poison(device: str) -> None:
    """After a check: gives the cache back to the device when it holds more than CUDA_POISON_HOLD unused
    (a large job's poison, or the candidate's freed intermediates), so that the GPU's memory is not held by
    a job that is saving; the usual poison (512 MiB and the small pool's 64 MiB) stays cached for the next
    check to refill in place (`poison_free_memory`)."""
    if device != "cuda":
        return  # nothing to give back without the caching allocator
    if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > CUDA_POISON_HOLD:
        torch.cuda.empty_cache()


def _poison_cuda(fill: float, hint_bytes: int) -> int:
    if caching_allocator_off():
        # No cache to poison (the judge's compute-sanitizer run): every allocation is a fresh
        # cudaMalloc, and the sanitizer itself watches reads of uninitialised memory.
        return 0
    torch.cuda.synchronize()
    blocks: list[torch.Tensor] = []
    free_blocks: list[tuple[str, int]] | None
    free_blocks, unreachable = _cache_survey()
    largest = max((size for pool, size in free_blocks if pool == "large"), default=0)
    if unreachable or largest < _poison_need(hint_bytes):
        # Afresh: the fully free segments go back (partly used ones keep their fragments, filled below),
        # then the large block is allocated.
        torch.cuda.empty_cache()
        free, _ = torch.cuda.mem_get_info()
        blocks.append(_poison_block(cuda_poison_bytes(free, hint_bytes), "cuda", fill))
        free_blocks = None
    # Else refilled in place: the cache holds a large block as big as the job needs and no free memory
    # the fill cannot reach; the fill takes every free block again without asking the driver for any.
    filled = _fill_free_blocks(fill, free_blocks)
    small = sum(b.numel() * 4 for b in filled if b.numel() * 4 <= SMALL_REQUEST_MAX)
    blocks += filled
    top_up = -(-max(0, CUDA_SMALL_POISON - small) // (1 << 20))  # whole MiB of the small pool
    blocks += [_poison_block(1 << 20, "cuda", fill) for _ in range(top_up)]
    torch.cuda.synchronize()
    total = sum(b.numel() * 4 for b in blocks)
    del blocks
    return total


def _poison_cpu(hint_bytes: int, fill: float) -> int:
    blocks = []
    size = 64
    while size <= (1 << 20):
        blocks += [_poison_block(size, "cpu", fill) for _ in range(8)]
        size *= 4
    large = min(hint_bytes, CPU_POISON_CAP)
    if large > 0:
        blocks.append(_poison_block(large, "cpu", fill))
    total = sum(b.numel() * 4 for b in blocks)
    # Free the most recently allocated first, so the chunks of the smallest sizes are handed out first.
    while blocks:
        blocks.pop()
    return total
