"""Plain bindings (templates/workspace/plain_binding.h): binding files without torch's headers.

Builds tests/build/plain_ops with `cuda-agent build --device cpu` and calls its functions from a
fresh Python: arguments by position and name, wrong and missing arguments, results that are views
of a call's tensors, forged views, errors raised in a binding, and a module that must not import;
and which files an edit compiles again.
Each call runs in its own interpreter: a process can import one `cuda_extension` only.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

pytest.importorskip("torch")


def judge_binary():
    return Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")


def build_report(candidate, out_dir):
    """Builds `candidate` into out_dir/cuda_extension.so (CPU); returns the build report."""
    run = subprocess.run(
        [str(judge_binary()), "build", "--candidate", str(candidate), "--device", "cpu", "--out",
         str(out_dir / "cuda_extension.so"), "--json"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout)["build"]


def build(candidate, out_dir):
    build_report(candidate, out_dir)
    return out_dir


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return build(HERE / "plain_ops", tmp_path_factory.mktemp("plain_ops"))


def call(module_dir, body):
    """Runs `body` with torch and the built cuda_extension imported; returns the process."""
    script = "import sys\nsys.path.insert(0, %r)\nimport torch\nimport cuda_extension as ext\n" % str(
        module_dir) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def check(module_dir, body):
    run = call(module_dir, body)
    assert run.returncode == 0, run.stderr
    return run.stdout


def fails_with(module_dir, body, error, *parts):
    run = call(module_dir, body)
    assert run.returncode != 0, "expected %s, the call succeeded: %s" % (error, run.stdout)
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(error + ":"), run.stderr
    for part in parts:
        assert part in last, run.stderr


def test_arguments_by_position_and_name(ops):
    check(ops, """
        x = torch.randn(3, 5)
        torch.testing.assert_close(ext.scale_add(x, 2.0, 3, False), x * 2 + 3)
        torch.testing.assert_close(ext.scale_add(x, negate=True, b=1, a=0.5), -(x * 0.5 + 1))
        torch.testing.assert_close(ext.scale_add(x, 2, 0, False), x * 2)  # an int for a float
        assert ext.add_ints(40, 2) == 42  # a second binding file, no argument names
        assert ext.is_cpu_and_contiguous(x) is True
        assert ext.is_cpu_and_contiguous(x.t()) is False
    """)


@pytest.mark.parametrize("body, parts", [
    ("ext.scale_add(torch.randn(2), 1.0, 1.5, False)", ["'b' must be an int", "float"]),
    ("ext.scale_add(torch.randn(2), 1.0, 1, 1)", ["'negate' must be a bool"]),
    ("ext.scale_add([1.0], 1.0, 1, False)", ["'x' must be a Tensor", "list"]),
    ("ext.scale_add(torch.randn(2), 1.0, 1)", ["'negate' is missing"]),
    ("ext.scale_add(torch.randn(2), 1.0, 1, False, 5)", ["takes 4 arguments, got 5"]),
    ("ext.scale_add(torch.randn(2), 1.0, 1, False, a=2.0)", ["'a' given twice"]),
    ("ext.scale_add(torch.randn(2), 1.0, 1, scale=2.0)", ["no argument named 'scale'"]),
    ("ext.add_ints(a=1, b=2)", ["no argument named 'a'"]),
    ("ext.shape_code(torch.zeros(2, dtype=torch.complex64))", ["no ComplexFloat tensors"]),
    ("ext.shape_code(torch.zeros([1] * 9))", ["at most 8 dimensions, got 9"]),
])
def test_bad_arguments_are_type_errors(ops, body, parts):
    fails_with(ops, body, "TypeError", *parts)


def test_results_may_view_a_call_tensor(ops):
    check(ops, """
        x = torch.arange(12.0).reshape(3, 4)
        first, last = ext.end_rows(x)
        assert torch.equal(first, x[0]) and torch.equal(last, x[-1])
        assert last.data_ptr() == x[-1].data_ptr()  # a view, no copy
        assert ext.shape_code(x) == 4 * 1000 + 4
        assert ext.shape_code(x.t()) == 3 * 1000 + 1
    """)


@pytest.mark.parametrize("body, parts", [
    ("ext.forged_handle(torch.randn(4))", ["neither an argument of the call nor made by plain::empty"]),
    ("ext.past_the_end(torch.randn(4))", ["out of bounds"]),
    ("ext.must_be_zero(3)", ["kernels/ops_binding.cpp:", "code must be 0"]),
    ("ext.read_as_int32(torch.randn(4))", ["data_ptr<T>: T does not match the tensor's dtype"]),
    ("ext.axis_out_of_range(torch.randn(4, 2))", ["dimension 2 out of range for a 2-d tensor"]),
    ("ext.scale_add(torch.randn(4, 4).t(), 1.0, 1, False)", ["x must be contiguous float32"]),
])
def test_errors_in_bindings_are_runtime_errors(ops, body, parts):
    fails_with(ops, body, "RuntimeError", *parts)


def test_docstring_gives_the_signature(ops):
    out = check(ops, "print(ext.scale_add.__doc__)")
    assert "scale_add(x: Tensor, a: float, b: int, negate: bool) -> Tensor" in out
    assert "kernels/ops_binding.cpp" in out


def test_wrong_number_of_argument_names_fails_the_import(tmp_path):
    module_dir = build(HERE / "plain_bad_names", tmp_path)
    fails_with(module_dir, "pass", "ImportError",
               "PLAIN_EXPORT(add_ints) in kernels/bad_binding.cpp names 1 arguments; the function takes 2")


def test_edits_recompile_only_what_they_touch(tmp_path):
    """A plain binding edit compiles that file alone; a header edit every kernel file, not binding.cpp."""
    candidate = tmp_path / "candidate"
    shutil.copytree(REPO / "examples" / "relu_scale" / "candidates" / "cpu_plain_binding", candidate)
    (candidate / "kernels" / "shared.h").write_text("#pragma once\n// %s\n" % uuid.uuid4().hex)
    build_report(candidate, tmp_path)
    with (candidate / "kernels" / "relu_scale_binding.cpp").open("a") as f:
        f.write("// an edit %s\n" % uuid.uuid4().hex)  # new content, even with a kept object cache
    report = build_report(candidate, tmp_path)
    assert (report["objects_compiled"], report["objects_cached"]) == (1, 2), report
    (candidate / "kernels" / "shared.h").write_text("#pragma once\n// %s\n" % uuid.uuid4().hex)
    report = build_report(candidate, tmp_path)
    assert (report["objects_compiled"], report["objects_cached"]) == (2, 1), report
