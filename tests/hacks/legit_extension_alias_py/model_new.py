import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401 (left over from the reference, never used)

import cuda_extension

# The load_inline idiom: `relu_scale = load_inline(...)` becomes an alias of the extension.
relu_scale = cuda_extension
forward_op = cuda_extension.relu_scale_forward


class ModelNew(nn.Module):
    """Calls the custom op through aliases and attributes; moves data only when it must (here it is
    already contiguous and on the right device, so nothing is copied)."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.ext = relu_scale
        self.op = cuda_extension.relu_scale_forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(x, nn.Parameter):
            raise TypeError("expected an input tensor, not a parameter")
        x = x.contiguous().to(x.device)
        if x.dim() == 2:
            return self.ext.relu_scale_forward(x, self.scale)
        if x.dim() == 1:
            return self.op(x, self.scale)
        return forward_op(x, self.scale)
