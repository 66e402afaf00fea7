"""Tests of the `profile` job on the CPU, and of the device-time attribution on synthetic events."""

from types import SimpleNamespace

import pytest
import torch
from torch.autograd import DeviceType

from cuda_agent_harness import timing
from helpers import FUNCTIONAL_CANDIDATE, GOOD_CANDIDATE, make_reference, profile_spec, run, write_candidate


def assert_cpu_timings(result, iters):
    assert result["ok"], result
    assert len(result["wall_us"]) == iters
    assert all(t > 0 for t in result["wall_us"])
    assert result["device_us"] is None and result["median_device_us"] is None
    assert result["median_wall_us"] > 0
    assert result["kernels"] == []
    assert result["num_threads"] == torch.get_num_threads()


def test_eager_profile_on_cpu(tmp_path):
    ref = make_reference(tmp_path)
    result = run("profile", profile_spec(tmp_path, ref, "eager", iters=5))
    assert_cpu_timings(result, 5)
    assert result["warmup"] == 2 and result["iters"] == 5
    assert "compile_seconds" not in result


def test_candidate_profile_on_cpu(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, GOOD_CANDIDATE)
    result = run("profile", profile_spec(tmp_path, ref, "candidate", candidate, iters=3))
    assert_cpu_timings(result, 3)


def test_candidate_profile_blocks_functional(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, FUNCTIONAL_CANDIDATE)
    result = run("profile", profile_spec(tmp_path, ref, "candidate", candidate))
    assert result["error_kind"] == "forward"
    assert result["reason"].startswith("warm-up call 0 raised RuntimeError")
    assert "torch.nn.functional.relu" in result["reason"]


def test_failing_baseline_is_the_task(tmp_path):
    ref = make_reference(tmp_path)
    spec = profile_spec(tmp_path, ref, "eager")
    spec["task_path"] = str(tmp_path / "task" / "broken.py")
    with open(spec["task_path"], "w") as f:
        f.write(open(ref["task_path"]).read().replace("return self.lin(x)", "return self.lin(x, x)"))
    result = run("profile", spec)
    assert result["error_kind"] == "task"
    assert "warm-up call 0" in result["reason"]


def test_candidate_state_dict_mismatch_in_profile(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, GOOD_CANDIDATE.replace("self.lin", "self.other"))
    result = run("profile", profile_spec(tmp_path, ref, "candidate", candidate))
    assert result["error_kind"] == "state_dict"


def test_unknown_target_is_internal(tmp_path):
    ref = make_reference(tmp_path)
    result = run("profile", profile_spec(tmp_path, ref, "fast"))
    assert result["error_kind"] == "internal"


@pytest.mark.slow
def test_compile_profile_on_cpu(tmp_path):
    ref = make_reference(tmp_path)
    result = run("profile", profile_spec(tmp_path, ref, "compile", warmup=0, iters=3))
    assert_cpu_timings(result, 3)
    assert result["warmup"] == 1
    assert result["compile_seconds"] > 0


def test_input_sets_respect_the_memory_budget():
    def get_inputs():
        return [torch.randn(256), 1]   # 1 KiB of tensors per set

    sets = timing.make_input_sets(get_inputs, 0, 10, "cpu", budget_bytes=3 * 1024)
    assert len(sets) == 3
    assert not torch.equal(sets[0][0], sets[1][0])
    assert len(timing.make_input_sets(get_inputs, 0, 10, "cpu")) == 10
    assert len(timing.make_input_sets(get_inputs, 0, 10, "cpu", budget_bytes=10)) == 1


def test_input_sets_follow_the_seed():
    a = timing.make_input_sets(lambda: torch.randn(4), 3, 2, "cpu")
    b = timing.make_input_sets(lambda: torch.randn(4), 3, 2, "cpu")
    assert torch.equal(a[1][0], b[1][0])


def event(name, device_type, start, end, annotation=False):
    return SimpleNamespace(name=name, device_type=device_type, is_user_annotation=annotation,
                           time_range=SimpleNamespace(start=start, end=end))


def test_device_time_is_attributed_to_call_windows():
    cpu, cuda = DeviceType.CPU, DeviceType.CUDA
    events = [
        event("fill_flush", cuda, 0, 5),                   # the L2 flush: before any window
        event("cuda_agent_call_0", cpu, 10, 100),
        event("aten::mm", cpu, 12, 20),
        event("gemm", cuda, 15, 45),
        event("side_stream_kernel", cuda, 30, 70),          # overlapping, on another stream: counted
        event("cuda_agent_call_0", cuda, 14, 90, annotation=True),  # GPU mirror of the range
        event("fill_flush", cuda, 105, 110),
        event("cuda_agent_call_1", cpu, 120, 200),
        event("gemm", cuda, 130, 150),
        event("Memcpy DtoD", cuda, 150, 151),
    ]
    per_call, kernels = timing.device_times(events, 2)
    assert per_call == [70.0, 21.0]
    assert kernels[0] == {"name": "gemm", "calls": 2, "total_us": 50.0}
    names = [k["name"] for k in kernels]
    assert "fill_flush" not in names and "cuda_agent_call_0" not in names
    assert set(names) == {"gemm", "side_stream_kernel", "Memcpy DtoD"}


def test_missing_call_window_is_an_error():
    events = [event("cuda_agent_call_0", DeviceType.CPU, 0, 10)]
    with pytest.raises(RuntimeError, match="cuda_agent_call_1"):
        timing.device_times(events, 2)
