import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Forbidden: a torch.nn.functional call. The result would be right
        # (relu is idempotent), so only the rule makes this candidate fail.
        x = torch.nn.functional.relu(x)
        return cuda_extension.relu_scale_forward(x, self.scale)
