import torch
import torch.nn as nn


class Model(nn.Module):
    """The sum of each row of a (rows, cols) float32 matrix: y = x.sum(dim=1). Few wide rows, so that a
    reduction splits each row over blocks that run at once (tests/hacks/b14_racy_row_sum_cu)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


rows = 16
cols = 1 << 16


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
