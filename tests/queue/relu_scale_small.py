# relu_scale_small.py — examples/relu_scale at 64 × 64: the same candidates judge in about a second on
# the CPU, so the queue tests spend their time on the queue.
import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU followed by multiplication with a constant: y = relu(x) * scale."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * self.scale


batch_size = 64
dim = 64


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [2.5]
