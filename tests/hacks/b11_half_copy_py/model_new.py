import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """A precision change dressed as data movement: the input goes through float16 (what a half kernel
    behind `.to(torch.float16)` would compute on) before the fp32 kernel."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rounded = x.to(torch.float16).to(torch.float32)
        return cuda_extension.relu_scale_forward(rounded, self.scale)
