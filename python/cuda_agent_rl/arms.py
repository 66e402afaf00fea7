"""The action space of the GRPO demonstration (docs/toy_rl.md): per task, a kernel template with
four choices — the arms a policy picks among.

An arm is four slot values:

- ``expr``: ``exact`` (the task's formula) or ``flawed`` (a plausible slip: a missing factor, a sign)
  — the judge's verification tells them apart (reward −1 for ``flawed``);
- ``threads``: threads per block, 32 or 256;
- ``grid``: ``fixed8`` (8 blocks, grid-stride: most SMs idle) or ``cover`` (enough blocks for one
  work item per thread);
- ``vector``: 1 (scalar loads) or 4 (``float4`` loads where the pointers are 16-byte aligned).

All ``exact`` arms are correct; which is fastest is revealed only by the judge's timing. On the
CPU device (tests) the same arms render a C++ loop: ``threads`` and ``grid`` do not change the
code there and ``vector`` unrolls by four — the CPU arms exist to test the plumbing, not to be
timed.

``render_answer`` writes the candidate as the single-turn answer format of the verl plug-in
(``cuda_agent_verl.answer``): fenced blocks named ``model_new.py`` and ``kernels/…``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SLOTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("expr", ("exact", "flawed")),
    ("threads", ("32", "256")),
    ("grid", ("fixed8", "cover")),
    ("vector", ("1", "4")),
)

TASKS_DIR = Path(__file__).resolve().parent / "tasks"
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ToyTask:
    """One element-wise task: y = f(x) (times ``alpha`` where the task has a scale)."""

    name: str
    path: Path
    exact: tuple[str, str]  # the formula of v (and alpha): (CUDA, C++)
    flawed: tuple[str, str]

    def source(self) -> str:
        return self.path.read_text()


TASKS: dict[str, ToyTask] = {
    task.name: task
    for task in (
        ToyTask("relu_scale", REPO / "examples" / "relu_scale" / "model.py",
                exact=("fmaxf(v, 0.0f) * alpha", "std::fmax(v, 0.0f) * alpha"),
                flawed=("fmaxf(v, 0.0f)", "std::fmax(v, 0.0f)")),
        ToyTask("swish", TASKS_DIR / "swish.py",
                exact=("v / (1.0f + expf(-v))", "v / (1.0f + std::exp(-v))"),
                flawed=("v / (1.0f + expf(v))", "v / (1.0f + std::exp(v))")),
        ToyTask("softsign", TASKS_DIR / "softsign.py",
                exact=("v / (1.0f + fabsf(v))", "v / (1.0f + std::fabs(v))"),
                flawed=("v / (1.0f + v)", "v / (1.0f + v)")),
    )
}


@dataclass(frozen=True)
class Arm:
    expr: str
    threads: int
    grid: str
    vector: int

    @staticmethod
    def from_choices(choices: tuple[int, ...]) -> Arm:
        """The arm of one option index per slot (the policy's actions)."""
        if len(choices) != len(SLOTS):
            raise ValueError(f"an arm needs {len(SLOTS)} choices, got {len(choices)}")
        values = [options[index] for (_, options), index in zip(SLOTS, choices, strict=False)]
        return Arm(values[0], int(values[1]), values[2], int(values[3]))

    def label(self) -> str:
        return f"{self.expr}/t{self.threads}/{self.grid}/v{self.vector}"


def all_arms() -> Iterator[Arm]:
    for choices in itertools.product(*(range(len(options)) for _, options in SLOTS)):
        yield Arm.from_choices(choices)


_CUDA_KERNEL = """\
// Toy arm {label} for task {task}: y = f(x) element-wise (docs/toy_rl.md).
#include <cuda_runtime.h>

#include <cstdint>

constexpr int kThreads = {threads};
constexpr bool kFixedGrid = {fixed_grid};
constexpr bool kVector4 = {vector4};

__device__ __forceinline__ float op(float v, float alpha) {{
  (void)alpha;
  return {expr};
}}

__global__ void op_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin,
                          int64_t n, float alpha) {{
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {{
    y[i] = op(x[i], alpha);
  }}
}}

__global__ void op_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
                        float alpha) {{
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {{
    float4 v = x[i];
    v.x = op(v.x, alpha);
    v.y = op(v.y, alpha);
    v.z = op(v.z, alpha);
    v.w = op(v.w, alpha);
    y[i] = v;
  }}
}}

static unsigned blocks_for(int64_t work) {{
  if (kFixedGrid) return 8;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > 2147483647) blocks = 2147483647;
  return blocks < 1 ? 1u : (unsigned)blocks;
}}

extern "C" cudaError_t toy_launcher(const float* x, float* y, int64_t n, float alpha,
                                    cudaStream_t stream) {{
  bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  int64_t n4 = (kVector4 && aligned) ? n / 4 : 0;
  if (n4 > 0) {{
    op_vec4<<<blocks_for(n4), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                      reinterpret_cast<float4*>(y), n4, alpha);
  }}
  if (n4 * 4 < n) op_scalar<<<blocks_for(n - n4 * 4), kThreads, 0, stream>>>(x, y, n4 * 4, n, alpha);
  return cudaGetLastError();
}}
"""

_CUDA_BINDING = """\
// Plain binding of the toy arm (no torch headers: compiles in about a second).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "../plain_binding.h"

extern "C" cudaError_t toy_launcher(const float* x, float* y, int64_t n, float alpha,
                                    cudaStream_t stream);

static plain::Tensor toy_forward(const plain::Tensor& x, double alpha) {
  PLAIN_CHECK(x.is_cuda(), "toy: x must be a CUDA tensor");
  PLAIN_CHECK(x.dtype == plain::kFloat32, "toy: x must be float32");
  PLAIN_CHECK(x.is_contiguous(), "toy: x must be contiguous");
  plain::Tensor y = plain::empty_like(x);
  cudaStream_t stream = static_cast<cudaStream_t>(plain::current_stream(x.device));
  cudaError_t err = toy_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                                 static_cast<float>(alpha), stream);
  PLAIN_CHECK(err == cudaSuccess, std::string("toy: launch failed: ") + cudaGetErrorString(err));
  return y;
}
PLAIN_EXPORT(toy_forward, "x", "alpha");
"""

_CPU_KERNEL = """\
// Toy arm {label} for task {task} on the CPU: y = f(x) element-wise (docs/toy_rl.md).
#include <cmath>
#include <cstdint>

static inline float op(float v, float alpha) {{
  (void)alpha;
  return {expr};
}}

extern "C" void toy_launcher(const float* x, float* y, int64_t n, float alpha) {{
  int64_t i = 0;
  if ({vector4}) {{
    for (; i + 4 <= n; i += 4) {{
      y[i] = op(x[i], alpha);
      y[i + 1] = op(x[i + 1], alpha);
      y[i + 2] = op(x[i + 2], alpha);
      y[i + 3] = op(x[i + 3], alpha);
    }}
  }}
  for (; i < n; ++i) y[i] = op(x[i], alpha);
}}
"""

_CPU_BINDING = """\
// Plain binding of the toy arm on the CPU.
#include <cstdint>

#include "../plain_binding.h"

extern "C" void toy_launcher(const float* x, float* y, int64_t n, float alpha);

static plain::Tensor toy_forward(const plain::Tensor& x, double alpha) {
  PLAIN_CHECK(x.is_cpu(), "toy: x must be a CPU tensor");
  PLAIN_CHECK(x.dtype == plain::kFloat32, "toy: x must be float32");
  PLAIN_CHECK(x.is_contiguous(), "toy: x must be contiguous");
  plain::Tensor y = plain::empty_like(x);
  toy_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(alpha));
  return y;
}
PLAIN_EXPORT(toy_forward, "x", "alpha");
"""

_MODEL_NEW = """\
import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, *init_inputs):
        super().__init__()
        self.alpha = float(init_inputs[0]) if init_inputs else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.toy_forward(x, self.alpha)
"""


def render_files(task: ToyTask, arm: Arm, device: str) -> dict[str, str]:
    """The candidate's files (path → text) of ``arm`` on ``task`` for the judge's ``device``."""
    if device not in ("cuda", "cpu"):
        raise ValueError(f"unknown device {device!r}: cuda or cpu")
    cuda = device == "cuda"
    expr = (task.exact if arm.expr == "exact" else task.flawed)[0 if cuda else 1]
    fields = {"label": arm.label(), "task": task.name, "expr": expr,
              "vector4": "true" if arm.vector == 4 else "false"}
    if cuda:
        kernel = _CUDA_KERNEL.format(threads=arm.threads, fixed_grid="true" if arm.grid == "fixed8" else "false",
                                     **fields)
        return {"kernels/toy.cu": kernel, "kernels/toy_binding.cpp": _CUDA_BINDING, "model_new.py": _MODEL_NEW}
    return {"kernels/toy.cpp": _CPU_KERNEL.format(**fields), "kernels/toy_binding.cpp": _CPU_BINDING,
            "model_new.py": _MODEL_NEW}


def render_answer(task: ToyTask, arm: Arm, device: str) -> str:
    """The arm as a single-turn answer: one fenced block per file, named after the language."""
    language = {".cu": "cuda", ".cpp": "cpp", ".py": "python"}
    blocks = [f"```{language[Path(path).suffix]} {path}\n{text}```"
              for path, text in render_files(task, arm, device).items()]
    return "\n\n".join(blocks) + "\n"
