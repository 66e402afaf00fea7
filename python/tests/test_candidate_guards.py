"""The `candidate` job's runtime guards, one candidate per trick (HACKS.md A2, A3, B1, B7, B8, C1, C2).

Each guard must be able to fail: a candidate that breaks its rule fails with the guard's error_kind, and
the legitimate candidates (GOOD_CANDIDATE, in test_candidate.py too) pass.
"""

from helpers import (
    GOOD_CANDIDATE,
    TORCH_OPS_CANDIDATE,
    candidate_spec,
    compare_spec,
    make_reference,
    run,
    run_cli,
    write_candidate,
)

# ReLU on non-negative inputs is the identity: returning the input itself would pass the comparison.
IDENTITY_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(8, 4)]

def get_init_inputs():
    return []
"""

IDENTITY_HEAD = """
import numpy as np
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
"""


def identity_candidate(body: str) -> str:
    return IDENTITY_HEAD + "".join(f"        {line}\n" for line in body.strip().splitlines())


def run_candidate(tmp_path, source, task=None, name="cand"):
    ref = make_reference(tmp_path, task) if task else make_reference(tmp_path)
    spec = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, source, name), name)
    return ref, spec, run("candidate", spec)


def assert_fails(result, kind, reason_start):
    assert not result["ok"], result
    assert result["error_kind"] == kind, result
    assert result["reason"].startswith(reason_start), result["reason"]


# --- the op guard (C1, C2) --------------------------------------------------------------------------

def test_torch_compute_is_a_forbidden_op(tmp_path):
    _, _, result = run_candidate(tmp_path, TORCH_OPS_CANDIDATE)
    assert_fails(result, "forbidden_op", "check 0: forbidden torch op during the candidate's forward: "
                                         "aten.mm.default (only allocation, metadata ops and copies that keep "
                                         "dtype and device are allowed; compute in your own kernel)")
    assert result["checks_run"] == 0
    assert result["aten_ops"] == {"aten.mm.default": 1, "aten.t.default": 1}


def test_try_except_fallback_to_torch_still_fails(tmp_path):
    source = GOOD_CANDIDATE.replace(
        "        w = self.lin.weight",
        "        try:\n"
        "            return torch.relu(x)\n"
        "        except Exception:\n"
        "            pass\n"
        "        w = self.lin.weight")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "forbidden_op", "check 0: forbidden torch op during the candidate's forward: "
                                         "aten.relu.default")


def test_legitimate_candidate_reports_its_ops(tmp_path):
    ref, spec, result = run_candidate(tmp_path, GOOD_CANDIDATE)
    assert result["ok"], result
    assert set(result["aten_ops"]) == {"aten.detach.default", "aten.lift_fresh.default"}
    assert result["aten_ops"]["aten.lift_fresh.default"] == 3  # torch.from_numpy, once per check
    assert result["threads_after"] == result["threads_before"]
    assert run("compare", compare_spec(tmp_path, ref, spec))["ok"]


def test_allocation_and_views_are_allowed(tmp_path):
    source = GOOD_CANDIDATE.replace(
        "        return torch.from_numpy(y * 2 + 1 + offset)",
        "        out = torch.empty(w.shape[0], x.shape[0]).t()  # column-major\n"
        "        out.numpy()[...] = y * 2 + 1 + offset\n"
        "        scratch = torch.zeros(4).fill_(1.0).unsqueeze(0).expand(3, 4)\n"
        "        flat = out.t().reshape(-1)  # contiguous: a view, no copy\n"
        "        return flat.view(w.shape[0], x.shape[0]).t()")
    ref, spec, result = run_candidate(tmp_path, source)
    assert result["ok"], result
    assert run("compare", compare_spec(tmp_path, ref, spec))["ok"]


# --- output validity (A3, B7) -----------------------------------------------------------------------

def test_returning_the_input_is_a_bad_output(tmp_path):
    ref, spec, result = run_candidate(tmp_path, identity_candidate("return x"), IDENTITY_TASK)
    assert_fails(result, "bad_output", "check 0: output: shares memory with input 0")
    # without the guard the output would have passed: the task is the identity on these inputs
    assert result["checks_run"] == 0


def test_returning_a_view_of_the_input_is_a_bad_output(tmp_path):
    _, _, result = run_candidate(tmp_path, identity_candidate("return x.view(8, 4)"), IDENTITY_TASK)
    assert_fails(result, "bad_output", "check 0: output: shares memory with input 0")


def test_returning_a_buffer_is_a_bad_output(tmp_path):
    source = identity_candidate("return self.scale.expand(8, 4)")
    _, _, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert_fails(result, "bad_output", "check 0: output: a self-overlapping view")


def test_returning_a_weight_alias_is_a_bad_output(tmp_path):
    source = identity_candidate("return self.scale.view(4)")
    _, _, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert_fails(result, "bad_output", "check 0: output: shares memory with buffer 'scale'")


def test_a_tensor_subclass_is_a_bad_output(tmp_path):
    source = IDENTITY_HEAD.replace("class ModelNew", "class Lazy(torch.Tensor):\n    pass\n\nclass ModelNew") + (
        "        return torch.from_numpy(np.maximum(x.numpy(), 0)).as_subclass(Lazy)\n")
    _, _, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert_fails(result, "bad_output", "check 0: output: a Lazy (a torch.Tensor subclass)")


def test_an_expanded_view_is_a_bad_output(tmp_path):
    source = identity_candidate("row = torch.from_numpy(x.numpy()[0].copy())\nreturn row.expand(8, 4)")
    _, _, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert_fails(result, "bad_output", "check 0: output: a self-overlapping view (strides (0, 1)")


def test_a_tensor_on_another_device_is_a_bad_output(tmp_path):
    source = identity_candidate("return torch.empty(8, 4, device='meta')")
    _, _, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert result["error_kind"] == "bad_output"
    assert result["reason"] == "check 0: output: on device meta, expected cpu"


def test_a_copy_of_the_input_passes(tmp_path):
    source = identity_candidate("return torch.from_numpy(np.maximum(x.numpy(), 0))")
    ref, spec, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert result["ok"], result
    assert run("compare", compare_spec(tmp_path, ref, spec))["ok"]


# --- inputs and weights untouched (B8) ------------------------------------------------------------------

def test_mutating_an_input_is_mutated_input(tmp_path):
    source = GOOD_CANDIDATE.replace("        return torch.from_numpy(y * 2 + 1 + offset)",
                                    "        x.numpy()[0, 0] = 0.0\n"
                                    "        return torch.from_numpy(y * 2 + 1 + offset)")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "mutated_input", "check 0: the forward changed its inputs: input 0 holds other "
                                          "values (inputs must be left untouched)")


def test_zeroing_an_input_with_an_allowed_op_is_mutated_input(tmp_path):
    source = identity_candidate("out = torch.from_numpy(np.maximum(x.numpy(), 0))\nx.zero_()\nreturn out")
    _, _, result = run_candidate(tmp_path, source, IDENTITY_TASK)
    assert_fails(result, "mutated_input", "check 0: the forward changed its inputs: input 0")


def test_mutating_a_weight_is_mutated_weights(tmp_path):
    source = GOOD_CANDIDATE.replace("        return torch.from_numpy(y * 2 + 1 + offset)",
                                    "        self.lin.bias.detach().numpy()[:] += 1.0\n"
                                    "        return torch.from_numpy(y * 2 + 1 + offset)")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "mutated_weights", "check 0: after the forward: the model's state_dict differs "
                                            "from the reference weights: lin.bias holds other values")


def test_weights_held_in_another_dtype_are_mutated_weights(tmp_path):
    """load_state_dict converts into the parameter's dtype: a silent precision change (HACKS.md B11)."""
    source = GOOD_CANDIDATE.replace("nn.Linear(features, features)",
                                    "nn.Linear(features, features, dtype=torch.float16)")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "mutated_weights", "after load_state_dict: the model's state_dict differs from "
                                            "the reference weights: lin.weight is now Tensor[float16](8, 8), "
                                            "was Tensor[float32](8, 8)")


