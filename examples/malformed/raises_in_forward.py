# Malformed task: the reference forward always raises.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("reference forward is broken on purpose")


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return [2.5]
