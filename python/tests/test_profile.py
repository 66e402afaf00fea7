"""Tests of the `profile` job on the CPU, and of the device-time attribution on synthetic events."""

import gc
import time
import weakref
from types import SimpleNamespace

import pytest
import torch
from helpers import FUNCTIONAL_CANDIDATE, GOOD_CANDIDATE, make_reference, profile_spec, run, write_candidate
from torch.autograd import DeviceType

from cuda_agent_harness import cupti, inputs, timing
from cuda_agent_harness.comparison import Tolerance, compare


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
    # Where the timed loop's time went, by part: the calls, the checks after them, keeping outputs.
    loop = result["profiler_seconds"]["loop"]
    assert set(loop) == {"call", "checks", "keep"}, loop
    assert loop["call"] >= sum(result["wall_us"]) / 1e6 - 1e-6
    assert sum(loop.values()) <= result["phase_seconds"]["timed"] + 1e-6


class _Cycle:
    def __init__(self):
        self.me = self


def test_freeze_garbage_collects_then_keeps_the_survivors_out_of_later_collections():
    dead = _Cycle()
    gone = weakref.ref(dead)
    del dead  # garbage only a collection finds (a reference cycle)
    kept = [_Cycle() for _ in range(1000)]
    frozen_before = gc.get_freeze_count()
    try:
        timing.freeze_garbage()
        assert gone() is None  # collected first
        assert gc.get_freeze_count() >= frozen_before + len(kept)  # survivors frozen
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in tracked for o in kept)  # later collections do not scan them
    finally:
        gc.unfreeze()


def test_a_loop_clock_charges_each_lap_to_its_part():
    clock = timing.LoopClock()
    for _ in range(3):
        time.sleep(0.002)
        clock.lap("a")
        clock.lap("b")
    assert clock.seconds["a"] >= 0.006 and clock.seconds["b"] < 0.006 / 3


def test_candidate_profile_blocks_functional(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, FUNCTIONAL_CANDIDATE)
    result = run("profile", profile_spec(tmp_path, ref, "candidate", candidate))
    assert result["error_kind"] == "forbidden_op"
    assert result["reason"].startswith("warm-up call 0: forbidden call during the candidate's forward: "
                                       "torch.nn.functional.relu")


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
    task = SimpleNamespace(get_inputs=lambda: [torch.randn(256), 1])   # 1 KiB of tensors per set
    sets = inputs.make_timing_sets(task, 0, 10, "cpu", budget_bytes=3 * 1024)
    assert len(sets) == 3
    assert not torch.equal(sets[0][0], sets[1][0])
    assert len(inputs.make_timing_sets(task, 0, 10, "cpu")) == 10
    assert len(inputs.make_timing_sets(task, 0, 10, "cpu", budget_bytes=10)) == 1


def test_input_sets_follow_the_seed_set_by_set():
    task = SimpleNamespace(get_inputs=lambda: torch.randn(4))
    a = inputs.make_timing_sets(task, 3, 2, "cpu")
    b = inputs.make_timing_sets(task, 3, 2, "cpu")
    assert torch.equal(a[1][0], b[1][0])
    # any set can be made on its own, as the reference job does for spot-checked calls
    assert torch.equal(inputs.make_input_set(task, inputs.timing_set_seed(3, 1), "cpu")[0], a[1][0])


def event(name, device_type, start, end, annotation=False):
    return SimpleNamespace(name=name, device_type=device_type, is_user_annotation=annotation,
                           time_range=SimpleNamespace(start=start, end=end))


def on(stream, *args, **kwargs):
    """event(*args) on a device stream (kineto's stream id)."""
    e = event(*args, **kwargs)
    e.stream = stream
    return e


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
    per_call, kernels, call_kernels = timing.device_times(events, 2)
    assert per_call == [70.0, 21.0]
    assert call_kernels == [["gemm", "side_stream_kernel"], ["Memcpy DtoD", "gemm"]]
    assert kernels[0] == {"name": "gemm", "calls": 2, "total_us": 50.0}
    names = [k["name"] for k in kernels]
    assert "fill_flush" not in names and "cuda_agent_call_0" not in names
    assert set(names) == {"gemm", "side_stream_kernel", "Memcpy DtoD"}


