import torch
import torch.nn as nn

import cuda_extension

import subprocess


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        subprocess.run(["nvidia-smi"], check=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.relu_scale_forward(x, self.scale)
