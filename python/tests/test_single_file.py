"""KernelBench's single-file solutions read statically into candidate folders (single_file.py)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import pytest

from cuda_agent_harness import single_file
from cuda_agent_harness.single_file import Refusal, convert

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CUDA_SOURCE = '''
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
torch::Tensor relu_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
'''

# The typical shape: sources in module-level names, functions=[...], flags passed.
PLAIN = f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """{CUDA_SOURCE}"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

relu = load_inline(
    name="relu_ext",
    cpp_sources=cpp_src,
    cuda_sources=source,
    functions=["relu_cuda"],
    verbose=True,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3", "--use_fast_math"],
    extra_ldflags=[""],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = relu

    def forward(self, x):
        return self.relu.relu_cuda(x)
'''

PYBIND = f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """{CUDA_SOURCE}"""
cpp_src = """
torch::Tensor relu_cuda(torch::Tensor x);
// PYBIND11_MODULE(in_a_comment, m) {{}}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {{
  module.def("relu_cuda", &relu_cuda, "ReLU (CUDA)");
}}
"""
ext = load_inline("relu_pybind", cpp_src, cuda_src)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
'''


def solution(body: str) -> str:
    """A solution whose module level is `body` (dedented), with the usual imports."""
    return "import torch\nfrom torch.utils.cpp_extension import load_inline\n" + textwrap.dedent(body)


def refusal(text: str) -> Refusal:
    with pytest.raises(Refusal) as info:
        convert(text, "sol.py")
    return info.value


def test_plain_functions_file_gives_sources_binding_and_model():
    c = convert(PLAIN, "sol.py")
    assert sorted(c.files) == ["kernels/relu_ext.cu", "kernels/relu_ext_binding.cpp", "model_new.py"]
    cu = c.files["kernels/relu_ext.cu"]
    # load_inline's implicit headers, then the author's source unchanged.
    assert cu.index("#include <torch/types.h>") < cu.index("#include <cuda_runtime.h>") < cu.index(
        "__global__ void relu_kernel")
    assert CUDA_SOURCE in cu
    binding = c.files["kernels/relu_ext_binding.cpp"]
    assert "#include <torch/extension.h>" in binding
    assert '#include "../binding_registry.h"' in binding
    assert "torch::Tensor relu_cuda(torch::Tensor x);" in binding
    assert 'm.def("relu_cuda", &relu_cuda, "relu_cuda");' in binding
    assert "REGISTER_BINDING(relu_ext, cuda_agent_bind_relu_ext);" in binding
    assert "PYBIND11_MODULE" not in binding


def test_model_new_keeps_the_authors_code_and_lines():
    c = convert(PLAIN, "sol.py")
    model = c.files["model_new.py"]
    old, new = PLAIN.splitlines(), model.splitlines()
    assert len(old) == len(new)
    changed = [k + 1 for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b]
    call = next(n for n in ast.walk(ast.parse(PLAIN)) if isinstance(n, ast.Call)
                and getattr(n.func, "id", "") == "load_inline")
    # Only the import line and the call's lines change.
    assert set(changed) <= {3} | set(range(call.lineno, call.end_lineno + 1))
    assert new[2] == "import cuda_extension"
    assert "load_inline" not in model and "cpp_extension" not in model
    tree = ast.parse(model)
    assigned = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "relu")
    assert isinstance(assigned.value, ast.Name) and assigned.value.id == "cuda_extension"
    assert assigned.lineno == call.lineno
    # The class is the author's, byte for byte.
    assert PLAIN[PLAIN.index("class ModelNew"):] == model[model.index("class ModelNew"):]


