"""`--policy kernelbench` end to end on the CPU (issue 47 part 3): KernelBench's rules — torch's eager
operators may do part of the work beside the candidate's own kernel, the reference weights load by
position (ModelNew's own extra entries kept) — with every defence kept. The
solutions are KernelBench single files for examples/relu_scale (y = relu(x) * scale) whose extension
(a CPU loop) does the scaling."""

import json
import shutil
import subprocess

import pytest

from test_judge_cases import REPO, binary, cache_dir  # noqa: F401 - the fixtures

TASK = "examples/relu_scale/model.py"

# The extension scales; torch's eager relu does the rest. {relu_in_cpp} puts the relu in the C++.
HYBRID = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
torch::Tensor scale(torch::Tensor x, double s) {
  TORCH_CHECK(x.device().is_cpu() && x.is_contiguous(), "x must be a contiguous CPU tensor");
  {relu_in_cpp}
  auto y = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] * static_cast<float>(s);
  return y;
}
"""

ext = load_inline(name="scale_cpu", cpp_sources=cpp_source, functions=["scale"])


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        {setup}
        return {body}
'''


def solution(tmp_path, name="solution.py", relu_in_cpp="", setup="pass",
             body="ext.scale(torch.relu(x), self.scale)"):
    path = tmp_path / name
    path.write_text(HYBRID.replace("{relu_in_cpp}", relu_in_cpp).replace("{setup}", setup)
                    .replace("{body}", body))
    return path


def judge(binary, cache_dir, candidate, *args, task=TASK):
    argv = [str(binary), "judge", "--task", task, "--candidate", str(candidate), "--device", "cpu",
            "--cache-dir", str(cache_dir), "--json", *args]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_a_hybrid_is_judged_under_kernelbench_and_refused_under_strict(binary, cache_dir, tmp_path):
    path = solution(tmp_path)
    result = judge(binary, cache_dir, path, "--policy", "kernelbench")
    assert result["outcome"] == "verdict" and result["correct"] is True, result["reason"]
    assert result["reward"] >= 1 and result["stage"] == "done", result["reason"]
    assert result["policy"]["name"] == "kernelbench"
    assert result["policy"]["rules"] == {"torch_compute": True, "weights_by_position": True}
    assert result["policy"]["tolerance"]["limits"]["float32"]["atol"] == 1e-4
    strict = judge(binary, cache_dir, path, "--until", "verify")
    assert (strict["stage"], strict["error_kind"], strict["reward"]) == ("static", "static_rule", -1)
    assert strict["policy"]["rules"] == {"torch_compute": False, "weights_by_position": False}
    assert "torch_compute" in {v["rule"] for v in strict["violations"]}


def test_aten_in_the_extension_is_part_of_the_work_under_kernelbench(binary, cache_dir, tmp_path):
    path = solution(tmp_path, relu_in_cpp="x = torch::relu(x).contiguous();",
                    body="ext.scale(x, self.scale)")
    result = judge(binary, cache_dir, path, "--policy", "kernelbench", "--until", "verify")
    assert result["correct"] is True, result["reason"]
    strict = judge(binary, cache_dir, path, "--until", "verify")
    assert strict["stage"] == "static" and strict["violations"][0]["file"].startswith("kernels/")


@pytest.mark.parametrize("setup, rule", [
    ("f = torch.compile(torch.relu)", "torch_compiler"),
    ("torch.backends.cuda.matmul.allow_tf32 = True", "torch_patching"),
    ("torch.backends.cudnn.benchmark = True", "torch_patching"),
    ("torch.set_float32_matmul_precision('high')", "global_flags"),
])
def test_what_wins_without_a_kernel_is_refused_with_the_allowed_way(binary, cache_dir, tmp_path, setup, rule):
    result = judge(binary, cache_dir, solution(tmp_path, setup=setup), "--policy", "kernelbench", "--until",
                   "verify")
    assert (result["stage"], result["error_kind"], result["reward"]) == ("static", "static_rule", -1)
    assert result["reason"].startswith(rule + ": model_new.py:"), result["reason"]
    assert "--policy kernelbench torch's eager operators may do part of the work" in result["reason"]


def test_a_try_except_fallback_is_refused(binary, cache_dir, tmp_path):
    setup = "try:\n            return ext.scale(torch.relu(x), self.scale)\n        except RuntimeError:\n" \
            "            pass"
    result = judge(binary, cache_dir, solution(tmp_path, setup=setup, body="torch.relu(x) * self.scale"),
                   "--policy", "kernelbench", "--until", "verify")
    assert result["stage"] == "static" and result["reason"].startswith("try_except: "), result["reason"]
    assert "--policy kernelbench" in result["reason"]


def test_a_pure_torch_model_new_is_refused(binary, cache_dir, tmp_path):
    result = judge(binary, cache_dir, solution(tmp_path, body="torch.relu(x) * self.scale"),
                   "--policy", "kernelbench", "--until", "verify")
    assert (result["stage"], result["reward"]) == ("static", -1)
    assert result["reason"].startswith("no_custom_kernel: model_new.py:"), result["reason"]
    assert "torch may do part of the work" in result["reason"]


def test_a_forward_that_never_reaches_its_kernel_is_refused_at_run_time(binary, cache_dir, tmp_path):
    """The extension is called only on a branch the task never takes: the static rules see a call, the
    run-time guard sees none."""
    setup = "if x.dim() == 7:\n            return ext.scale(x, self.scale)"
    result = judge(binary, cache_dir, solution(tmp_path, setup=setup, body="torch.relu(x) * self.scale"),
                   "--policy", "kernelbench", "--until", "verify")
    assert (result["stage"], result["error_kind"], result["reward"]) == ("verify", "no_custom_kernel", -1), \
        result["reason"]
    assert "called no function of cuda_extension" in result["reason"]


def test_the_other_defences_hold_under_kernelbench(binary, cache_dir, tmp_path):
    """A cache across calls is still module_state, and a state kept on self still fails."""
    setup = "self.calls = 1"
    result = judge(binary, cache_dir, solution(tmp_path, setup=setup), "--policy", "kernelbench", "--until",
                   "verify")
    assert result["stage"] == "static" and result["reason"].startswith("module_state: "), result["reason"]


# examples/linear_gelu's CPU candidate, its weight and bias held by ModelNew itself: "weight" and "bias"
# where the reference has "linear.weight" and "linear.bias" (KernelBench passes it: it builds both models
# under one seed and moves no weights).
OWN_PARAMETERS = """import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.linear_gelu_forward(x, self.weight, self.bias)
"""


def test_renamed_weights_load_by_position_under_kernelbench_only(binary, cache_dir, tmp_path):
    candidate = tmp_path / "own_parameters"
    shutil.copytree(REPO / "examples/linear_gelu/candidates/cpu_correct", candidate)
    (candidate / "model_new.py").write_text(OWN_PARAMETERS)
    task = "examples/linear_gelu/model.py"
    result = judge(binary, cache_dir, candidate, "--policy", "kernelbench", "--baselines", "eager", task=task)
    assert result["outcome"] == "verdict" and result["correct"] is True, result["reason"]
    assert result["stage"] == "done" and result["reward"] >= 1, result["reason"]
    assert result["verify"]["weights"] == "by_position"
    assert result["verify"]["weights_renamed"] == {"linear.weight": "weight", "linear.bias": "bias"}
    # The `candidate` job (verification alone) loads them so too.
    alone = judge(binary, cache_dir, candidate, "--policy", "kernelbench", "--until", "verify", task=task)
    assert alone["correct"] is True and alone["verify"]["weights"] == "by_position", alone["reason"]
    strict = judge(binary, cache_dir, candidate, "--until", "verify", task=task)
    assert (strict["stage"], strict["error_kind"], strict["reward"]) == ("verify", "state_dict", -1)
    assert "missing keys [bias, weight]; unexpected keys [linear.bias, linear.weight]" in strict["reason"]
    assert "same names, or under --policy kernelbench the same shapes and dtypes in the same order" in \
        strict["reason"]


# OWN_PARAMETERS with one more parameter than the reference has, empty and never read (l1-p66 of the
# agreement run: its ModelNew's `bias` beside a bias-free nn.Conv3d's weight): KernelBench moves no
# weights and passes it; under kernelbench it keeps ModelNew's own initialisation.
EXTRA_PARAMETER = OWN_PARAMETERS.replace(
    "        self.bias = nn.Parameter(torch.empty(out_features))\n",
    "        self.bias = nn.Parameter(torch.empty(out_features))\n        self.extra = nn.Parameter(torch.Tensor())\n")
# OWN_PARAMETERS without the bias (zeros in the forward): the reference's linear.bias has no place.
NO_BIAS = OWN_PARAMETERS.replace("        self.bias = nn.Parameter(torch.empty(out_features))\n", "").replace(
    "x, self.weight, self.bias)", "x, self.weight, torch.zeros(self.weight.shape[0]))")


def test_an_extra_parameter_is_kept_under_kernelbench_only(binary, cache_dir, tmp_path):
    assert EXTRA_PARAMETER != OWN_PARAMETERS and NO_BIAS != OWN_PARAMETERS
    candidate = tmp_path / "extra_parameter"
    shutil.copytree(REPO / "examples/linear_gelu/candidates/cpu_correct", candidate)
    (candidate / "model_new.py").write_text(EXTRA_PARAMETER)
    task = "examples/linear_gelu/model.py"
    result = judge(binary, cache_dir, candidate, "--policy", "kernelbench", "--until", "verify", task=task)
    assert result["outcome"] == "verdict" and result["correct"] is True, result["reason"]
    assert result["verify"]["weights"] == "by_position" and result["verify"]["weights_own"] == ["extra"]
    assert result["verify"]["weights_renamed"] == {"linear.weight": "weight", "linear.bias": "bias"}
    strict = judge(binary, cache_dir, candidate, "--until", "verify", task=task)
    assert (strict["stage"], strict["error_kind"], strict["reward"]) == ("verify", "state_dict", -1)
    assert "missing keys [bias, extra, weight]" in strict["reason"]
    # The reference's entry ModelNew lacks is still refused, saying the allowed way.
    (candidate / "model_new.py").write_text(NO_BIAS)
    lacking = judge(binary, cache_dir, candidate, "--policy", "kernelbench", "--until", "verify", task=task)
    assert (lacking["stage"], lacking["error_kind"], lacking["reward"]) == ("verify", "state_dict", -1)
    assert "every one must have its place in ModelNew" in lacking["reason"]
    assert "same names, or under --policy kernelbench the same shapes and dtypes" in lacking["reason"]
