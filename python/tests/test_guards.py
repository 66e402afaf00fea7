"""Tests of the guards around the candidate's forward: the F blocker, the op guard, thread counts."""

import os
import subprocess
import sys
import threading

import pytest
import torch
import torch.nn.functional as F
from helpers import PYTHON_DIR

from cuda_agent_harness.errors import JobError
from cuda_agent_harness.guards import ForbiddenOp, OpGuard, ThreadWatch, block_functional, op_allowed, thread_counts


def test_functional_calls_raise_inside_and_work_after():
    original = F.relu
    with block_functional():
        with pytest.raises(RuntimeError, match=r"torch\.nn\.functional\.relu"):
            F.relu(torch.ones(2))
        with pytest.raises(RuntimeError, match=r"torch\.nn\.functional\.softmax"):
            torch.nn.functional.softmax(torch.ones(2), dim=0)
    assert F.relu is original
    assert torch.equal(F.relu(torch.tensor([-1.0, 1.0])), torch.tensor([0.0, 1.0]))


def test_nn_modules_that_use_functional_are_blocked():
    layer = torch.nn.Linear(2, 2)
    with block_functional():
        with pytest.raises(RuntimeError, match=r"torch\.nn\.functional\.linear"):
            layer(torch.ones(1, 2))
    assert layer(torch.ones(1, 2)).shape == (1, 2)


def test_restored_when_the_body_raises():
    original = F.gelu
    with pytest.raises(ValueError):
        with block_functional():
            raise ValueError("boom")
    assert F.gelu is original


def test_plain_torch_ops_are_not_the_functional_blockers_business():
    with block_functional():
        y = torch.relu(torch.tensor([-1.0, 2.0])) + torch.matmul(torch.eye(2), torch.ones(2))
    assert torch.equal(y, torch.tensor([1.0, 3.0]))


def test_a_blocked_functional_call_is_recorded_even_when_caught():
    guard = OpGuard()
    with block_functional(guard.record):
        with pytest.raises(JobError) as failure:
            with guard.watch("check 0"):
                try:
                    F.relu(torch.ones(2))
                except RuntimeError:
                    pass
    assert failure.value.kind == "forbidden_op"
    assert "torch.nn.functional.relu" in failure.value.reason



def test_each_guard_records_its_own_blocked_calls_when_the_raisers_are_reused():
    # block_functional makes its raisers once per `on_block` and reuses them: a second guard's
    # refusals go to that guard, and the first's, entered again, to the first.
    first, second = OpGuard(), OpGuard()
    for guard, other in ((first, second), (second, first), (first, second)):
        guard.violation = other.violation = None
        with block_functional(guard.record):
            with pytest.raises(RuntimeError):
                F.relu(torch.ones(2))
        assert guard.violation is not None and "torch.nn.functional.relu" in guard.violation
        assert other.violation is None
    assert F.relu(torch.tensor([-1.0])).item() == 0.0


# --- the op guard ---------------------------------------------------------------------------------

def test_creation_and_metadata_ops_are_allowed_and_counted():
    guard = OpGuard()
    x = torch.randn(4, 6)
    with guard.watch("check 0"):
        y = torch.empty_like(x)
        y.zero_()
        z = torch.zeros(3).fill_(2.0)
        v = x.view(6, 4).t().unsqueeze(0).squeeze(0).permute(1, 0).reshape(24)
        w = x[:1].expand(3, 6).transpose(0, 1).narrow(0, 1, 2)
        parts = x.split(2)
        n = torch.tensor([1.0, 2.0])
        _ = (x.shape, x.stride(), x.numel(), x.dim(), x.is_contiguous(), x.data_ptr())
    assert guard.violation is None
    ops = guard.ops()
    for name in ("aten.empty_like.default", "aten.zero_.default", "aten.zeros.default",
                 "aten.fill_.Scalar", "aten.view.default", "aten.t.default", "aten.expand.default",
                 "aten.split.Tensor", "aten.lift_fresh.default"):
        assert name in ops, (name, ops)
    assert ops["aten.view.default"] >= 2
    assert y.shape == x.shape and z[0] == 2.0 and v.numel() == 24 and w.shape == (2, 3)
    assert len(parts) == 2 and n.numel() == 2


