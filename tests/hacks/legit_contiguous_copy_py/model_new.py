import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """An element-wise kernel that needs contiguous memory, fed a transposed view of the input: the
    copies (`.contiguous()` before the kernel and after it) move data, they compute nothing."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xt = x.t().contiguous()  # aten.clone of a non-contiguous view
        yt = cuda_extension.relu_scale_forward(xt, self.scale)
        return yt.t().contiguous()
