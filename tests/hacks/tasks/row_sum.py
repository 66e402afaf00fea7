import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension of a 2-D tensor (keepdim=False): y[i] = sum_j x[i, j].

    A task for the hack corpus (HACKS.md B12): a candidate may split each row over several blocks
    and combine the partial sums with float atomics, whose order (and so the last bits of the result)
    changes from run to run; that is legitimate and must stay within the tolerance.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 4096
dim1 = 8192
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1)
    return [x]


def get_init_inputs():
    return [reduce_dim]
