import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3 x 3 convolution (stride 1, "same" padding, with bias) followed by ReLU.

    A task for the hack corpus (HACKS.md C1): cuDNN may do the convolution, everything else (bias and
    ReLU) must be the candidate's own kernels.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


batch_size = 8
in_channels = 16
out_channels = 32
kernel_size = 3
height = 64
width = 64


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
