"""Tests of the AST rules for model_new.py (ast_rules) and of the static job that applies them."""

import glob
import os
import textwrap

import pytest
from helpers import PYTHON_DIR, run, write

from cuda_agent_harness.ast_rules import RULES, RULES_BY_NAME, check_source

REPO = os.path.dirname(PYTHON_DIR)
HEAD = "import torch\nimport torch.nn as nn\nimport cuda_extension\n"


def rules_of(source: str) -> list[str]:
    return [v.rule for v in check_source(textwrap.dedent(source))]


def model(forward: str, init: str = "", extra: str = "", header: str = HEAD) -> str:
    """A model_new.py with ModelNew(scale) whose forward body is `forward`."""
    init_body = textwrap.indent(textwrap.dedent(init), " " * 8) if init else ""
    return header + textwrap.dedent(extra) + (
        "\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, scale: float = 1.0):\n"
        "        super().__init__()\n"
        "        self.scale = scale\n"
        f"{init_body}\n"
        "    def forward(self, x):\n"
        f"{textwrap.indent(textwrap.dedent(forward), ' ' * 8)}\n")


def test_rule_table():
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))
    for rule in RULES:
        assert rule.rationale and rule.matches, rule.name
    assert set(RULES_BY_NAME) == set(names)


def test_every_rule_is_documented():
    with open(os.path.join(REPO, "docs", "static-rules.md"), encoding="utf-8") as f:
        doc = f.read()
    python_part = doc[doc.index("## Python rules"):]
    for rule in RULES:
        assert f"| `{rule.name}` |" in python_part, f"{rule.name} is missing from docs/static-rules.md"


EXAMPLES = sorted(p for p in glob.glob(os.path.join(REPO, "examples/*/candidates/*/model_new.py"))
                  if "syntax_error" not in p)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.split(os.sep)[-2] for p in EXAMPLES])
def test_example_candidates(path):
    with open(path, encoding="utf-8") as f:
        found = check_source(f.read())
    if "uses_functional" in path:
        assert [v.rule for v in found] == ["torch_functional"], found
    else:
        assert found == [], [v.reason() for v in found]


