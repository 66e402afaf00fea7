"""Tests of the output, input and weight checks, and of NaN poisoning (integrity.py)."""

import math

import pytest
import torch

from cuda_agent_harness.errors import JobError
from cuda_agent_harness.integrity import (
    GIB,
    Frozen,
    _requests,
    check_output,
    cuda_poison_bytes,
    digest,
    has_internal_overlap,
    poison_free_memory,
    release_poison,
)


class Subclass(torch.Tensor):
    pass


class TorchFunctionObject:
    """Looks like a tensor to torch functions; computes later (HACKS.md A3)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def bad_output_reason(value, protected=(), device="cpu"):
    with pytest.raises(JobError) as failure:
        check_output(value, device, list(protected))
    assert failure.value.kind == "bad_output"
    return failure.value.reason


def test_plain_outputs_pass():
    x = torch.randn(4, 4)
    check_output(torch.randn(3, 2), "cpu", [("input 0", x)])
    check_output((torch.randn(2), [torch.zeros(1), 3, None], {"a": torch.ones(2, 2).t()}), "cpu",
                 [("input 0", x)])
    check_output(torch.empty(0, 5), "cpu", [])             # no elements: no storage needed
    check_output(torch.randn(1, 3).expand(1, 3), "cpu", [])  # stride 0 on a dimension of size 1


def test_subclass_is_refused():
    reason = bad_output_reason((torch.randn(2), torch.randn(3).as_subclass(Subclass)))
    assert reason.startswith("output[1]: a Subclass (a torch.Tensor subclass), not a plain torch.Tensor")


def test_parameter_is_refused():
    reason = bad_output_reason([torch.nn.Parameter(torch.randn(2))])
    assert reason.startswith("output[0]: a Parameter")


def test_torch_function_object_is_refused():
    reason = bad_output_reason({"y": TorchFunctionObject()})
    assert reason == "output['y']: a TorchFunctionObject object with __torch_function__, not a plain torch.Tensor"


def test_expanded_view_is_refused():
    reason = bad_output_reason(torch.randn(1, 8).expand(16, 8))
    assert reason.startswith("output: a self-overlapping view (strides (0, 1) for sizes (16, 8)")


def test_wrong_device_is_refused():
    reason = bad_output_reason(torch.empty(2, 2, device="meta"))
    assert reason == "output: on device meta, expected cpu"


def test_sparse_output_is_refused():
    reason = bad_output_reason(torch.eye(3).to_sparse())
    assert "layout torch.sparse_coo is not allowed" in reason


@pytest.mark.parametrize("alias", [
    lambda x, w: x,
    lambda x, w: x.view(-1),
    lambda x, w: x[1:],
    lambda x, w: x.t(),
])
def test_alias_of_an_input_is_refused(alias):
    x = torch.randn(4, 4)
    w = torch.randn(3)
    reason = bad_output_reason((torch.randn(2), alias(x, w)), [("input 0", x), ("parameter 'w'", w)])
    assert reason.startswith("output[1]: shares memory with input 0")


def test_alias_of_a_weight_is_refused():
    x = torch.randn(4, 4)
    w = torch.randn(3)
    reason = bad_output_reason(w.detach(), [("input 0", x), ("parameter 'w'", w)])
    assert reason.startswith("output: shares memory with parameter 'w'")


def test_from_another_storage_near_an_input_passes():
    x = torch.randn(4, 4)
    y = torch.empty_like(x)
    check_output(y, "cpu", [("input 0", x)])


def test_internal_overlap():
    assert not has_internal_overlap(torch.randn(3, 4))
    assert not has_internal_overlap(torch.randn(3, 4).t())
    assert not has_internal_overlap(torch.randn(3, 4)[:, ::2])
    assert has_internal_overlap(torch.randn(4).expand(3, 4))
    assert has_internal_overlap(torch.randn(10).as_strided((3, 3), (1, 1)))
    assert not has_internal_overlap(torch.randn(1).expand(1, 1))


# --- Frozen: inputs and weights left untouched --------------------------------------------------------

def test_frozen_copies_see_changes_bitwise():
    x = torch.tensor([1.0, math.nan, 3.0])
    frozen = Frozen([("input 0", x)], "cpu", budget_bytes=1 << 20)
    assert frozen.copies
    assert frozen.differences([("input 0", x)]) == []  # NaN equals itself, bitwise
    x[2] = 4.0
    assert frozen.differences([("input 0", x)]) == ["input 0 holds other values"]


def test_frozen_digests_when_over_the_budget():
    x = torch.randn(1000)
    frozen = Frozen([("input 0", x)], "cpu", budget_bytes=100)
    assert not frozen.copies
    assert frozen.differences([("input 0", x)]) == []
    x[999] += 1
    assert frozen.differences([("input 0", x)]) == ["input 0 holds other values"]


def test_frozen_reports_dtype_shape_and_names():
    frozen = Frozen([("w", torch.zeros(2, 2)), ("b", torch.zeros(2))], "cpu", 1 << 20)
    found = frozen.differences([("w", torch.zeros(2, 2, dtype=torch.float64)), ("extra", torch.zeros(1))])
    assert found == ["b is missing", "w is now Tensor[float64](2, 2), was Tensor[float32](2, 2)",
                     "extra is new"]


def test_signed_zero_is_a_change():
    x = torch.zeros(2)
    frozen = Frozen([("x", x)], "cpu", 1 << 20)
    x[0] = -0.0
    assert frozen.differences([("x", x)]) == ["x holds other values"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex64, torch.bool, torch.int64])
def test_digest_and_copies_cover_dtypes(dtype):
    x = torch.ones(5, dtype=dtype)
    assert len(digest(x)) == 64
    frozen = Frozen([("x", x)], "cpu", 1 << 20)
    assert frozen.differences([("x", x)]) == []
    x[1] = 0
    assert frozen.differences([("x", x)]) == ["x holds other values"]


def test_adopt_keeps_the_tensors_themselves():
    kept = torch.arange(4.0)
    frozen = Frozen.adopt([("input 0", kept)])
    assert frozen.differences([("input 0", torch.arange(4.0))]) == []
    assert frozen.differences([("input 0", torch.arange(4.0) + 1)]) == ["input 0 holds other values"]


# --- NaN poisoning ----------------------------------------------------------------------------------

def test_cpu_poisoning_runs_and_reports_bytes():
    assert poison_free_memory("cpu", hint_bytes=1 << 20) >= 2 << 20


@pytest.mark.gpu
def test_cuda_poisoning_leaves_nan_in_the_next_allocations():
    poisoned = poison_free_memory("cuda")
    assert poisoned > 64 << 20
    small = torch.empty(1000, device="cuda")           # small pool
    large = torch.empty(64 << 20, device="cuda")       # 256 MiB: carved out of the large block
    assert torch.isnan(small).all().item()
    assert torch.isnan(large).all().item()


@pytest.mark.gpu
def test_cuda_poisoning_reaches_every_free_fragment():
    """Freed tensors between live ones leave fragments holding stale values in partly used segments of
    both pools; after poisoning, allocations of the same sizes must all read NaN."""
    sizes = [512, 4096, 100_000, 1 << 20, 3 << 20, 5 << 20, 30 << 20]  # bytes
    keep, freed = [], []
    for size in sizes:
        for i in range(6):
            (keep if i % 2 else freed).append(torch.full((size // 4,), 1.0, device="cuda"))
    lengths = [t.numel() for t in freed]
    del freed
    assert poison_free_memory("cuda") > 64 << 20
    again = [torch.empty(n, device="cuda") for n in lengths]
    stale = [t.numel() * 4 for t in again if not torch.isnan(t).all().item()]
    assert not stale, f"allocations of these sizes (bytes) were not poisoned: {stale}"
    del keep


def test_the_cuda_poison_is_sized_by_what_the_job_needs():
    """512 MiB plus four times the inputs and outputs of a call, at most a quarter of free memory and
    8 GiB: a fixed quarter of free memory in every job ran the GPU out of memory at 8 judgements."""
    assert cuda_poison_bytes(80 * GIB, 0) == 512 << 20
    assert cuda_poison_bytes(80 * GIB, 256 << 20) == (512 << 20) + 4 * (256 << 20)
    assert cuda_poison_bytes(80 * GIB, 100 * GIB) == 8 * GIB
    assert cuda_poison_bytes(2 * GIB, 256 << 20) == GIB // 2
    assert cuda_poison_bytes(0, 1 << 20) == 1


@pytest.mark.gpu
def test_released_poison_goes_back_to_the_device():
    """A poison above CUDA_POISON_HOLD (4.5 GiB here) goes back after the check, refill or not."""
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    poisoned = poison_free_memory("cuda", hint_bytes=GIB)
    assert poisoned >= 4 * GIB
    assert torch.cuda.memory_reserved() >= before + 4 * GIB
    release_poison("cuda")
    assert torch.cuda.memory_reserved() <= before + (64 << 20)


def _segments_made_and_freed() -> tuple[int, int]:
    stats = torch.cuda.memory_stats()
    return stats["segment.all.allocated"], stats["segment.all.freed"]


def _a_check_that_writes(sizes: list[int]) -> list[int]:
    """What a check's forward does to the cache: allocations of these sizes (bytes) written with 1.0 and
    freed again; returns their lengths (float32 elements)."""
    written = [torch.full((size // 4,), 1.0, device="cuda") for size in sizes]
    torch.cuda.synchronize()
    return [t.numel() for t in written]


CHECK_SIZES = [512, 4096, 100_000, 1 << 20, 3 << 20, 40 << 20, 200 << 20]


@pytest.mark.gpu
def test_the_next_checks_poison_is_refilled_in_place(monkeypatch):
    """Between checks the job keeps its poison cached; the next poisoning fills the same blocks again
    without a segment made or given back, and every allocation of a check's sizes reads NaN again."""
    torch.cuda.empty_cache()  # whatever earlier tests left cached (another stream's segments would stop a refill)
    poison_free_memory("cuda", hint_bytes=4 << 20)
    lengths = _a_check_that_writes(CHECK_SIZES)
    release_poison("cuda")
    before = _segments_made_and_freed()
    assert poison_free_memory("cuda", hint_bytes=4 << 20) > 512 << 20
    assert _segments_made_and_freed() == before, "the refill asked the driver for memory"
    again = [torch.empty(n, device="cuda") for n in lengths]
    stale = [t.numel() * 4 for t in again if not torch.isnan(t).all().item()]
    assert not stale, f"allocations of these sizes (bytes) held the last check's values: {stale}"
    del again
    release_poison("cuda")