def test_device_work_while_the_job_waits_to_be_timed_is_found():
    """timing.BETWEEN_RANGE: the candidate's process, its checks done, waits for the go of its timing
    holding no lease; a device activity that starts then is found (a kernel that started before it, or
    an annotation mirrored on the GPU, is not)."""
    cpu, cuda = DeviceType.CPU, DeviceType.CUDA
    events = [
        event("checked_kernel", cuda, 0, 12),                # the last check's: before the range
        event(timing.BETWEEN_RANGE, cpu, 10, 500),
        event("background_kernel", cuda, 240, 241),
        event(timing.BETWEEN_RANGE, cuda, 11, 499, annotation=True),
        event("cuda_agent_call_0", cpu, 600, 700),
        event("timed_kernel", cuda, 610, 650),
    ]
    assert timing.activities_in_range(events, timing.BETWEEN_RANGE) == [
        {"name": "background_kernel", "start_us": 230.0}]
    assert timing.activities_in_range(events[4:], timing.BETWEEN_RANGE) == [], "no range: nothing"


def test_activities_out_of_the_callers_stream_order_are_found():
    cpu, cuda = DeviceType.CPU, DeviceType.CUDA
    spin = "void at::cuda::(anonymous namespace)::spin_kernel(long)"
    events = [
        event(spin, cuda, 5, 60),                           # fence before call 0
        event(spin, cuda, 60, 60),                          # its anchor
        event("cuda_agent_call_0", cpu, 10, 100),
        event("kernel_on_callers_stream", cuda, 60, 80),
        event(spin, cuda, 80, 81),                          # marker: the caller's stream is done
        event(spin, cuda, 105, 160),                        # fence before call 1
        event(spin, cuda, 160, 160),                        # its anchor
        event("cuda_agent_call_1", cpu, 110, 250),
        event("unordered_side_kernel", cuda, 115, 140),     # did not wait for the fence
        event("joined_side_kernel", cuda, 160, 170),
        event("forgotten_side_kernel", cuda, 161, 200),     # the marker did not wait for it
        event(spin, cuda, 171, 172),
    ]
    found = timing.out_of_stream_order(events, 2)
    assert [(e["call"], e["name"]) for e in found] == [(1, "unordered_side_kernel"),
                                                       (1, "forgotten_side_kernel")]
    assert "not ordered" in found[0]["problem"] and found[0]["by_us"] == 45
    assert "not joined" in found[1]["problem"] and found[1]["by_us"] == 29
    per_call, _, names = timing.device_times(events, 2)
    assert per_call == [20.0, 74.0], "the fences are not the call's device time"
    assert all("spin_kernel" not in n for call in names for n in call)