LEGITIMATE = {
    # Real-world idioms (docs/realworld.md): reshapes as data movement, a weight read as a number, a
    # setter the forward never calls.
    "to_float32_on_the_gpu": model('return cuda_extension.f(x.to(device="cuda", dtype=torch.float32).contiguous())'),
    "reshape_and_flatten": model("return cuda_extension.f(x.reshape(4, -1), self.conv.weight.flatten(1))",
                                 init="self.conv = nn.Conv2d(3, 8, 3)"),
    "parameter_item": model("s = self.alpha.item()\nreturn cuda_extension.f(x, s * 2.0)",
                            init="self.alpha = nn.Parameter(torch.ones(1))"),
    "dead_setter": HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)

            def set_weights(self, w):
                self.conv.weight.copy_(w)

            def forward(self, x):
                return cuda_extension.f(x, self.conv.weight)
        """),
    "linear_declared_for_state_dict": model(
        "return cuda_extension.linear_gelu(x, self.linear.weight, self.linear.bias)",
        init="self.linear = nn.Linear(4, 4)"),
    "parameters_and_buffers": model(
        "return cuda_extension.f(x, self.weight, self.bias, self.table, self.scale * 2.0)",
        init="self.weight = nn.Parameter(torch.empty(4, 4))\n"
             "self.bias = nn.Parameter(torch.zeros(4))\n"
             "self.register_buffer('table', torch.arange(4.0))\n"
             "nn.init.kaiming_uniform_(self.weight)"),
    "views_metadata_creation": model(
        """
        b, n = x.shape[0], x.size(1)
        flat = x.view(b, -1).unsqueeze(0).squeeze(0).transpose(0, 1).t()
        assert x.is_contiguous() and x.dim() == 2 and x.dtype == torch.float32
        if x.numel() == 0 or x.device.type != "cuda":
            raise ValueError(f"unexpected input of shape {tuple(x.shape)}")
        y = torch.empty((b, n * 2), dtype=x.dtype, device=x.device)
        z = torch.zeros_like(x)
        w = x.new_empty(n)
        grid = (n + 255) // 256
        cuda_extension.f(flat, y, z, w, grid, int(self.scale * 4), max(1, n // 8))
        return y.view(b, 2, n)
        """),
    "helpers_and_loops": model(
        """
        outs = []
        for i in range(self.blocks(x.size(0))):
            outs.append(launch(x, i))
        y = outs[0]
        return tuple(outs) if len(outs) > 1 else y
        """,
        extra="""
        def launch(t, i: int):
            return cuda_extension.step(t, i)
        """).replace("self.scale = scale\n", "self.scale = scale\n    def blocks(self, n):\n"
                                              "        return max(1, n // 1024)\n        "),
    "annotated_scalar_argument": HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def forward(self, x: torch.Tensor, dim: int) -> torch.Tensor:
                return cuda_extension.reduce(x, dim % x.dim())
        """),
    "optional_input_and_no_grad": HEAD + textwrap.dedent("""
        from typing import Optional
        class ModelNew(nn.Module):
            def forward(self, x, bias: Optional[torch.Tensor] = None):
                with torch.no_grad():
                    if bias is None:
                        bias = torch.zeros(x.size(-1), device=x.device, dtype=x.dtype)
                    return cuda_extension.add_bias(x, bias)
        """),
    "local_submodule": HEAD + textwrap.dedent("""
        class Block(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n, n))
            def forward(self, x):
                return cuda_extension.mm(x, self.weight)
        class ModelNew(nn.Module):
            def __init__(self, n):
                super(ModelNew, self).__init__()
                self.block = Block(n)
            def forward(self, x):
                return self.block(x)
        """),
    "main_guard_is_ignored": model("return cuda_extension.f(x)") + textwrap.dedent("""
        if __name__ == "__main__":
            import time
            x = torch.randn(8, 8)
            print(torch.allclose(ModelNew()(x), torch.relu(x)), time.time())
        """),
    "module_config_attributes": model(
        """
        k = self.conv.kernel_size[0]
        if x.size(1) != self.conv.in_channels or self.norm.eps <= 0:
            raise ValueError("bad input")
        return cuda_extension.conv_bn(x, self.conv.weight, self.conv.bias, self.norm.running_mean,
                                      self.norm.running_var, self.norm.weight, self.norm.bias,
                                      k, self.conv.stride[0], self.norm.eps)
        """,
        init="self.conv = nn.Conv2d(3, 8, 3)\nself.norm = nn.BatchNorm2d(8)"),
    "constants_at_module_level": HEAD + textwrap.dedent("""
        import math
        from torch import Tensor
        BLOCK = 256
        INV_SQRT2 = 1.0 / math.sqrt(2.0)
        class ModelNew(nn.Module):
            def forward(self, x: Tensor) -> Tensor:
                return cuda_extension.gelu(x, INV_SQRT2, BLOCK)
        """),
    # Issue 46: idioms of real KernelBench solutions that must pass.
    "extension_through_self_attribute": model(
        "y = self.ext.relu_scale(x, self.scale)\nreturn self.ext.finish(y.view(-1)).view(x.shape)",
        init="self.ext = cuda_extension"),
    "extension_through_local_names": model(
        "ext = self.ext\nrelu = self.relu\ny = relu(ext.scale(x, self.scale))\nreturn y.view(x.shape)",
        init="self.ext = cuda_extension\nself.relu = cuda_extension.relu"),
    "extension_function_as_attribute": model(
        "y = self.relu(x)\nreturn y.view(x.shape)",
        init="self.relu = cuda_extension.relu"),
    "extension_module_level_aliases": HEAD + textwrap.dedent("""
        elementwise_add = cuda_extension
        relu = cuda_extension.relu
        class ModelNew(nn.Module):
            custom = cuda_extension
            def __init__(self):
                super(ModelNew, self).__init__()
                self.elementwise_add = elementwise_add
                self.swish_add_bias = cuda_extension
            def forward(self, a, b):
                c = self.elementwise_add.elementwise_add_cuda(a, b)
                d = self.swish_add_bias.swish_add_bias_cuda(c, b)
                return relu(self.custom.f(elementwise_add.g(d)))
        """),
    "extension_imported_under_another_name": HEAD + textwrap.dedent("""
        import cuda_extension as ops
        from cuda_extension import gelu
        class ModelNew(nn.Module):
            def forward(self, x):
                ext = cuda_extension
                return gelu(ops.f(ext.g(x)))
        """),
    "data_movement": model(
        """
        x = x.cuda().contiguous()
        device = x.device
        w = self.weight.to(x.device)
        b = self.bias.to(device, non_blocking=True).contiguous(memory_format=torch.contiguous_format)
        y = cuda_extension.f(x.to("cuda"), w.to(device=x.device), b.to(self.device), x.cuda(0))
        return y.to(torch.device("cuda:0")).cuda(non_blocking=True)
        """,
        init="self.weight = nn.Parameter(torch.empty(4, 4))\nself.bias = nn.Parameter(torch.zeros(4))\n"
             "self.device = torch.device('cuda')"),
    "unused_functional_import": model("return cuda_extension.f(x)",
                                      header=HEAD + "import torch.nn.functional as F\n"
                                                    "from torch.nn import functional\n"),
    "nn_class_references": model(
        """
        assert isinstance(self.conv, nn.Conv2d) and not isinstance(self.conv, Linear)
        if type(self.conv) is not nn.Conv2d:
            raise TypeError("expected a Conv2d")
        return cuda_extension.conv(x, self.conv.weight)
        """,
        init="self.conv = nn.Conv2d(3, 8, 3)", header=HEAD + "from torch.nn import Linear\n"),
    "current_stream_and_checks": model(
        """
        assert x.is_cuda, "x must be a CUDA tensor"
        if not x.is_contiguous() or x.numel() == 0:
            raise ValueError("bad input")
        stream = torch.cuda.current_stream().cuda_stream
        out = x.new_empty(x.shape)
        return cuda_extension.f(x, out, x.size(-1), stream)
        """),
    "lists_of_outputs": model(
        """
        outs = [x]
        for i, t in enumerate(self.weights):
            if i > 0 and i != len(self.weights) - 1:
                outs.append(cuda_extension.step(outs[-1], t))
        outs.extend([cuda_extension.f(x)])
        return outs.pop()
        """,
        init="self.weights = nn.ParameterList([nn.Parameter(torch.empty(4)) for _ in range(3)])"),
}


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
def test_legitimate_code_passes(name):
    found = check_source(LEGITIMATE[name])
    assert found == [], [v.reason() for v in found]


