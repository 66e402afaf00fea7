"""Idioms of third-party KernelBench solutions that the AST rules accept (issue 46, part 2), each beside
the look-alike cheat they must still refuse: branches on the inputs' device and on the task's
configuration, torch.tensor of literals and shapes, x.to(w.device, w.dtype) with a task tensor's dtype,
and torch.autograd.Function wrappers around the extension."""

import textwrap

import pytest
import torch

from cuda_agent_harness.ast_rules import check_source
from cuda_agent_harness.errors import JobError
from cuda_agent_harness.guards import OpGuard

HEAD = "import torch\nimport torch.nn as nn\nimport cuda_extension\n"


def model(forward: str, init: str = "", extra: str = "", cls: str = "ModelNew") -> str:
    init_body = textwrap.indent(textwrap.dedent(init), " " * 8) if init else ""
    return HEAD + textwrap.dedent(extra) + (
        f"\nclass {cls}(nn.Module):\n"
        "    def __init__(self, dim: int = 1):\n"
        "        super().__init__()\n"
        "        self.dim = dim\n"
        f"{init_body}\n"
        "    def forward(self, x):\n"
        f"{textwrap.indent(textwrap.dedent(forward), ' ' * 8)}\n")


def rules(source: str) -> list[str]:
    return [v.rule for v in check_source(source)]


def reasons(source: str) -> list[str]:
    return [v.reason() for v in check_source(source)]


AUTOGRAD = """
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        y = cuda_extension.linear_relu(x, w)
        ctx.save_for_backward(x, w, y)
        ctx.alpha = 0.5
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        g = grad * (y > 0)
        return g.matmul(w), g.t().matmul(x)
"""

LEGITIMATE = {
    # 1. a branch on the inputs' device: the judged inputs are on the GPU, so it is dead there
    "not_is_cuda_fallback": model("if not x.is_cuda:\n    return x * torch.sigmoid(x)\n"
                                  "if not x.is_contiguous():\n    x = x.contiguous()\n"
                                  "return cuda_extension.swish(x)"),
    "is_cuda_else_fallback": model("if x.is_cuda:\n    return cuda_extension.f(x)\nelse:\n"
                                   "    return torch.relu(x)"),
    "device_type_fallback": model("if x.device.type != 'cuda' or not x.is_cuda:\n    return torch.relu(x)\n"
                                  "return cuda_extension.f(x)"),
    "device_check_after_move": model("x = x.to(x.device, x.dtype)\nif x.device.type == 'cpu':\n"
                                     "    return torch.relu(x)\nreturn cuda_extension.f(x)"),
    # 6. a torch fallback in the else of a branch on the task's configuration
    "configuration_else_fallback": model(
        "if x.is_cuda and self.dim == 1 and x.dtype == torch.float32 and x.dim() == 3:\n"
        "    return self.op(x)\nelse:\n    return torch.mean(x, dim=self.dim)",
        init="self.op = cuda_extension.mean_dim1"),
    "configuration_if_fallback": model(
        "if self.dim != 1 or len(x.shape) != 3:\n    return torch.argmin(x, dim=self.dim)\nelse:\n"
        "    return cuda_extension.argmin_dim1(x)"),
    # 3. small tensors made from literals and shapes
    "tensor_placeholder": model("bias = self.bias if self.has_bias else torch.tensor([])\n"
                                "return cuda_extension.f(x, bias if self.has_bias else torch.tensor([], "
                                "device=x.device))",
                                init="self.has_bias = False\nself.bias = nn.Parameter(torch.zeros(4))"),
    "tensor_of_shape": model("shape = torch.tensor(x.shape, dtype=torch.int64)\n"
                             "return cuda_extension.f(x, shape, torch.tensor([1.0, 2.0]))"),
    # 2. to() with the device and dtype of a task tensor
    "to_parameter_dtype": model("x = x.to(self.weight.device, self.weight.dtype)\n"
                                "return cuda_extension.f(x, self.weight)",
                                init="self.weight = nn.Parameter(torch.empty(4))"),
    "to_parameter_list_dtype": model("x = x.to(self.ws[0].device, self.ws[0].dtype)\n"
                                     "return cuda_extension.f(x, self.ws[0])",
                                     init="self.ws = nn.ParameterList([nn.Parameter(torch.empty(4))])"),
    "to_layer_weight_dtype": model("return cuda_extension.f(x.to(dtype=self.fc.weight.dtype), self.fc.weight)",
                                   init="self.fc = nn.Linear(4, 4)"),
    "to_input_dtype": model("return cuda_extension.f(x.to(x.dtype))"),
    # 5. copy_ into a tensor of the model's own (data movement, as the C++ scan allows it)
    "copy_into_own_buffer": model("staged = torch.empty_like(x)\nstaged.copy_(x, non_blocking=True)\n"
                                  "y = cuda_extension.f(staged)\nout = torch.empty_like(y)\nout.copy_(y, True)\n"
                                  "return out"),
    # 4. an autograd wrapper of the extension
    "autograd_function": model("return Fn.apply(x, self.w)", init="self.w = nn.Parameter(torch.empty(4, 4))",
                               extra=AUTOGRAD),
    "autograd_function_in_configuration_branch": model(
        "if x.dtype == torch.float32:\n    return Fn.apply(x, self.w)\nelse:\n    return torch.relu(x)",
        init="self.w = nn.Parameter(torch.empty(4, 4))", extra=AUTOGRAD),
}


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
def test_real_world_idiom_passes(name):
    assert reasons(LEGITIMATE[name]) == []