def test_flags_are_reported_as_ignored():
    notes = convert(PLAIN, "sol.py").notes
    for flag in ("verbose", "extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        assert any(f"{flag}=" in n and "ignored" in n for n in notes), (flag, notes)
    assert any(n.startswith("sol.py:") and "--use_fast_math" in n for n in notes)


def test_pybind11_module_becomes_a_registration_function():
    c = convert(PYBIND, "sol.py")
    binding = c.files["kernels/relu_pybind_binding.cpp"]
    assert "static void cuda_agent_bind_relu_pybind(pybind11::module& module) {" in binding
    assert 'module.def("relu_cuda", &relu_cuda, "ReLU (CUDA)");' in binding
    assert "REGISTER_BINDING(relu_pybind, cuda_agent_bind_relu_pybind);" in binding
    code = single_file.blank_cpp(binding)
    assert "PYBIND11_MODULE" not in code  # only the comment keeps the word
    # The block's lines stay where they were relative to the other sources.
    lines = binding.splitlines()
    assert lines.index("torch::Tensor relu_cuda(torch::Tensor x);") + 2 == next(
        k for k, line in enumerate(lines) if "cuda_agent_bind_relu_pybind(" in line)
    assert "ext = cuda_extension" in c.files["model_new.py"]


def test_pybind11_module_in_cuda_sources_is_translated_there():
    text = solution('''
        cuda = """
        #include <torch/extension.h>
        torch::Tensor f(torch::Tensor x) { return x; }
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }
        """
        mod = load_inline(name="m", cpp_sources="", cuda_sources=cuda)
    ''')
    c = convert(text, "sol.py")
    cu = c.files["kernels/m.cu"]
    assert '#include "../binding_registry.h"' in cu
    assert 'static void cuda_agent_bind_m(pybind11::module& m) { m.def("f", &f); } REGISTER_BINDING(m, ' \
        "cuda_agent_bind_m);" in cu


def test_concatenated_named_and_joined_sources():
    text = solution('''
        import textwrap
        HEAD = "#include <torch/extension.h>\\n"
        PART = ("torch::Tensor twice(torch::Tensor x) "   # implicit concatenation
                "{ return x; }")
        LINES = [HEAD, PART]
        body = "\\n".join(LINES) + "\\n// end"
        decls = ["torch::Tensor twice(torch::Tensor x);", "int unused();"]
        extra = "".join(["// a", "// b"])
        dedented = textwrap.dedent("""
            // indented
        """)

        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                local = body + extra
                self.mod = load_inline(name="cat", cpp_sources=decls + [dedented],
                                       cuda_sources=[local, f"// no fields"], functions="twice")
    ''')
    c = convert(text, "sol.py")
    cu = c.files["kernels/cat.cu"]
    assert ("#include <torch/extension.h>\n\ntorch::Tensor twice(torch::Tensor x) { return x; }\n"
            "// end// a// b\n// no fields") in cu
    binding = c.files["kernels/cat_binding.cpp"]
    assert "torch::Tensor twice(torch::Tensor x);\nint unused();\n\n// indented\n" in binding
    assert 'm.def("twice", &twice, "twice");' in binding
    assert "self.mod = (cuda_extension\n" in c.files["model_new.py"]


def test_functions_as_dict_give_docstrings():
    text = solution('''
        cpp = "int answer() { return 42; }"
        mod = load_inline(name="d", cpp_sources=cpp, functions={"answer": 'The "answer"'})
    ''')
    binding = convert(text, "sol.py").files["kernels/d_binding.cpp"]
    assert 'm.def("answer", &answer, "The \\"answer\\"");' in binding
    assert "kernels/d.cu" not in convert(text, "sol.py").files


@pytest.mark.parametrize("import_line, call", [
    ("import torch.utils.cpp_extension", "torch.utils.cpp_extension.load_inline"),
    ("import torch.utils.cpp_extension as ce", "ce.load_inline"),
    ("from torch.utils import cpp_extension", "cpp_extension.load_inline"),
    ("from torch.utils.cpp_extension import load_inline as li", "li"),
])
def test_every_spelling_of_load_inline(import_line, call):
    text = (f"import torch\n{import_line}\ncpp = 'int f() {{ return 1; }}'\n"
            f"mod = {call}(name='s', cpp_sources=cpp, functions=['f'])\n")
    model = convert(text, "sol.py").files["model_new.py"]
    lines = model.splitlines()
    assert lines[3] == "mod = cuda_extension"
    assert "cpp_extension" not in model and "load_inline" not in model
    assert "import cuda_extension" in lines
    compile(model, "model_new.py", "exec")


def test_import_with_other_names_keeps_them_and_adds_the_import():
    text = ('"""Doc."""\nfrom __future__ import annotations\nimport torch\n'
            "from torch.utils.cpp_extension import load_inline, CUDA_HOME\n"
            "cpp = 'int f() { return 1; }'\nmod = load_inline('k', cpp, None, ['f'])\n")
    c = convert(text, "sol.py")
    lines = c.files["model_new.py"].splitlines()
    assert lines[2] == "import cuda_extension"  # after the docstring and __future__
    assert lines[4] == "from torch.utils.cpp_extension import CUDA_HOME"
    assert any("new line 3" in n for n in c.notes)


def test_two_load_inline_calls_get_their_own_files():
    text = solution('''
        a = load_inline(name="same", cpp_sources="int f() { return 1; }", functions=["f"])
        b = load_inline(name="same", cpp_sources="int g() { return 2; }", functions=["g"])
    ''')
    c = convert(text, "sol.py")
    assert {"kernels/same_binding.cpp", "kernels/same_2_binding.cpp"} <= set(c.files)
    assert "REGISTER_BINDING(same_2, cuda_agent_bind_same_2);" in c.files["kernels/same_2_binding.cpp"]
    model = c.files["model_new.py"]
    assert "a = cuda_extension" in model and "b = cuda_extension" in model


def test_the_file_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    text = (f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(3)\n" +
            solution('mod = load_inline(name="x", cpp_sources="int f();", functions=["f"])\n'))
    convert(text, "sol.py")
    assert not marker.exists()


@pytest.mark.parametrize("body, line, words", [
    ('N = 4\nsrc = f"#define N {N}"\nmod = load_inline(name="x", cpp_sources=src, functions=["f"])\n',
     4, ["f-string with fields", "run time"]),
    ('mod = load_inline(name="x", cpp_sources=open("k.cpp").read(), functions=["f"])\n',
     3, ["read from a file"]),
    ('from pathlib import Path\nsrc = Path("k.cpp").read_text()\n'
     'mod = load_inline(name="x", cpp_sources=src, functions=["f"])\n', 4, ["read from a file"]),
    ('src = "int f() { return %d; }" % 3\nmod = load_inline(name="x", cpp_sources=src, functions=["f"])\n',
     3, ["'%' formatting"]),
    ('src = "int f() {{ return {}; }}".format(3)\n'
     'mod = load_inline(name="x", cpp_sources=src, functions=["f"])\n', 3, [".format"]),
    ('src = "int f();"\nsrc = "int g();"\nmod = load_inline(name="x", cpp_sources=src, functions=["f"])\n',
     5, ["'src'", "assigned more than once", "lines 3, 4"]),
    ('src = make()\nmod = load_inline(name="x", cpp_sources=src, functions=["f"])\n',
     3, ["a call to make"]),
    ('mod = load_inline(name="x", cpp_sources=missing, functions=["f"])\n', 3, ["never assigns"]),
    ('def build(src):\n    return load_inline(name="x", cpp_sources=src, functions=["f"])\n',
     4, ["parameter of build()"]),
    ('mod = load_inline(**{"name": "x"})\n', 3, ["**kwargs"]),
])
def test_sources_computed_at_run_time_are_refused_with_file_and_line(body, line, words):
    error = refusal(solution(body))
    assert error.line == line, error.message
    assert error.message.startswith(f"sol.py:{line}: "), error.message
    for word in words:
        assert word in error.message, error.message


def test_both_binding_styles_are_refused():
    text = PYBIND.replace('load_inline("relu_pybind", cpp_src, cuda_src)',
                          'load_inline("relu_pybind", cpp_src, cuda_src, functions=["relu_cuda"])')
    error = refusal(text)
    assert "both functions=[...] and a PYBIND11_MODULE" in error.message
    assert "load_inline could never build it" in error.message
    assert error.line == text.splitlines().index(next(
        line for line in text.splitlines() if line.startswith("ext = "))) + 1


def test_listed_but_undeclared_function_is_refused():
    error = refusal(solution('mod = load_inline(name="x", cpp_sources="int f();", functions=["f", "g"])\n'))
    assert "function 'g' of functions=[...] is declared nowhere" in error.message
    assert "load_inline could never build it" in error.message and error.line == 3
    only_cuda = refusal(solution(
        'mod = load_inline(name="x", cpp_sources="", cuda_sources="int g() { return 1; }", '
        'functions=["g"])\n'))
    assert "declared only in cuda_sources" in only_cuda.message
    # A call or a mention in a comment or string is no declaration.
    calls = refusal(solution('mod = load_inline(name="x", cpp_sources="// int g();\\n'
                             'const char* s = \\"int g();\\"; int y = g();", functions=["g"])\n'))
    assert "declared nowhere" in calls.message


def test_nothing_bound_and_no_load_inline_are_refused():
    error = refusal(solution('mod = load_inline(name="x", cpp_sources="int f() { return 1; }")\n'))
    assert "binds nothing" in error.message
    none = refusal("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    assert "no load_inline call" in none.message and none.message.startswith("sol.py: ")
    load = refusal("from torch.utils.cpp_extension import load\nm = load(name='x', sources=['a.cu'])\n")
    assert "reads its sources from files" in load.message and load.line == 2
    passed = refusal(solution("f = load_inline\n"))
    assert "used other than called directly" in passed.message


def test_declarations_see_through_namespaces_and_extern_c_only():
    text = textwrap.dedent('''
        #define HELPER(x) int x(int)
        namespace ns { torch::Tensor in_namespace(torch::Tensor x); }
        extern "C" { void in_extern(float* p); }
        struct S { int member(int); };
        static inline const float* pointer(int k) { return helper(k); }
        template <typename T> __global__ void kernel(T* p) { other(p); }
        int x = computed(3);
    ''')
    found = single_file.declarations(text)
    assert set(found) == {"in_namespace", "in_extern", "pointer", "kernel"}
    assert found["pointer"] == "static inline const float* pointer(int k)"
    literals = r"""const char* r = R"x(int fake(int); )x"; int n = 1'000; char c = '\''; int real(int a);"""
    assert set(single_file.declarations(literals)) == {"real"}


def test_docstrings_become_safe_cpp_strings():
    assert single_file.cpp_string('say "hi"\\ é\n1') == '"say \\"hi\\"\\\\ \\303\\251\\0121"'


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-m", "cuda_agent_harness.single_file", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_cli_writes_the_folder_and_reports_json(tmp_path):
    src = tmp_path / "sol.py"
    src.write_text(PLAIN)
    out = tmp_path / "out"
    proc = run_cli(str(src), str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["error"] is None
    assert report["files"] == ["kernels/relu_ext.cu", "kernels/relu_ext_binding.cpp", "model_new.py"]
    assert any("verbose" in n for n in report["notes"])
    for rel in report["files"]:
        assert (out / rel).is_file()


def test_cli_refusal_exits_2_and_writes_nothing(tmp_path):
    src = tmp_path / "sol.py"
    src.write_text(solution('mod = load_inline(name="x", cpp_sources=open("a").read(), functions=["f"])\n'))
    out = tmp_path / "out"
    proc = run_cli(str(src), str(out))
    assert proc.returncode == 2
    assert f"{src}:3:" in proc.stderr and "read from a file" in proc.stderr
    assert not out.exists()
    proc = run_cli(str(src), str(out), "--json")
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["line"] == 3 and "read from a file" in report["error"]
    assert report["files"] == []


# Sources kept on the class (issue 46): `self.cpp_source = "..."` in __init__, read by a method that calls
# load_inline; `C.SRC` for a class attribute. One plain assignment in the whole file, or a refusal.
SELF_SOURCES = '''
class ModelNew(nn.Module):
    KERNELS = """{cuda}"""

    def __init__(self):
        super().__init__()
        self.cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"
        self.ext = None
{extra}
    def load(self):
        self.ext = load_inline(name="relu_self", cpp_sources=self.cpp_source,
                               cuda_sources={cuda_ref}, functions=["relu_cuda"])
        return self.ext

    def forward(self, x):
        return self.load().relu_cuda(x)
'''


@pytest.mark.parametrize("cuda_ref", ["self.KERNELS", "ModelNew.KERNELS"])
def test_sources_in_attributes_assigned_once_are_read(cuda_ref):
    text = solution("import torch.nn as nn\n" + SELF_SOURCES.format(cuda=CUDA_SOURCE, extra="",
                                                                     cuda_ref=cuda_ref))
    c = convert(text, "sol.py")
    assert "relu_kernel" in c.files["kernels/relu_self.cu"]
    assert "torch::Tensor relu_cuda(torch::Tensor x);" in c.files["kernels/relu_self_binding.cpp"]


@pytest.mark.parametrize("extra, cuda_ref, words", [
    # assigned again in another method: which value load_inline reads depends on the call order
    ('    def reset(self):\n        self.cpp_source = "int g();"\n', "self.KERNELS",
     ["attribute 'cpp_source'", "assigned more than once"]),
    # assigned from outside the class
    ("", "self.KERNELS", ["attribute 'cpp_source'", "assigned more than once"]),
    # set through setattr
    ('    def reset(self):\n        setattr(self, "cpp_source", "int g();")\n', "self.KERNELS",
     ["sets attributes dynamically"]),
    # an attribute of something else than self or a class of the file
    ("", "nn.KERNELS", ["an attribute of something other than self"]),
    # computed at run time in __init__
    ('    def more(self):\n        return 1\n', "self.KERNELS + str(self.more())", ["a call to str"]),
])
def test_sources_in_attributes_known_only_at_run_time_are_refused(extra, cuda_ref, words):
    text = solution("import torch.nn as nn\n" + SELF_SOURCES.format(cuda=CUDA_SOURCE, extra=extra,
                                                                     cuda_ref=cuda_ref))
    if not extra and cuda_ref == "self.KERNELS":
        text += '\nModelNew.cpp_source = "int g();"\n'
    error = refusal(text)
    for word in words:
        assert word in error.message, error.message