HACKS = {
    # C1: torch compute from Python.
    "functional_call": ("torch_functional", model("return torch.nn.functional.relu(x) * self.scale")),
    "functional_alias": ("torch_functional", model("return F.gelu(x)",
                                                   header=HEAD + "import torch.nn.functional as F\n")),
    "functional_from_import": ("torch_functional", model("return relu(x)",
                                                         header=HEAD + "from torch.nn.functional import relu\n")),
    "torch_function": ("torch_compute", model("return torch.relu(x) * self.scale")),
    "torch_matmul_value": ("torch_compute", model("return cuda_extension.apply(torch.matmul, x)")),
    "tensor_method": ("tensor_compute", model("return x.relu()")),
    "contiguous_then_arithmetic": ("tensor_compute", model("y = x.contiguous()\nreturn cuda_extension.f(y * 2)")),
    "reshape_then_arithmetic": ("tensor_compute", model("return cuda_extension.f(x.reshape(4, -1) + 1)")),
    "input_item": ("tensor_compute", model("return cuda_extension.f(x, x.item())")),
    "input_element_item": ("tensor_compute", model("return cuda_extension.f(x[0].item())")),
    "parameter_item_times_output": ("tensor_compute", model("return cuda_extension.f(x) * self.alpha.item()",
                                                            init="self.alpha = nn.Parameter(torch.ones(1))")),
    # A method never called by the file but by Python itself is checked like forward.
    "dunder_computes": ("tensor_compute", HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(4))

            def __repr__(self):
                return str(self.w * 2)

            def forward(self, x):
                return cuda_extension.f(x, self.w)
        """)),
    # A method the forward calls is checked with the forward's taint, however it is named.
    "called_setter_computes": ("tensor_compute", HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(4))

            def scaled(self, x):
                return x * 2

            def forward(self, x):
                return cuda_extension.f(self.scaled(x), self.w)
        """)),
    # Data movement may not change precision, take its dtype from another tensor or leave the GPU.
    "to_half": ("tensor_compute", model("return cuda_extension.f(x.to(torch.float16))")),
    "to_float32_without_a_device": ("tensor_compute", model("return cuda_extension.f(x.to(dtype=torch.float32))")),
    "to_dtype_keyword": ("tensor_compute", model("return cuda_extension.f(x.to(device=x.device, dtype=torch.half))")),
    "to_device_and_dtype": ("tensor_compute", model("return cuda_extension.f(x.to(x.device, torch.float16))")),
    "to_other_tensor": ("tensor_compute", model("return cuda_extension.f(x.to(self.w))",
                                                init="self.w = nn.Parameter(torch.empty(2, 2))")),
    "to_dtype_named_device": ("tensor_compute", model("device = torch.float16\nreturn cuda_extension.f(x.to(device))")),
    "to_host": ("tensor_compute", model("return cuda_extension.f(x.to('cpu'))")),
    "to_device_of_an_object": ("tensor_compute", model(
        "d = [Holder(), x][0]\nreturn cuda_extension.f(x.to(d.device))",
        extra="class Holder:\n    device = torch.float16\n")),
    "to_host_device": ("tensor_compute", model("return cuda_extension.f(x.to(torch.device('cpu')))")),
    "to_copy": ("tensor_compute", model("return cuda_extension.f(x.to(x.device, copy=True))")),
    "half": ("tensor_compute", model("return cuda_extension.f(x.half())")),
    "float": ("tensor_compute", model("return cuda_extension.f(x.contiguous().float())")),
    "cpu": ("tensor_compute", model("return cuda_extension.f(x.cpu())")),
    # An alias of the extension may not hide torch: the alias is only trusted when it is the extension.
    "attribute_alias_of_torch_function": ("nn_module_call", model("return self.f(x)", init="self.f = torch.relu")),
    "attribute_alias_of_nn_layer": ("nn_module_call", model("return self.f(x)", init="self.f = nn.ReLU()")),
    "attribute_alias_reassigned": ("nn_module_call", model("return self.f(x)",
                                                           init="self.f = cuda_extension.f\nself.f = torch.relu")),
    "module_alias_of_functional": ("torch_functional", model("return g(x)",
                                                             extra="import torch.nn.functional as F\ng = F.relu\n")),
    "module_alias_rebound": ("torch_compute", model("return ext.relu(x)", extra="ext = cuda_extension\next = torch\n")),
    "init_default_replaces_alias": ("nn_module_call", HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def __init__(self, ext=torch):
                super().__init__()
                self.ext = ext
            def forward(self, x):
                return self.ext.relu(x)
        """)),
    "init_local_shadows_alias": ("nn_module_call", model("return self.ext.relu(x)", init="ext = torch\nself.ext = ext",
                                                         extra="ext = cuda_extension\n")),
    "class_attribute_shadows_alias": ("nn_module_call", HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            cuda_extension = torch
            ops = cuda_extension
            def forward(self, x):
                return self.ops.relu(x)
        """)),
    "import_in_a_function_rebinds_a_name": ("torch_compute", HEAD + textwrap.dedent("""
        def unused():
            import cuda_extension as torch
        class ModelNew(nn.Module):
            def forward(self, x):
                return torch.relu(x)
        """)),
    "local_extension_name_rebound": ("torch_compute", model("g = self.f\ng = torch.relu\nreturn g(x)",
                                                            init="self.f = cuda_extension.f")),
    "local_rebinds_extension_alias": ("unknown_call", model("f = x.relu\nreturn f()", extra="f = cuda_extension.f\n")),
    "extension_patched_through_self": ("torch_patching", model(
        "return self.ext.f(x)", init="self.ext = cuda_extension\nself.ext.f = torch.relu")),
    "extension_patched_through_local": ("torch_patching", model(
        "return self.ext.f(x)", init="self.ext = cuda_extension\ne = self.ext\ne.f = torch.relu")),
    "torch_module_as_value": ("torch_compute", model("return helper(torch, x)",
                                                     extra="def helper(t, x):\n    return t.relu(x)\n")),
    "object_default_of_scalar_parameter": ("tensor_compute", HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def forward(self, x, t: int = torch):
                return t.relu(x)
        """)),
    "nn_class_called_through_alias": ("torch_compute", model("layer = nn.Linear\nreturn layer(4, 4)(x)")),
    "nn_class_forward": ("torch_compute", model("return nn.Linear.forward(self.l, x)",
                                                init="self.l = nn.Linear(4, 4)")),
    "cache_through_local_alias": ("module_state", model("c = self.cache\nc[0] = cuda_extension.f(x)\nreturn c[0]",
                                                        init="self.cache = {}")),
    "tensor_through_a_list": ("tensor_compute", model("outs = []\nouts.append(x)\n"
                                                      "return cuda_extension.f(outs[0] * 2)")),
    "tensor_through_a_dict": ("tensor_compute", model("d = {}\nd['a'] = x\nreturn cuda_extension.f(-d['a'])")),
    "list_sort_compares_tensors": ("tensor_compute", model("ys = [x, cuda_extension.f(x)]\nys.sort()\nreturn ys[0]")),
    "arithmetic_on_result": ("tensor_compute", model("return cuda_extension.relu(x) * self.scale")),
    "arithmetic_on_input": ("tensor_compute", model("return cuda_extension.f(x + 0)")),
    "matmul_operator": ("tensor_compute", model("return cuda_extension.f(x @ self.w)",
                                                init="self.w = nn.Parameter(torch.empty(2, 2))")),
    "comparison": ("tensor_compute", model("return cuda_extension.f(x > 0)")),
    "truth_test": ("tensor_compute", model("y = cuda_extension.f(x)\nif y.sum():\n    return y\nreturn x")),
    "inplace_write": ("tensor_compute", model("y = cuda_extension.f(x)\ny[0] = 0\nreturn y")),
    "advanced_indexing": ("tensor_compute", model("idx = cuda_extension.argsort(x)\nreturn x[idx]")),
    "item": ("tensor_compute", model("return cuda_extension.f(x, float(x.max()))")),
    "nn_layer_called": ("nn_module_call", model("return cuda_extension.gelu(self.linear(x))",
                                                init="self.linear = nn.Linear(4, 4)")),
    "nn_layer_forward": ("nn_module_call", model("return self.linear.forward(x)",
                                                 init="self.linear = nn.Linear(4, 4)")),
    "nn_layer_built_in_forward": ("torch_compute", model("return nn.ReLU()(x)")),
    "helper_of_a_submodule": ("tensor_compute", HEAD + textwrap.dedent("""
        class Ops(nn.Module):
            def add(self, a, b):
                return a + b
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.ops = Ops()
            def forward(self, x):
                return self.ops.add(cuda_extension.f(x), x)
        """)),
    "nested_nn_layer": ("nn_module_call", HEAD + textwrap.dedent("""
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)
            def forward(self, x):
                return cuda_extension.gelu(self.proj(x))
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                return self.block(x)
        """)),
    "layer_config_is_not_a_tensor_but_its_weight_is": ("tensor_compute", model(
        "return cuda_extension.f(x, self.linear.weight * self.linear.in_features)",
        init="self.linear = nn.Linear(4, 4)")),
    "layer_base_class": ("forbidden_base_class", HEAD + "class ModelNew(nn.Linear):\n    pass\n"),
    "torch_compile": ("torch_compiler", model("return self.fn(x)", init="self.fn = torch.compile(torch.relu)")),
    "torch_jit": ("torch_compiler", model("return cuda_extension.f(x)",
                                          extra="@torch.jit.script\ndef g(x):\n    return x\n")),
    "torch_ops": ("torch_ops", model("return torch.ops.aten.relu.default(x)")),
    "torch_C": ("torch_ops", model("return torch._C._nn.gelu(x)")),
    "load_inline": ("torch_ops", model("return cuda_extension.f(x)",
                                       header=HEAD + "from torch.utils.cpp_extension import load_inline\n")),
    # C2
    "try_fallback": ("try_except", model("try:\n    return cuda_extension.f(x)\nexcept Exception:\n    return x")),
    # A1, A2
    "side_stream": ("side_stream", model("return cuda_extension.f(x, self.s.cuda_stream)",
                                         init="self.s = torch.cuda.Stream()")),
    "threading": ("host_thread", model("return cuda_extension.f(x)", header=HEAD + "import threading\n")),
    "concurrent": ("host_thread", model("return cuda_extension.f(x)",
                                        header=HEAD + "from concurrent.futures import ThreadPoolExecutor\n")),
    "torch_multiprocessing": ("host_thread", model("return cuda_extension.f(x)",
                                                   init="self.q = torch.multiprocessing.Queue()")),
    # A3
    "tensor_subclass": ("lazy_output", HEAD + "class Lazy(torch.Tensor):\n    pass\n" + model("return x", header="")),
    "torch_function_hook": ("lazy_output", HEAD + "class L:\n    def __torch_function__(self, *a):\n        pass\n"),
    # A4
    "patch_synchronize": ("torch_patching", HEAD + "torch.cuda.synchronize = lambda: None\n"),
    "patch_in_init": ("torch_patching", model("return cuda_extension.f(x)",
                                              init="torch.cuda.Event.elapsed_time = lambda a, b: 0.0")),
    "patch_via_alias": ("torch_patching", HEAD + "cuda = torch.cuda\ncuda.synchronize = print\n"),
    "tf32_flag": ("torch_patching", HEAD + "torch.backends.cuda.matmul.allow_tf32 = True\n"),
    "setattr": ("dynamic_code", HEAD + "setattr(torch.cuda, 'synchronize', print)\n"),
    "ctypes": ("native_access", HEAD + "import ctypes\n"),
    "profiler": ("timer_patching", model("return cuda_extension.f(x)",
                                         init="torch.profiler.profile().__exit__(None, None, None)")),
    "time": ("clock_read", HEAD + "import time\n"),
    # B2
    "gc": ("introspection", HEAD + "import gc\n"),
    "inspect": ("introspection", HEAD + "import inspect\n"),
    "sys_getframe": ("introspection", HEAD + "from sys import _getframe\n"),
    "import_reference": ("reference_access", HEAD + "from model import Model\n"),
    "import_harness": ("reference_access", HEAD + "import cuda_agent_harness.jobs\n"),
    "dunder_escape": ("dynamic_code", model("return x.__class__.__bases__[0].__subclasses__()")),
    "builtins_name": ("dynamic_code", model("return __builtins__['eval']('x')")),
    "open_file": ("file_io", model("return cuda_extension.f(x, open('/tmp/expected.pt', 'rb').read())")),
    "os": ("process_escape", HEAD + "import os\n"),
    "relative_import": ("forbidden_import", HEAD + "from . import helpers\n"),
    "numpy": ("library_compute", HEAD + "import numpy as np\n"),
    "other_import": ("forbidden_import", HEAD + "import functools\n"),
    # B4, A5
    "self_state": ("module_state", model("self.calls = self.calls + 1\nreturn cuda_extension.f(x)",
                                         init="self.calls = 0")),
    "cache_by_id": ("module_state", model("k = id(x)\nreturn cuda_extension.f(x, k)")),
    "module_cache": ("module_state", model("CACHE.append(x)\nreturn cuda_extension.f(x)", extra="CACHE = []\n")),
    "global_statement": ("module_state", model("global CALLS\nCALLS += 1\nreturn cuda_extension.f(x)",
                                               extra="CALLS = 0\n")),
    "override_load_state_dict": ("module_override", HEAD + textwrap.dedent("""
        class ModelNew(nn.Module):
            def _load_from_state_dict(self, state_dict, *args):
                pass
        """)),
    # A8, B5, B11
    "seed": ("global_flags", model("return cuda_extension.f(x)", init="torch.manual_seed(0)")),
    "precision": ("global_flags", HEAD + "torch.set_float32_matmul_precision('high')\n"),
    # Unknown calls.
    "unknown_callable": ("unknown_call", model("f = self.pick()\nreturn f(x)").replace(
        "self.scale = scale\n", "self.scale = scale\n    def pick(self):\n        return cuda_extension.f\n        ")),
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_is_rejected(name):
    rule, source = HACKS[name]
    assert rule in RULES_BY_NAME
    found = check_source(source)
    assert rule in [v.rule for v in found], [v.reason() for v in found]


def test_violation_format():
    found = check_source(model("return torch.relu(x)"))
    assert found[0].as_dict() == {"rule": "torch_compute", "file": "model_new.py", "line": 11,
                                  "message": found[0].message}
    assert found[0].reason().startswith("torch_compute: model_new.py:11: ")


def test_same_line_reports_the_specific_rule_first():
    found = check_source(model("return torch.ops.aten.relu(x) * 2"))
    assert found[0].rule == "torch_ops"


def static_spec(tmp_path, candidate_dir):
    return {"result_path": str(tmp_path / "static.json"), "candidate_dir": str(candidate_dir)}


def test_static_job_reports_violations(tmp_path):
    write(tmp_path / "c" / "model_new.py", model("y = cuda_extension.f(x)\nreturn y * 2", header=HEAD + "import gc\n"))
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert not result["ok"]
    assert result["error_kind"] == "static_rule"
    assert result["reason"].startswith("introspection: model_new.py:4: "), result["reason"]
    assert [v["rule"] for v in result["violations"]] == ["introspection", "tensor_compute"]
    assert all(set(v) == {"rule", "file", "line", "message"} for v in result["violations"])


def test_static_job_passes_a_clean_candidate_with_empty_violations(tmp_path):
    write(tmp_path / "c" / "model_new.py", model("return cuda_extension.f(x)"))
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert result["ok"], result
    assert result["violations"] == []


def test_long_expressions_are_checked():
    found = check_source(model("return cuda_extension.f(" + "x + " * 2500 + "x)"))
    assert [v.rule for v in found] == ["tensor_compute"]
    assert check_source(model("n = " + "1 + " * 2500 + "1\nreturn cuda_extension.f(x, n)")) == []


def test_static_job_rejects_an_oversized_model_new(tmp_path):
    write(tmp_path / "c" / "model_new.py", model("return cuda_extension.f(x)") + "#" * 300_000 + "\n")
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert result["error_kind"] == "static_rule"
    assert result["reason"].startswith("unanalysable: model_new.py:1: ")


def test_checking_is_fast_on_a_large_file():
    import time
    body = "\n".join(f"y{i} = cuda_extension.f(x, {i}) if x.dim() > {i % 3} else x.view(-1)" for i in range(2000))
    start = time.perf_counter()
    check_source(model(body + "\nreturn y0"))
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("source, rule, allowed", [
    (model("return cuda_extension.f(x)", init="self.stream = torch.cuda.Stream()"), "side_stream",
     "getCurrentCUDAStream()"),
    (model("self.last = cuda_extension.f(x)\nreturn self.last"), "module_state", "set attributes in __init__"),
    (HEAD + "import threading\nclass ModelNew(nn.Module):\n    pass\n", "host_thread", "inside forward"),
    (model("return cuda_extension.f(x.half())"), "tensor_compute", ".to(device)"),
    (model("return cuda_extension.f(x.to(torch.float16))"), "tensor_compute", "convert dtypes in your kernel"),
    (model("return cuda_extension.f(x.clone())"), "tensor_compute", ".contiguous()/.cuda()/.to(device)"),
])
def test_refusals_of_legitimate_idioms_name_the_allowed_way(source, rule, allowed):
    messages = [v.message for v in check_source(source) if v.rule == rule]
    assert messages, f"{rule} did not fire"
    assert allowed in messages[0], messages[0]
