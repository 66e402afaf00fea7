import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension of a 2-D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 8192
dim = 512


def get_inputs():
    # Spread-out logits make each row peaked, so an all-zero or uniform
    # output is far outside the tolerance.
    x = torch.randn(batch_size, dim) * 4.0
    return [x]


def get_init_inputs():
    return []
