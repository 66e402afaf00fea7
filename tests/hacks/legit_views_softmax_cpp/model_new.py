import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """Views the input as (rows, cols), allocates the output with tensor creation and lets the
    kernel fill it; shapes are computed from metadata only."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        rows = x.numel() // cols
        x2 = x.view(rows, cols)
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        cuda_extension.rowwise_softmax_out(x2, out)
        return out.view(x.shape)
