"""`cuda-agent judge --candidate FILE.py`: KernelBench's single-file solutions (load_inline) are
converted statically into a candidate and judged as one; a file the converter refuses is a verdict of
-1 at the static stage with its reason. `cuda-agent workspace import` writes the converted files.
The solutions below are CPU ones (cpp_sources only), so this runs without a GPU."""

import json
import subprocess

from test_judge_cases import REPO, binary, cache_dir  # noqa: F401 - the fixtures

TASK = "examples/relu_scale/model.py"

# y = relu(x) * scale for examples/relu_scale, as a KernelBench solution: the binding generated from
# functions=[...].
CPU_FUNCTIONS = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor relu_scale(torch::Tensor x, double scale) {
  TORCH_CHECK(x.device().is_cpu() && x.is_contiguous(), "x must be a contiguous CPU tensor");
  auto y = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  const float s = static_cast<float>(scale);
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = (in[i] > 0.0f ? in[i] : 0.0f) * s;
  return y;
}
"""

relu_scale = load_inline(name="relu_scale_cpu", cpp_sources=cpp_source, functions=["relu_scale"],
                         extra_cflags=["-O3"], verbose=True)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_scale.relu_scale(x, self.scale)
'''

# The same with the file's own PYBIND11_MODULE block (which the static rules refuse as such: it must
# reach the build as a REGISTER_BINDING function).
CPU_PYBIND = CPU_FUNCTIONS.replace('''  return y;
}
"""''', '''  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("relu_scale", &relu_scale, "relu(x) * scale");
}
"""''').replace(', functions=["relu_scale"]', '')


def judge(binary, cache_dir, candidate, *args):
    argv = [str(binary), "judge", "--task", TASK, "--candidate", str(candidate), "--device", "cpu",
            "--cache-dir", str(cache_dir), "--json", *args]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_a_functions_solution_builds(binary, cache_dir, tmp_path):
    solution = tmp_path / "relu_scale_solution.py"
    solution.write_text(CPU_FUNCTIONS)
    result = judge(binary, cache_dir, solution, "--until", "build")
    assert result["outcome"] == "verdict" and result["stage"] == "build", result["reason"]
    assert result["reward"] is None and result["build"]["ok"] is True, result["reason"]
    assert "kernels/relu_scale_cpu_binding.cpp" in result["build"]["sources"]
    converted = result["candidate"]["single_file"]
    assert result["candidate"]["dir"] == str(solution) == converted["file"]
    assert converted["files"] == ["kernels/relu_scale_cpu_binding.cpp", "model_new.py"]
    assert any("extra_cflags" in n and "ignored" in n for n in converted["notes"])


def test_a_pybind11_solution_in_a_folder_is_verified(binary, cache_dir, tmp_path):
    """A folder holding one .py and no kernels/ is a single-file solution too; the translated
    PYBIND11_MODULE passes the static rules and the extension computes the task."""
    (tmp_path / "solution.py").write_text(CPU_PYBIND)
    result = judge(binary, cache_dir, tmp_path, "--until", "verify")
    assert result["stage"] == "verify" and result["correct"] is True, result["reason"]
    assert result["violations"] == []


def test_a_refused_solution_gets_minus_one_with_the_reason(binary, cache_dir, tmp_path):
    solution = tmp_path / "runtime_source.py"
    solution.write_text(CPU_FUNCTIONS.replace("cpp_sources=cpp_source",
                                              'cpp_sources=open("kernel.cpp").read()'))
    result = judge(binary, cache_dir, solution)
    assert result["outcome"] == "verdict" and result["reward"] == -1
    assert result["stage"] == "static" and result["error_kind"] == "single_file"
    line = CPU_FUNCTIONS.splitlines().index(next(
        text for text in CPU_FUNCTIONS.splitlines() if text.startswith("relu_scale = "))) + 1
    assert result["reason"].startswith(f"{solution}:{line}: ")
    assert "read from a file at run time" in result["reason"]
    assert result["candidate"]["single_file"]["line"] == line
    both = tmp_path / "both" / "both.py"
    both.parent.mkdir()
    both.write_text(CPU_PYBIND.replace("cpp_sources=cpp_source",
                                       'cpp_sources=cpp_source, functions=["relu_scale"]'))
    result = judge(binary, cache_dir, both.parent, "--until", "build")
    assert result["reward"] == -1 and result["error_kind"] == "single_file"
    assert "load_inline could never build it" in result["reason"]


def test_workspace_import_writes_the_candidate(binary, tmp_path):
    solution = tmp_path / "solution.py"
    solution.write_text(CPU_FUNCTIONS)
    workspace = tmp_path / "ws"
    proc = subprocess.run([str(binary), "workspace", "import", str(solution), str(workspace)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(workspace / "kernels/relu_scale_cpu_binding.cpp"),
                                   str(workspace / "model_new.py")]
    assert "verbose=True ignored" in proc.stderr
    model = (workspace / "model_new.py").read_text()
    assert "import cuda_extension" in model and "relu_scale = (cuda_extension\n)" in model
    refused = tmp_path / "refused.py"
    refused.write_text("import torch\n")
    proc = subprocess.run([str(binary), "workspace", "import", str(refused), str(tmp_path / "ws2")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no load_inline call" in proc.stderr
    assert not (tmp_path / "ws2").exists()
