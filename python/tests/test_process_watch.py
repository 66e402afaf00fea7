"""Tests of process_watch: each thing candidate code must leave as it found it is caught when changed, and
left alone when not (HACKS.md A2, A4, A8, B5, D at run time)."""

import subprocess
import sys
import threading
import time

import pytest
import torch

import cuda_agent_harness.guards as guards
from cuda_agent_harness.errors import JobError
from cuda_agent_harness.process_watch import ProcessWatch, _alone_in_pid_namespace


@pytest.fixture
def watch():
    return ProcessWatch("cpu")


def fails(watch, kind, contains, **kwargs):
    with pytest.raises(JobError) as caught:
        watch.check("check 0", **kwargs)
    assert caught.value.kind == kind, caught.value.reason
    assert caught.value.reason.startswith("check 0: "), caught.value.reason
    assert contains in caught.value.reason, caught.value.reason


def test_a_clean_sequence_passes(watch):
    x = torch.randn(64, 64)
    (x @ x).relu_()
    watch.check("check 0", created_threads=False)
    watch.check("check 0", created_threads=False)


@pytest.mark.parametrize("owner, name", [
    (torch.cuda, "synchronize"),
    (time, "perf_counter"),
    (guards.ThreadWatch, "check"),
    (guards, "thread_counts"),
    (threading, "active_count"),
])
def test_a_replaced_callable_is_patching(watch, owner, name):
    original = getattr(owner, name)
    setattr(owner, name, lambda *a, **k: None)
    try:
        fails(watch, "patching", name)
    finally:
        setattr(owner, name, original)
    watch.check("check 0", created_threads=False)  # put back: nothing left to report


def test_rewritten_code_and_added_methods_are_patching(watch):
    def nothing():
        return None

    original = guards.start_torch_threads.__code__
    guards.start_torch_threads.__code__ = nothing.__code__
    try:
        fails(watch, "patching", "guards.start_torch_threads (its code)")
    finally:
        guards.start_torch_threads.__code__ = original
    torch.Tensor.clone = lambda self: self  # shadows the C method of the base class
    try:
        fails(watch, "patching", "torch.Tensor.clone (added)")
    finally:
        del torch.Tensor.clone
    watch.check("check 0", created_threads=False)


def test_a_replaced_module_is_patching(watch):
    original = sys.modules["time"]
    sys.modules["time"] = type(sys)("time")
    try:
        fails(watch, "patching", "sys.modules['time']")
    finally:
        sys.modules["time"] = original


def test_thread_counts_and_seeds_are_the_judges(watch):
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads - 1) if threads > 1 else 2)
    try:
        fails(watch, "global_flags", "torch.get_num_threads()")
    finally:
        torch.set_num_threads(threads)
    torch.manual_seed(1234)
    fails(watch, "global_flags", "torch.initial_seed()")
    watch.reset()  # the harness seeds its own inputs, then takes the baseline again
    watch.check("check 0", created_threads=False)


def test_a_process_that_ended_is_a_process_escape(watch):
    subprocess.run(["true"], check=True)
    fails(watch, "process_escape", "one ended meanwhile", created_threads=False)


def test_a_process_still_running_is_a_process_escape(watch):
    proc = subprocess.Popen(["sleep", "5"])
    try:
        fails(watch, "process_escape", f"pid {proc.pid} still running", created_threads=False)
    finally:
        proc.kill()
        proc.wait()


def test_a_thread_start_in_a_forward_is_refused_even_when_caught(watch):
    with watch.no_thread_starts("check 0"):
        try:
            threading.Thread(target=time.sleep, args=(0,)).start()
        except RuntimeError as exc:
            assert "threading.Thread.start is not allowed" in str(exc)
    assert threading.Thread.start is not None and "refused" not in threading.Thread.start.__name__
    fails(watch, "spawned_threads", "started a thread (threading.Thread.start)", created_threads=False)


def test_the_refusal_wins_over_the_exception_it_caused(watch):
    import _thread
    with pytest.raises(JobError) as caught:
        with watch.no_thread_starts("check 3"):
            _thread.start_new_thread(time.sleep, (0,))
    assert caught.value.kind == "spawned_threads"
    assert caught.value.reason.startswith("check 3: the candidate's code started a thread (_thread.start_new_thread)")


def test_a_python_thread_left_running_is_spawned_threads(watch):
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        fails(watch, "spawned_threads", "left a Python thread running", created_threads=False)
    finally:
        stop.set()
        worker.join()


def test_created_threads_are_counted_only_where_the_namespace_is_the_jobs():
    """Outside a sandbox's pid namespace the counter is the host's: the watch must not use it."""
    watch = ProcessWatch("cpu")
    assert watch.count_created == _alone_in_pid_namespace()
    if not watch.count_created:
        threading.Thread(target=time.sleep, args=(0,)).start()
        time.sleep(0.05)
        watch.check("check 0")  # no false positive from other processes' threads


def test_pickling_a_tensor_is_not_patching(tmp_path):
    """copyreg caches __slotnames__ on a class the first time one of its objects is pickled."""
    if "__slotnames__" in vars(torch.Tensor):
        del torch.Tensor.__slotnames__
    watch = ProcessWatch("cpu")
    torch.save(torch.ones(3), tmp_path / "t.pt")
    assert "__slotnames__" in vars(torch.Tensor)
    watch.check("check 0", created_threads=False)


def test_loading_a_compiler_is_a_forbidden_op():
    """torch.compile in candidate code loads dynamo (which also re-wraps torch functions): named as such."""
    code = ("import sys\n"
            "import torch\n"
            "from cuda_agent_harness.errors import JobError\n"
            "from cuda_agent_harness.process_watch import ProcessWatch\n"
            "assert 'torch._dynamo' not in sys.modules\n"
            "watch = ProcessWatch('cpu')\n"
            "import torch._dynamo\n"
            "try:\n"
            "    watch.check('loading ModelNew', created_threads=False)\n"
            "except JobError as exc:\n"
            "    print(exc.kind, exc.reason)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(__import__("helpers").PYTHON_DIR))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("forbidden_op loading ModelNew: the candidate's code loaded torch._dynamo"), \
        proc.stdout
