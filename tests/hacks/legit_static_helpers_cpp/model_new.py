import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """Flattens the input with a view (metadata only) and scales with a Python float."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = float(scale)
        self.half_scale = scale / 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.view(-1)
        y = cuda_extension.relu_scale_forward(flat, self.half_scale * 2.0)
        return y.view(x.shape)
