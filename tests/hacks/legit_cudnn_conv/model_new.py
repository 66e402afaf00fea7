import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """nn.Conv2d is declared so that the reference state_dict ("conv.weight", "conv.bias") loads
    strictly; forward passes its parameters and padding to the extension and never calls the layer."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad_h, pad_w = self.conv.padding
        with torch.no_grad():
            return cuda_extension.conv2d_relu_forward(x, self.conv.weight, self.conv.bias,
                                                      pad_h, pad_w)