def test_unjoined_work_that_holds_the_marker_back_is_caught_by_the_events():
    """An unjoined grid that fills every SM can delay the marker spin's dispatch until its own last wave
    (seen on an H100); the events, stamped by the caller's stream without an SM, still say when that
    stream was done. They judge only other streams' work, and never say "done" before the call's last
    activity on the caller's own stream ended (their timer's rate differs from the profiler's)."""
    cpu, cuda = DeviceType.CPU, DeviceType.CUDA
    spin = "void at::cuda::(anonymous namespace)::spin_kernel(long)"
    caller, side = 7, 9

    events = [
        on(caller, spin, cuda, 5, 60),                      # fence before call 0
        on(caller, spin, cuda, 60, 60),                     # its anchor
        event("cuda_agent_call_0", cpu, 10, 100),
        on(side, "forgotten_side_kernel", cuda, 60, 80),    # never joined
        on(caller, spin, cuda, 79.5, 80.5),                 # marker held back behind its blocks
        on(caller, spin, cuda, 105, 160),                   # fence before call 1
        on(caller, spin, cuda, 160, 160),                   # its anchor
        event("cuda_agent_call_1", cpu, 110, 400),
        on(side, "joined_side_kernel", cuda, 160, 170),
        on(caller, "callers_kernel", cuda, 171, 300),       # on the caller's stream: joined by order
        on(caller, spin, cuda, 301, 302),                   # marker after the join
    ]
    assert timing.out_of_stream_order(events, 2) == [], "the marker alone misses it"
    # Call 1's events say "done" 3 µs before its own kernel ended (the clocks' rates): not a failure.
    found = timing.out_of_stream_order(events, 2, done_after_fence_us=[1.0, 137.0])
    assert [(e["call"], e["name"]) for e in found] == [(0, "forgotten_side_kernel")]
    assert "not joined" in found[0]["problem"] and found[0]["by_us"] == 19.0
    # A side kernel ending 10 µs after the fence, the events' witness d µs after it: the slack is
    # 2 + 0.05 d, so d = 7.7 is within it and d = 7.5 is 2.5 µs late.
    within = events[:8] + [on(side, "joined_side_kernel", cuda, 160, 170), on(caller, spin, cuda, 171, 172)]
    assert timing.out_of_stream_order(within, 2, done_after_fence_us=[1.0, 7.7]) == found
    late = timing.out_of_stream_order(within, 2, done_after_fence_us=[1.0, 7.5])
    assert [(e["call"], e["name"], round(e["by_us"], 6)) for e in late[1:]] == [(1, "joined_side_kernel", 2.5)]
    with pytest.raises(RuntimeError, match="event pairs"):
        timing.out_of_stream_order(events, 2, done_after_fence_us=[1.0])


def test_an_event_stamped_late_after_the_fence_does_not_make_joined_work_look_unjoined():
    """The GPU may run another process's context between the fence's end and the stamp of the event
    after it (time-slicing): the events then measure from later than the fence's end. Counted from the
    anchor spin, which starts after the stamp, a joined side stream stays joined (on an H200 with four
    judgements at once, counting from the fence's end refused one by 1.6 ms); a forgotten one is still
    caught."""
    cpu, cuda = DeviceType.CPU, DeviceType.CUDA
    spin = "void at::cuda::(anonymous namespace)::spin_kernel(long)"
    caller, side = 7, 9

    def trace(side_end):
        return [
            on(caller, spin, cuda, 5, 60),                      # fence
            on(caller, spin, cuda, 1660, 1660),                 # anchor: 1.6 ms later, another context ran
            event("cuda_agent_call_0", cpu, 10, 2000),
            on(side, "side_kernel", cuda, 1661, side_end),
            on(caller, spin, cuda, 1672, 1673),                 # marker
        ]

    # The events: 12 µs from the fence's event to the caller's stream being done (the join included).
    assert timing.out_of_stream_order(trace(1671), 1, done_after_fence_us=[12.0]) == []
    # Unjoined, 100 µs past the join (and the marker held back behind it).
    unjoined = trace(1772)
    unjoined[-1] = on(caller, spin, cuda, 1771.5, 1772.5)
    found = timing.out_of_stream_order(unjoined, 1, done_after_fence_us=[12.0])
    assert [(e["call"], e["name"], round(e["by_us"], 6)) for e in found] == [(0, "side_kernel", 100.0)]


def test_missing_fences_are_an_error():
    events = [event("cuda_agent_call_0", DeviceType.CPU, 0, 10)]
    with pytest.raises(RuntimeError, match="fences"):
        timing.out_of_stream_order(events, 1)


def test_profiler_events_are_read_from_kinetos_results():
    profiler = timing.DeviceProfiler()
    profiler.start()
    with torch.profiler.record_function(timing.CALL_RANGE.format(0)):
        torch.ones(64).sum()
    profiler.stop()
    events = profiler.events()
    assert profiler.seconds["event_count"] == len(events) > 1
    (lo, hi), = timing.call_windows(events, 1)
    assert 0 <= lo < hi
    ops = [e for e in events if e.name == "aten::ones"]
    assert ops and lo <= ops[0].time_range.start <= ops[0].time_range.end <= hi
    assert not any(timing.is_device_activity(e) for e in events)  # a CPU-only run