# --- threads (A2) -------------------------------------------------------------------------------------

def test_a_thread_left_running_is_spawned_threads(tmp_path):
    source = GOOD_CANDIDATE.replace(
        "        w = self.lin.weight",
        "        import threading, time\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "        w = self.lin.weight")
    _, _, result = run_candidate(tmp_path, source)
    # Refused when it starts (process_watch.py), so it never runs at all.
    assert_fails(result, "spawned_threads", "check 0: the candidate's code started a thread "
                                            "(threading.Thread.start)")
    assert result["threads_after"]["python"] == result["threads_before"]["python"]


def test_torch_threads_do_not_count_against_a_fresh_process(tmp_path):
    """In a fresh process torch starts its intra-op pool lazily; the job starts it before the baseline."""
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("        w = self.lin.weight",
                                    "        torch.empty(1 << 22).fill_(1.0)  # a parallel fill\n"
                                    "        w = self.lin.weight")
    spec = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, source))
    proc, result = run_cli("candidate", spec, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert result["ok"], result
    assert result["threads_after"] == result["threads_before"]


# --- stale memory (B1) ----------------------------------------------------------------------------------

def test_an_output_never_written_fails_the_comparison(tmp_path):
    """A no-op kernel: the output is whatever the allocator hands out (NaN-poisoned or fresh zeros)."""
    ref = make_reference(tmp_path)
    source = GOOD_CANDIDATE.replace("        return torch.from_numpy(y * 2 + 1 + offset)",
                                    "        return torch.empty(x.shape[0], w.shape[0])")
    spec = candidate_spec(tmp_path, ref, *write_candidate(tmp_path, source))
    proc, result = run_cli("candidate", spec, tmp_path)
    assert result["ok"], (proc.stderr, result)
    assert result["poisoned_bytes"] > 0
    compared = run("compare", compare_spec(tmp_path, ref, spec))
    assert compared["error_kind"] == "mismatch"
    assert not any(c["ok"] for c in compared["checks"])


# --- state kept across calls (B4, A5) ------------------------------------------------------------------

def test_a_module_level_cache_is_module_state(tmp_path):
    source = GOOD_CANDIDATE.replace("class ModelNew", "_SEEN = {}\n\nclass ModelNew").replace(
        "        w = self.lin.weight",
        "        _SEEN[x.data_ptr()] = True\n"
        "        w = self.lin.weight")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "module_state", "check 0: the forward changed the model's state "
                                         "(model_new._SEEN changed (a dict of 1 entries))")


def test_a_call_counter_on_self_is_module_state(tmp_path):
    source = GOOD_CANDIDATE.replace(
        "        w = self.lin.weight",
        "        self.__dict__['calls'] = self.__dict__.get('calls', 0) + 1\n"
        "        w = self.lin.weight")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "module_state", "check 0: the forward changed the model's state (ModelNew.calls was added)")


def test_returning_an_earlier_output_is_a_bad_output(tmp_path):
    """A cache out of the model-state guard's sight (here on the function object; in C++ a static map)."""
    source = GOOD_CANDIDATE.replace(
        "        return torch.from_numpy(y * 2 + 1 + offset)",
        "        seen = type(self).forward.__dict__.setdefault('seen', [])\n"
        "        if not seen:\n"
        "            seen.append(torch.from_numpy(y * 2 + 1 + offset))\n"
        "        return seen[0]")
    _, _, result = run_candidate(tmp_path, source)
    assert_fails(result, "bad_output", "check 1: output: shares memory with the output of check 0")
