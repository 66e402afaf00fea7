"""The kernelbench policy in the harness (issue 47): model_new.py's rules under {"torch_compute": true}
(ast_rules/policy.py) and the op guard's run-time switch (guards.py)."""

import types

import pytest
import torch
import torch.nn.functional as F

from cuda_agent_harness.ast_rules import RULES_BY_NAME, PolicyRules, check_source
from cuda_agent_harness.errors import JobError
from cuda_agent_harness.guards import (
    OpGuard,
    block_functional,
    count_extension_calls,
    set_policy_rules,
    torch_compute_allowed,
)

KB = PolicyRules(torch_compute=True)

HYBRID = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
import cuda_extension

class ModelNew(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)
        self.ext = cuda_extension

    def forward(self, x):
        y = self.conv(x)
        y = F.relu(y) + torch.matmul(y, y) * 2
        return self.ext.scale(y, 2.0)
'''


def rules(source, policy=KB):
    return [v.rule for v in check_source(source, policy)]


def with_line(line: str) -> str:
    return HYBRID.replace("        y = self.conv(x)\n", f"        {line}\n        y = self.conv(x)\n")


def test_a_hybrid_passes_under_kernelbench_and_not_under_strict():
    assert rules(HYBRID) == []
    assert {"nn_module_call", "torch_functional", "torch_compute"} <= set(rules(HYBRID, PolicyRules()))


@pytest.mark.parametrize("line, rule", [
    ("f = torch.compile(self.conv)", "torch_compiler"),
    ("torch.jit.script(self.conv)", "torch_compiler"),
    ("torch.backends.cudnn.benchmark = True", "backend_switch"),
    ("torch.backends.cuda.matmul.allow_tf32 = True", "backend_switch"),
    ("torch.set_float32_matmul_precision('high')", "global_flags"),
    ("g = torch.cuda.CUDAGraph()", "side_stream"),
])
def test_what_wins_without_a_kernel_is_refused_naming_the_allowed_way(line, rule):
    found = check_source(with_line(line), KB)
    assert rule in [v.rule for v in found], [v.reason() for v in found]
    assert all("--policy kernelbench" in v.message for v in found if v.rule == rule), [v.reason() for v in found]


@pytest.mark.parametrize("line", ["with torch.autocast('cuda'):\n            pass",
                                  "with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):\n            pass",
                                  "torch.cuda.amp.autocast()"])
def test_switches_that_are_plain_torch_calls_are_backend_switch(line):
    assert "backend_switch" in rules(with_line(line))


def test_a_try_except_fallback_to_torch_is_refused():
    source = HYBRID.replace("        return self.ext.scale(y, 2.0)",
                            "        try:\n            return self.ext.scale(y, 2.0)\n"
                            "        except RuntimeError:\n            return y * 2")
    found = check_source(source, KB)
    assert [v.rule for v in found] == ["try_except"]
    assert "--policy kernelbench" in found[0].message


@pytest.mark.parametrize("source", [
    HYBRID.replace("self.ext.scale(y, 2.0)", "y * 2"),
    HYBRID.replace("import cuda_extension\n", "").replace("        self.ext = cuda_extension\n", "")
          .replace("self.ext.scale(y, 2.0)", "y * 2"),
])
def test_a_pure_torch_model_new_is_no_candidate(source):
    found = check_source(source, KB)
    assert [v.rule for v in found] == ["no_custom_kernel"], [v.reason() for v in found]
    assert "torch may do part of the work" in found[0].message


@pytest.mark.parametrize("call", ["cuda_extension.scale(y, 2.0)", "ext.scale(y, 2.0)", "scale(y, 2.0)"])
def test_any_alias_of_the_extension_counts_as_calling_it(call):
    source = HYBRID.replace("import cuda_extension\n",
                            "import cuda_extension\nimport cuda_extension as ext\nfrom cuda_extension import scale\n")
    assert rules(source.replace("self.ext.scale(y, 2.0)", call)) == []


@pytest.mark.parametrize("line, rule", [("e = torch.load('expected.pt')", "file_io"),
                                        ("torch.save(x, 'x.pt')", "file_io"),
                                        ("c = torch.classes.mine.Op()", "torch_ops")])
def test_torch_apis_that_are_no_compute_stay_refused(line, rule):
    assert rule in rules(with_line(line))


def test_the_rules_that_hold_everywhere_still_hold():
    assert "host_thread" in rules(with_line("import threading"))
    assert "module_state" in rules(with_line("self.calls = 1"))
    assert "introspection" in rules(with_line("import gc"))


def test_the_new_rules_are_in_the_table():
    for name in ("backend_switch", "no_custom_kernel"):
        assert "kernelbench" in RULES_BY_NAME[name].rationale


def test_policy_rules_from_a_spec():
    assert PolicyRules.from_spec(None) == PolicyRules()
    assert PolicyRules.from_spec({"torch_compute": True}).torch_compute
    # kernelbench's whole rule set (PolicyRules::ToJson): weights_by_position is the jobs', not the code's.
    assert PolicyRules.from_spec({"torch_compute": True, "weights_by_position": True}).torch_compute
    for bad in ({"torch_compute": "yes"}, {"torch": True}, [True]):
        with pytest.raises(ValueError):
            PolicyRules.from_spec(bad)


@pytest.fixture
def kernelbench_guard():
    set_policy_rules({"torch_compute": True})
    yield
    set_policy_rules(None)


def counted_extension():
    ext = types.SimpleNamespace(double=lambda t: t * 2)
    count_extension_calls(ext)
    return ext


def test_the_guard_lets_torch_compute_when_the_forward_calls_the_extension(kernelbench_guard):
    ext = counted_extension()
    guard = OpGuard("cpu")
    with block_functional(guard.record), guard.watch("check 0"):
        y = ext.double(F.relu(torch.ones(4)) + torch.ones(4))
    assert torch.equal(y, torch.full((4,), 4.0))
    assert guard.counts["aten.relu.default"] == 1


def test_the_guard_refuses_a_forward_that_called_no_extension_function(kernelbench_guard):
    guard = OpGuard("cpu")
    with pytest.raises(JobError) as err:
        with guard.watch("check 0"):
            torch.relu(torch.ones(4))
    assert err.value.kind == "no_custom_kernel"
    assert "check 0" in str(err.value) and "--policy kernelbench" in str(err.value)


def test_the_guard_still_refuses_ops_outside_aten(kernelbench_guard):
    ext = counted_extension()
    guard = OpGuard("cpu")
    with pytest.raises(JobError) as err:
        with guard.watch("check 0"):
            ext.double(torch.ones(2))
            torch.ops.prims.add(torch.ones(2), torch.ones(2))
    assert err.value.kind == "forbidden_op"


def test_strict_is_the_default_and_refuses_torch_compute():
    assert torch_compute_allowed() is False
    guard = OpGuard("cpu")
    with pytest.raises(JobError) as err:
        with guard.watch("check 0"):
            torch.relu(torch.ones(4))
    assert err.value.kind == "forbidden_op"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="host computation is told apart on CUDA only")
def test_on_cuda_host_computation_is_refused(kernelbench_guard):
    ext = counted_extension()
    guard = OpGuard("cuda")
    with pytest.raises(JobError) as err:
        with guard.watch("check 0"):
            ext.double(torch.ones(2, device="cuda"))
            torch.ones(4, device="cuda").sum().item()
    assert "host computation" in str(err.value)
