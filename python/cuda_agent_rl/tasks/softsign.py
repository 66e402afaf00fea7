import torch
import torch.nn as nn


class Model(nn.Module):
    """Softsign: y = x / (1 + |x|). A toy task of the GRPO demonstration (docs/toy_rl.md)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (1 + torch.abs(x))


batch_size = 4096
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