@pytest.mark.parametrize("compute, op", [
    (lambda x: torch.relu(x), "aten.relu.default"),
    (lambda x: x + 1, "aten.add.Tensor"),
    (lambda x: x @ x.t(), "aten.mm.default"),
    (lambda x: x.sum(), "aten.sum.default"),
    (lambda x: x[0, 0].item(), "aten._local_scalar_dense.default"),
    (lambda x: torch.empty(3).fill_(x[0, 0]), "aten.fill_.Tensor"),  # only the Scalar overload
    (lambda x: torch.randn(3), "aten.randn.default"),
])
def test_compute_ops_are_refused(compute, op):
    guard = OpGuard()
    x = torch.randn(4, 4)
    with pytest.raises(JobError) as failure:
        with guard.watch("check 2"):
            compute(x)
    assert failure.value.kind == "forbidden_op"
    assert failure.value.reason == (f"check 2: forbidden torch op during the candidate's forward: {op} "
                                    f"(only allocation, metadata ops and copies that keep dtype and device "
                                    f"are allowed; compute in your own kernel)")
    assert isinstance(failure.value.__cause__, ForbiddenOp)
    assert guard.ops()[op] == 1


def test_copies_that_keep_dtype_and_device_are_allowed():
    """Data movement with no arithmetic on values (issue 46): .contiguous() of a transposed input, a
    reshape that must copy, clone, copy_ into an allocated tensor, .to(copy=True), torch.tensor(t)."""
    guard = OpGuard()
    x = torch.randn(4, 6)
    with guard.watch("check 0"):
        a = x.t().contiguous()
        b = x.t().reshape(-1)
        c = x.clone(memory_format=torch.contiguous_format)
        d = torch.empty_like(x).copy_(x)
        e = x.to(x.device, copy=True)
        f = torch.empty(4, 6).copy_(x[0])  # a broadcasting copy_
    assert guard.violation is None
    assert a.is_contiguous() and torch.equal(a, x.t()) and torch.equal(b, x.t().reshape(-1))
    assert torch.equal(c, x) and torch.equal(d, x) and torch.equal(e, x) and e.data_ptr() != x.data_ptr()
    assert torch.equal(f, x[0].expand(4, 6))
    ops = guard.ops()
    for name in ("aten.clone.default", "aten.copy_.default", "aten._to_copy.default"):
        assert name in ops, (name, ops)


@pytest.mark.parametrize("convert, op, why", [
    (lambda x: x.half(), "aten._to_copy.default", "converts between float32 and float16"),
    (lambda x: x.to(torch.bfloat16).to(torch.float32), "aten._to_copy.default",
     "converts between float32 and bfloat16"),
    (lambda x: x.double(), "aten._to_copy.default", "converts between float32 and float64"),
    (lambda x: torch.empty(4, 4, dtype=torch.float16).copy_(x), "aten.copy_.default",
     "converts between float16 and float32"),
    (lambda x: x.to_sparse().clone(), "aten._to_sparse.default", None),  # not a copy: refused as ever
])
def test_copies_that_convert_are_refused(convert, op, why):
    """The cheat that looks like a copy (issue 46): a precision change is arithmetic on values."""
    guard = OpGuard()
    x = torch.randn(4, 4)
    with pytest.raises(JobError) as failure:
        with guard.watch("check 1"):
            convert(x)
    assert failure.value.kind == "forbidden_op"
    assert failure.value.reason.startswith(f"check 1: forbidden torch op during the candidate's forward: {op}")
    if why is not None:
        assert failure.value.reason.endswith(
            f"{op} {why} (a conversion computes new values: convert inside your own kernel; copies that "
            f"keep dtype and device — .contiguous(), .clone(), dst.copy_(src) — are allowed)")


