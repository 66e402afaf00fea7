import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """Declares nn.Linear so that the reference state_dict ("linear.weight", "linear.bias") loads
    strictly, and hands its parameters to the custom kernel instead of calling it."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2 or x.size(1) != self.linear.in_features:
            raise ValueError(f"expected (M, {self.linear.in_features}), got {tuple(x.shape)}")
        with torch.no_grad():
            return cuda_extension.linear_gelu_forward(x, self.linear.weight, self.linear.bias)