def test_warm_up_records_each_calls_host_time_without_its_device_wait(monkeypatch):
    """The fences are sized by the time a call takes to return (its launches), not by the wait for its
    device work that follows: a device-bound call would otherwise wait twice its device time."""
    import time as clock
    monkeypatch.setattr(timing, "synchronize", lambda device: clock.sleep(0.05))  # a device-bound call
    host: list[float] = []
    first = timing.warm_up(lambda inputs, label: clock.sleep(0.005), [[1]], 3, "cuda", "forward", host_durations=host)
    assert len(host) == 3 and all(0.005 <= h < 0.05 for h in host), host
    assert first >= 0.055  # the first call's whole time, device wait included (compile_seconds)


def test_fences_are_sized_by_warm_up_calls_after_the_first():
    assert timing.fence_host_seconds([0.5, 0.003, 0.004]) == 0.004  # the first loads kernels
    assert timing.fence_host_seconds([0.002]) == 0.002
    assert timing.fence_host_seconds([]) == 0.0


def test_missing_call_window_is_an_error():
    events = [event("cuda_agent_call_0", DeviceType.CPU, 0, 10)]
    with pytest.raises(RuntimeError, match="cuda_agent_call_1"):
        timing.device_times(events, 2)


# --- guards and spot checks in the candidate's profile (HACKS.md A2, A3, A5, A6, A10) ----------------

def spot_spec(tmp_path, ref, candidate, calls, iters=4, warmup=2):
    spec = profile_spec(tmp_path, ref, "candidate", candidate, warmup=warmup, iters=iters)
    spec["spot_check_calls"] = calls
    spec["output_dir"] = str(tmp_path / "spot")
    return spec


def test_spot_checked_calls_are_written_and_match_the_reference(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, GOOD_CANDIDATE)
    result = run("profile", spot_spec(tmp_path, ref, candidate, [3, 1]))
    assert result["ok"], result
    assert [s["call"] for s in result["spot_checks"]] == [3, 1]
    assert [s["input_set"] for s in result["spot_checks"]] == [5, 3]   # warm-up 2: call i uses set 2 + i
    # what the judge does: the reference job's outputs for those calls, compared with the saved ones
    ref["timing"] = {"seed": 999, "warmup": 2, "iters": 4, "spot_check_calls": [3, 1]}
    expected = run("reference", ref)
    assert expected["ok"], expected
    for entry, saved in zip(expected["spot_expected"], result["spot_checks"], strict=False):
        assert entry["call"] == saved["call"] and entry["input_set"] == saved["input_set"]
        report = compare(torch.load(entry["path"], weights_only=True),
                         torch.load(saved["output_path"], weights_only=True), Tolerance.fixed(0.01, 0.01))
        assert report.ok, report.reason


def test_profile_reports_threads_ops_and_min_bytes(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, GOOD_CANDIDATE)
    result = run("profile", profile_spec(tmp_path, ref, "candidate", candidate, iters=3))
    assert result["ok"], result
    assert result["spot_checks"] == []
    assert result["min_bytes"] == 16 * 8 * 4 * 2  # input x and the output, float32; the int is no tensor
    assert result["aten_ops"]["aten.lift_fresh.default"] == 5  # 2 warm-up + 3 timed calls
    assert result["threads_after"] == result["threads_before"]
    eager = run("profile", profile_spec(tmp_path, ref, "eager", iters=3))
    assert eager["min_bytes"] == result["min_bytes"]
    assert "aten_ops" not in eager and eager["threads_before"]["os"] > 0


def test_bad_spot_check_calls_are_internal(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, GOOD_CANDIDATE)
    for calls in ([4], [-1], [1, 1], ["1"]):
        result = run("profile", spot_spec(tmp_path, ref, candidate, calls, iters=4))
        assert result["error_kind"] == "internal", (calls, result)
        assert "spot_check_calls" in result["reason"]


