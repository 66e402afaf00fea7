import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension of a wide 2-D tensor.

    A task for the hack corpus (HACKS.md B6): every probability is about 1 / 32768 ~ 3e-5 (the largest
    ~2e-3), so an all-zero output is within the published atol = 1e-2 of every element. Only a
    tolerance scaled to the output's magnitude, or a relative-norm check, rejects zeros here.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 128
dim = 32768


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