CHEATS = {
    # 1. the device of a tensor the candidate made (or moved) may be the host: its branch may run
    "device_of_own_tensor": ("torch_compute", model("h = torch.empty(1)\nif not h.is_cuda:\n"
                                                    "    return torch.relu(x)\nreturn cuda_extension.f(x)")),
    "device_of_self_tensor": ("torch_compute", model("if not self.t.is_cuda:\n    return torch.relu(x)\n"
                                                     "return cuda_extension.f(x)", init="self.t = torch.zeros(1)")),
    "input_moved_to_host": ("torch_compute", model("x = x.cpu()\nif not x.is_cuda:\n    return torch.relu(x)\n"
                                                   "return cuda_extension.f(x)")),
    "device_of_defaulted_parameter": ("torch_compute", model("return x", extra="") .replace(
        "def forward(self, x):\n        return x",
        "def forward(self, x, h=torch.zeros(1)):\n        if not h.is_cuda:\n            return torch.relu(x)\n"
        "        return cuda_extension.f(x)")),
    "live_device_branch": ("torch_compute", model("if x.is_cuda:\n    return torch.relu(x)\n"
                                                  "return cuda_extension.f(x)")),
    "device_or_training": ("torch_compute", model(
        "if not x.is_cuda or self.training:\n    return torch.relu(x)\nreturn cuda_extension.f(x)")),
    "device_branch_outside_model_new": ("torch_compute", model(
        "if not x.is_cuda:\n    return torch.relu(x)\nreturn cuda_extension.f(x)", cls="Block")
        + "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"),
    # 6. branches on values, on per-call properties, or with torch on both sides
    "value_branch": ("torch_compute", model("if x.sum() > 0:\n    return cuda_extension.f(x)\nelse:\n"
                                            "    return torch.relu(x)")),
    "pointer_branch": ("torch_compute", model("if x.data_ptr() % 1024 == 0:\n    return cuda_extension.f(x)\n"
                                              "else:\n    return torch.relu(x)")),
    "training_branch": ("torch_compute", model("if self.training:\n    return cuda_extension.f(x)\nelse:\n"
                                               "    return torch.relu(x)")),
    "torch_in_both_branches": ("torch_compute", model("if self.dim == 1:\n    return torch.relu(x)\nelse:\n"
                                                      "    return torch.sigmoid(x)")),
    "configuration_without_else": ("torch_compute", model("if self.dim == 1:\n    return torch.mean(x, 1)\n"
                                                          "return cuda_extension.f(x)")),
    "state_in_a_dead_branch": ("module_state", model("if not x.is_cuda:\n    self.seen = x\n    return x\n"
                                                     "return cuda_extension.f(x)")),
    "state_in_a_configuration_fallback": ("module_state", model(
        "if self.dim == 1:\n    return cuda_extension.f(x)\nelse:\n    self.cache[0] = x\n    return x",
        init="self.cache = [None]")),
    # 3. a tensor's values copied into a new tensor
    "tensor_of_tensor": ("tensor_compute", model("return cuda_extension.f(torch.tensor(x))")),
    "tensor_of_values": ("tensor_compute", model("return cuda_extension.f(torch.tensor(x.tolist()))")),
    "tensor_of_result": ("tensor_compute", model("y = cuda_extension.f(x)\nreturn torch.tensor([y, y])")),
    # 2. a dtype that is not the task's
    "to_half_with_device": ("tensor_compute", model("return cuda_extension.f(x.to(x.device, torch.float16))")),
    "to_half_keyword": ("tensor_compute", model("return cuda_extension.f(x.to(self.w.device, dtype=torch.half))",
                                                init="self.w = nn.Parameter(torch.empty(4))")),
    "to_dtype_of_result": ("tensor_compute", model("y = cuda_extension.f(x)\nreturn cuda_extension.g(x.to(y.dtype))")),
    "to_dtype_of_plain_list": ("tensor_compute", model("return cuda_extension.f(x.to(self.ws[0].dtype))",
                                                       init="self.ws = [torch.empty(4, dtype=torch.half)]")),
    "to_dtype_of_a_helpers_parameter": ("tensor_compute", model(
        "return self.helper(x, torch.empty(1, dtype=torch.half))", extra="") .replace(
        "    def forward(self, x):", "    def helper(self, x, h):\n        return cuda_extension.f(x.to(h.dtype))\n\n"
        "    def forward(self, x):")),
    # 5. copy_ that writes an input or a parameter, or copies computed values
    "copy_into_input": ("tensor_compute", model("y = cuda_extension.f(x)\nx.copy_(y)\nreturn x")),
    "copy_into_input_view": ("tensor_compute", model("y = cuda_extension.f(x)\nv = x.view(-1)\n"
                                                     "v.copy_(y.view(-1))\nreturn x")),
    "copy_into_parameter": ("tensor_compute", model("self.w.copy_(x)\nreturn cuda_extension.f(x, self.w)",
                                                    init="self.w = nn.Parameter(torch.empty(4))")),
    "copy_of_arithmetic": ("tensor_compute", model("buf = torch.empty_like(x)\nbuf.copy_(x * 2)\n"
                                                   "return cuda_extension.f(buf)")),
    "to_other_tensor": ("tensor_compute", model("return cuda_extension.f(x.to(self.w))",
                                                init="self.w = nn.Parameter(torch.empty(4))")),
    # 4. torch inside the wrapper's forward, through apply
    "autograd_forward_torch": ("torch_compute", model("return Fn.apply(x)", extra="""
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return cuda_extension.f(torch.relu(x))
        """)),
    "autograd_forward_arithmetic": ("tensor_compute", model("return Fn.apply(x)", extra="""
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.keep = x
                return cuda_extension.f(x) * 2 + ctx.keep
        """)),
    "autograd_result_arithmetic": ("tensor_compute", model("return Fn.apply(x) * 2", extra="""
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return cuda_extension.f(x)
        """)),
    "autograd_own_apply": ("torch_compute", model("return Fn.apply(x)", extra="""
        class Fn(torch.autograd.Function):
            @classmethod
            def apply(cls, x):
                return torch.relu(x)
        """)),
    "autograd_apply_assigned": ("unknown_call", model("return Fn.apply(x)", extra="""
        class Fn(torch.autograd.Function):
            apply = torch.relu
        """)),
    "autograd_forward_assigned": ("unknown_call", model("return Fn.apply(x)", extra="""
        class Fn(torch.autograd.Function):
            forward = staticmethod(torch.relu)
        """)),
    "autograd_setup_context_torch": ("torch_compute", model("return Fn.apply(x)", extra="""
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return cuda_extension.f(x)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.y = torch.relu(output)
        """)),
    "autograd_backward_called": ("tensor_compute", model("y = Fn.apply(x)\ny.backward()\nreturn y", extra="""
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return cuda_extension.f(x)
        """)),
    "other_autograd_base": ("forbidden_base_class", model("return cuda_extension.f(x)", extra="""
        class Fn(torch.autograd.function.InplaceFunction):
            pass
        """)),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_look_alike_cheat_is_refused(name):
    rule, source = CHEATS[name]
    assert rule in rules(source), reasons(source)


@pytest.mark.parametrize("name, allowed", [
    ("tensor_of_tensor", "torch.tensor(...) of literals and shapes"),
    ("to_half_with_device", "convert dtypes in your kernel"),
    ("copy_into_input", "dst.copy_(src) into a tensor of yours"),
    ("other_autograd_base", "torch.autograd.Function for an autograd wrapper"),
])
def test_refusals_name_the_allowed_way(name, allowed):
    rule, source = CHEATS[name]
    messages = [v.message for v in check_source(source) if v.rule == rule]
    assert messages and allowed in messages[0], messages


# The run-time op guard, which the static rules rely on for what they let through: the placeholder
# tensors and copies that keep dtype and device are allowed there too, conversions are not, and a taken
# fallback is refused.

@pytest.mark.filterwarnings("ignore:To copy construct")
def test_op_guard_allows_placeholders_and_copies_and_refuses_conversions():
    guard = OpGuard()
    x = torch.randn(4)
    with guard.watch("check 0"):
        empty = torch.tensor([])
        shape = torch.tensor(x.shape, dtype=torch.int64)
        same = x.to(x.device, x.dtype)
        copied = torch.tensor(x.detach())  # a copy, same dtype and device: data movement (issue 46)
        staged = torch.empty_like(x)
        staged.copy_(x)  # copy_ into a buffer of the same dtype: data movement too
    assert guard.violation is None and empty.numel() == 0 and shape.tolist() == [4] and same is x
    assert torch.equal(copied, x) and torch.equal(staged, x)
    with pytest.raises(JobError) as failure:
        with OpGuard().watch("check 1"):
            torch.empty_like(x, dtype=torch.float16).copy_(x)
    assert "aten.copy_" in failure.value.reason and "converts between" in failure.value.reason
    with pytest.raises(JobError) as failure:
        with OpGuard().watch("check 1"):
            x.to(x.device, torch.float16)
    assert "aten._to_copy" in failure.value.reason and "converts between float32 and float16" in \
        failure.value.reason


def test_op_guard_refuses_a_configuration_fallback_that_runs():
    """The static rules let `if <configuration>: ext(x) else: torch...` through; where the task takes
    the torch side, the first checked call fails."""
    namespace: dict = {}
    source = model("if self.dim == 2:\n    return cuda_extension.f(x)\nelse:\n    return torch.mean(x, dim=self.dim)")
    assert rules(source) == []
    exec(compile(source.replace("import cuda_extension\n", ""), "model_new.py", "exec"), namespace)  # noqa: S102 - our own source
    candidate = namespace["ModelNew"](1)
    x = torch.randn(3, 4)
    with pytest.raises(JobError) as failure:
        with OpGuard().watch("check 0"):
            candidate(x)
    assert "aten.mean" in failure.value.reason