def test_a_copy_of_a_torch_result_is_refused_at_the_computation():
    """Clone allowed does not launder torch's compute: the op that computed is refused first."""
    guard = OpGuard()
    x = torch.randn(4, 4)
    with pytest.raises(JobError) as failure:
        with guard.watch("check 0"):
            torch.relu(x).clone()
    assert "aten.relu.default" in failure.value.reason
    assert "aten.clone.default" not in guard.ops()


def test_a_copy_of_a_lazy_negation_is_refused():
    """A clone that would materialise arithmetic kept lazy in a view (a negative view: -x)."""
    x = torch.randn(4)
    negated = torch._neg_view(x)
    with pytest.raises(JobError) as failure:
        with OpGuard().watch("check 0"):
            negated.clone()
    assert "materialises a lazy conjugate or negation" in failure.value.reason


def test_a_caught_refusal_still_fails_the_forward():
    """A try/except fallback (HACKS.md C2): the refusal is remembered."""
    guard = OpGuard()
    x = torch.randn(4)
    with pytest.raises(JobError) as failure:
        with guard.watch("timed call 3"):
            try:
                torch.relu(x)
            except RuntimeError:
                torch.empty_like(x)
    assert failure.value.kind == "forbidden_op"
    assert failure.value.reason.startswith("timed call 3: forbidden torch op during the candidate's "
                                           "forward: aten.relu.default")


def test_ops_outside_watch_are_neither_seen_nor_refused():
    guard = OpGuard()
    with guard.watch("check 0"):
        torch.empty(2)
    y = torch.relu(torch.randn(3))
    assert y.shape == (3,)
    assert guard.ops() == {"aten.empty.memory_format": 1}
    assert guard.violation is None


def test_op_allowed_by_name_and_namespace():
    assert op_allowed("aten::view", "aten")
    assert op_allowed("aten::empty.memory_format", "aten")
    assert op_allowed("aten::fill_.Scalar", "aten")
    assert not op_allowed("aten::fill_.Tensor", "aten")
    assert not op_allowed("aten::relu", "aten")
    assert op_allowed("profiler::_record_function_enter_new", "profiler")
    # custom operators run with the mode suspended, so what they do inside is unseen: refused
    assert not op_allowed("mylib::view", "mylib")


def test_record_function_inside_the_forward_is_allowed():
    guard = OpGuard()
    with guard.watch("check 0"):
        with torch.profiler.record_function("candidate_range"):
            torch.empty(2)
    assert guard.violation is None


# --- threads ----------------------------------------------------------------------------------------

def test_thread_counts_see_python_and_os_threads():
    python_before, os_before = thread_counts()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        python_after, os_after = thread_counts()
        assert python_after == python_before + 1
        assert os_after == os_before + 1
    finally:
        stop.set()
        worker.join()


def test_thread_watch_fails_when_a_thread_is_left_running():
    watch = ThreadWatch()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        with pytest.raises(JobError) as failure:
            watch.check("check 1")
        assert failure.value.kind == "spawned_threads"
        assert failure.value.reason.startswith("check 1: the candidate's forward left threads running")
    finally:
        stop.set()
        worker.join()


def test_thread_watch_passes_when_threads_are_joined():
    # in a fresh interpreter: threads left by other tests of this process would make the count race
    script = (
        "import threading, time\n"
        "from cuda_agent_harness.guards import ThreadWatch\n"
        "watch = ThreadWatch()\n"
        "worker = threading.Thread(target=time.sleep, args=(0.01,))\n"
        "worker.start(); worker.join()\n"
        "watch.check('check 0')\n"
        "print(watch.to_dict())\n")
    proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "threads_after" in proc.stdout


def test_popping_the_guard_off_the_mode_stack_is_a_violation():
    from torch.utils._python_dispatch import _pop_mode

    guard = OpGuard()
    with pytest.raises(JobError) as failure:
        with guard.watch("check 0"):
            _pop_mode()
            torch.relu(torch.randn(3))  # unseen: the guard is gone
    assert failure.value.kind == "forbidden_op"
    assert failure.value.reason == ("check 0: the candidate's forward changed torch's dispatch mode stack "
                                    "(ops it ran afterwards were not checked)")
    assert torch.relu(torch.tensor([-1.0])).item() == 0.0
