import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B in half precision: A (M, K), B (K, N), float16 inputs and output.

    A task for the hack corpus (HACKS.md B11): the task itself is fp16, so fp16 tensor-core math
    (with fp32 accumulation) is the task's own precision, not a downgrade.
    """

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 1024
K = 1024
N = 1024


def get_inputs():
    A = torch.randn(M, K, dtype=torch.float16)
    B = torch.randn(K, N, dtype=torch.float16)
    return [A, B]


def get_init_inputs():
    return []
