import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """nn.Linear is declared so that the reference state_dict ("linear.weight", "linear.bias") loads
    strictly; forward hands its parameters to the extension and never calls the layer."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return cuda_extension.linear_gelu_forward(x, self.linear.weight, self.linear.bias)