def test_torch_compute_only_in_timed_calls_is_caught(tmp_path):
    """Warm-up detection (HACKS.md A5): the guards are the same in every call."""
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace(
        "        w = self.lin.weight",
        "        calls = type(self).forward.__dict__.setdefault('calls', [0])  # out of ModelState's sight\n"
        "        calls[0] += 1\n"
        "        if calls[0] > 2:\n"
        "            return torch.matmul(x, self.lin.weight.t()) * 2 + 1 + offset + self.lin.bias * 2\n"
        "        w = self.lin.weight")
    result = run("profile", profile_spec(tmp_path, ref, "candidate", write_candidate(tmp_path, source)))
    assert result["error_kind"] == "forbidden_op"
    assert result["reason"].startswith("timed call 0: forbidden torch op during the candidate's forward: "
                                       "aten.mm.default")


def test_a_thread_left_running_fails_the_profile(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace(
        "        w = self.lin.weight",
        "        calls = type(self).forward.__dict__.setdefault('calls', [0])  # out of ModelState's sight\n"
        "        calls[0] += 1\n"
        "        if calls[0] == 4:\n"
        "            import threading, time\n"
        "            threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "        w = self.lin.weight")
    result = run("profile", profile_spec(tmp_path, ref, "candidate", write_candidate(tmp_path, source)))
    assert result["error_kind"] == "spawned_threads", result
    assert result["reason"].startswith("timed call 1: the candidate's code started a thread "
                                       "(threading.Thread.start)")


def test_an_input_alias_in_a_timed_call_is_a_bad_output(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace(
        "        w = self.lin.weight",
        "        calls = type(self).forward.__dict__.setdefault('calls', [0])  # out of ModelState's sight\n"
        "        calls[0] += 1\n"
        "        if calls[0] == 5:\n"
        "            return x\n"
        "        w = self.lin.weight")
    result = run("profile", profile_spec(tmp_path, ref, "candidate", write_candidate(tmp_path, source)))
    assert result["error_kind"] == "bad_output", result
    assert result["reason"].startswith("timed call 2: output: shares memory with input 0")


def test_weights_changed_during_the_profile_are_mutated_weights(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("        return torch.from_numpy(y * 2 + 1 + offset)",
                                    "        self.lin.weight.detach().numpy()[0, 0] += 1.0\n"
                                    "        return torch.from_numpy(y * 2 + 1 + offset)")
    result = run("profile", profile_spec(tmp_path, ref, "candidate", write_candidate(tmp_path, source)))
    assert result["error_kind"] == "mutated_weights", result
    assert result["reason"].startswith("after the timed calls: the model's state_dict differs from the "
                                       "reference weights: lin.weight holds other values")


def test_spot_checked_inputs_changed_are_mutated_input(tmp_path):
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("        return torch.from_numpy(y * 2 + 1 + offset)",
                                    "        out = torch.from_numpy(y * 2 + 1 + offset)\n"
                                    "        x.zero_()\n"
                                    "        return out")
    result = run("profile", spot_spec(tmp_path, ref, write_candidate(tmp_path, source), [2]))
    assert result["error_kind"] == "mutated_input", result
    assert result["reason"].startswith("timed call 2: the candidate changed its inputs: input 0 holds "
                                       "other values")


def test_bytes_moved_counts_inputs_and_outputs():
    x = torch.zeros(10, 4)
    y = torch.zeros(3, dtype=torch.float64)
    assert timing.bytes_moved([x, 3, (x,)], {"y": y}) == 160 + 160 + 24


def test_an_output_finished_after_the_call_is_a_bad_output(tmp_path):
    """Deferred work (HACKS.md A2): the output of a spot-checked call is copied as soon as the call
    returns and compared with the same output after all calls."""
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace(
        "        return torch.from_numpy(y * 2 + 1 + offset)",
        "        out = torch.from_numpy(np.zeros_like(y))\n"
        "        final = y * 2 + 1 + offset\n"
        "        pending = type(self).forward.__dict__.setdefault('pending', [])  # out of ModelState's sight\n"
        "        for finish in list(pending):  # the previous call's work, done late\n"
        "            finish()\n"
        "        pending[:] = [lambda: out.numpy().__setitem__(Ellipsis, final)]\n"
        "        return out")
    result = run("profile", spot_spec(tmp_path, ref, write_candidate(tmp_path, source), [1]))
    assert result["error_kind"] == "bad_output", result
    assert result["reason"] == ("timed call 1: the output changed after the call returned (work must be "
                                "finished when the forward returns)")


def test_timed_outputs_beyond_the_budget_are_dropped_except_call_0_and_spot_checked_ones():
    sets = [[torch.full((256,), float(k))] for k in range(3)]  # 1 KiB outputs
    keep = timing.OutputKeeper({4}, budget_bytes=2048)
    timings = timing.time_calls_cpu(lambda inputs, label: inputs[0] * 2, sets, 0, 6, "task", keep=keep)
    kept = [o is not None for o in timings.outputs]
    # call 0 and spot call 4 always; calls 1 and 2 fill the 2 KiB budget; 3 and 5 are dropped
    assert kept == [True, True, True, False, True, False]
    assert torch.equal(timings.outputs[4], sets[1][0] * 2)
    assert len(timings.wall_us) == 6


def test_cupti_names_kernels_as_the_demangler_writes_them():
    demangle = cupti._Demangler()
    assert demangle(b"_Z10relu_scalePKfPfif") == "relu_scale(float const*, float*, int, float)"
    assert demangle(b"_ZN2at6native29vectorized_elementwise_kernelILi4EEEvv") == \
        "void at::native::vectorized_elementwise_kernel<4>()"
    assert demangle(b"sm90_xmma_gemm_f32f32") == "sm90_xmma_gemm_f32f32"  # not mangled: as it is
    assert demangle(b"_Zbroken") == "_Zbroken"                            # not demangled: as it is


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback where CUPTI is absent")
def test_the_profiler_falls_back_to_torch_profiler_without_cupti():
    assert cupti.ActivityTrace.load() is None
    profiler = timing.device_profiler()
    assert isinstance(profiler, timing.DeviceProfiler) and profiler.seconds["backend"] == "kineto"


def test_a_cupti_that_refuses_to_start_falls_back_to_torch_profiler(monkeypatch):
    class Refusing:
        def start(self):
            raise RuntimeError("CUPTI: cuptiActivityEnable(10) failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS (39)")

    monkeypatch.setattr(cupti.ActivityTrace, "load", classmethod(lambda cls: Refusing()))
    profiler = timing.start_device_profiler()
    try:
        assert isinstance(profiler, timing.DeviceProfiler) and profiler.running
        assert "MULTIPLE_SUBSCRIBERS" in profiler.seconds["cupti_error"]
    finally:
        profiler.stop()


def test_a_calibration_sets_up_once_and_measures_once(monkeypatch):
    """The constructor runs each op once (the set-up the profile job does while preparing); measure()
    times `repeats` runs of each and frees the operands."""
    calls = {"copy": 0, "gemm": 0}
    copy, gemm = timing.Calibration._copy, timing.Calibration._gemm

    def counted(name, op):
        def wrapped(self):
            calls[name] += 1
            return op(self)
        return wrapped

    monkeypatch.setattr(timing.Calibration, "_copy", counted("copy", copy))
    monkeypatch.setattr(timing.Calibration, "_gemm", counted("gemm", gemm))
    calibration = timing.Calibration("cpu", repeats=3)
    assert calls == {"copy": 1, "gemm": 1}
    measured = calibration.measure()
    assert calls == {"copy": 4, "gemm": 4}
    assert set(measured) == {"copy_us", "gemm_us"} and min(measured.values()) > 0
    assert calibration.src is None and calibration.a is None  # the operands are gone before the timed calls
    with pytest.raises(RuntimeError, match="already measured"):
        calibration.measure()
