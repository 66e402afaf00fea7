import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """The input staged into a buffer of the model's own with `copy_` (as a pipelined kernel stages its
    next batch), and the kernel's result copied into the output it returns: data movement, no
    arithmetic."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        staged.copy_(x, non_blocking=True)
        y = cuda_extension.relu_scale_forward(staged, self.scale)
        out = torch.empty_like(y)
        out.copy_(y)
        return out