@pytest.mark.gpu
def test_the_poison_starts_afresh_when_it_cannot_reach_a_free_block(monkeypatch):
    release_poison("cuda")
    # A free block of another stream's segment: the fill cannot reach it, so the fully free
    # segments go back first (afresh) and nothing of the other stream stays cached.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        on_side = torch.full(((8 << 20) // 4,), 1.0, device="cuda")
    side.synchronize()
    del on_side
    _, freed = _segments_made_and_freed()
    poison_free_memory("cuda")
    assert _segments_made_and_freed()[1] > freed
    side_segments = [s for s in torch.cuda.memory_snapshot() if s.get("stream") == side.cuda_stream]
    assert not side_segments, "another stream's free segment stayed cached unpoisoned"
    release_poison("cuda")


@pytest.mark.gpu
def test_a_block_freed_while_another_stream_used_it_is_poisoned_too(monkeypatch):
    """A block whose free waited for another stream's work (record_stream) is not free when the job
    decides how to poison; whichever way it goes, an allocation of its size must read NaN."""
    torch.cuda.empty_cache()
    poison_free_memory("cuda")
    side = torch.cuda.Stream()
    used = torch.full(((4 << 20) // 4,), 1.0, device="cuda")
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # keeps the side stream busy while `used` is freed
        used.record_stream(side)
    del used
    poison_free_memory("cuda")
    again = torch.empty((4 << 20) // 4, device="cuda")
    assert torch.isnan(again).all().item()
    del again
    release_poison("cuda")


def test_poison_requests_take_each_free_block_whole():
    blocks = [("large", 6 << 20), ("small", 2 << 20), ("small", 512), ("large", 1 << 20), ("small", 1536)]
    # The 2 MiB small block in two requests of 1 MiB (larger ones go to the large pool); the 1 MiB
    # large-pool block cannot be handed out at all.
    assert _requests(blocks) == [6 << 20, 1 << 20, 1 << 20, 1536, 512]
    assert _requests([]) == []


def test_other_objects_are_refused():
    class Impostor:
        __class__ = property(lambda self: torch.Tensor)  # isinstance(x, torch.Tensor) is True

    assert isinstance(Impostor(), torch.Tensor)
    reason = bad_output_reason((torch.randn(2), Impostor()))
    assert reason == "output[1]: a Impostor object, not a tensor, a tuple, list or dict, or a plain scalar"
    check_output((1, 2.5, None, "s", torch.float32, torch.device("cpu")), "cpu", [])


# --- earlier outputs and the model's own state (B4, A5) ------------------------------------------------

def test_an_earlier_output_returned_again_is_a_bad_output():
    from cuda_agent_harness.integrity import EarlierOutputs
    earlier = EarlierOutputs(1 << 20)
    first = torch.ones(4)
    earlier.add((first, {"b": torch.zeros(2)}), "the output of check 0")
    assert [label for label, _ in earlier.named] == ["the output of check 0[0]", "the output of check 0[1]['b']"]
    check_output(torch.ones(4), "cpu", earlier.named)  # a new tensor: fine
    reason = bad_output_reason(first[1:], earlier.named)
    assert reason.startswith("output: shares memory with the output of check 0[0]: "), reason
    assert "an earlier output" in reason


def test_earlier_outputs_beyond_the_budget_are_not_kept():
    from cuda_agent_harness.integrity import EarlierOutputs
    earlier = EarlierOutputs(64)
    earlier.add(torch.ones(8), "a")       # 32 bytes
    earlier.add(torch.ones(16), "b")      # 64 more: over the budget
    earlier.add(torch.ones(8), "c")
    assert [label for label, _ in earlier.named] == ["a", "c"]


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.cache = {}
        self.calls = 0
        self.history = []


def test_the_model_state_must_stay_as_it_was():
    from cuda_agent_harness.integrity import ModelState
    model = Counter()
    state = ModelState(model)
    state.check("check 0")
    model.calls += 1
    assert state.differences() == ["Counter.calls was replaced"]
    model.calls -= 1
    model.cache[123] = torch.ones(1)
    model.lin.extra = 1
    model.history.append(1)
    found = state.differences()
    assert "Counter.cache changed (a dict of 1 entries)" in found
    assert "Counter.history changed (a list of 1 entries)" in found
    assert "lin.extra was added" in found
    with pytest.raises(JobError) as failure:
        state.check("timed call 3")
    assert failure.value.kind == "module_state"
    assert failure.value.reason.startswith("timed call 3: the forward changed the model's state (")
    assert "in __init__" in failure.value.reason  # the message names the allowed way


def test_the_harness_reading_weights_leaves_the_model_state_alone():
    from cuda_agent_harness.integrity import ModelState, model_weights, weight_tensors
    model = Counter().eval()
    state = ModelState(model)
    model_weights(model), weight_tensors(model), model.state_dict()
    with torch.no_grad():
        model.lin(torch.ones(1, 2))
    assert state.differences() == []


def test_module_level_state_of_the_candidate_counts_too():
    import types

    from cuda_agent_harness.integrity import ModelState
    source = types.ModuleType("model_new")
    source.CACHE = {}
    source.LIMIT = 3
    state = ModelState(Counter(), source)
    source.__warningregistry__ = {}  # Python's own bookkeeping: not the candidate's state
    assert state.differences() == []
    source.CACHE["x"] = 1
    source.LIMIT = 4
    assert sorted(state.differences()) == ["model_new.CACHE changed (a dict of 1 entries)",
                                           "model_new.LIMIT was replaced"]
