import torch
import torch.nn as nn

import cuda_extension


class ReluScale(torch.autograd.Function):
    """An autograd wrapper of the custom op, as third-party solutions write them: apply() runs forward
    (checked like ModelNew.forward); backward uses torch, and never runs in a judged forward."""

    @staticmethod
    def forward(ctx, x, scale, bias):
        y = cuda_extension.relu_scale_bias_forward(x, scale, bias)
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y > 0) * ctx.scale, None, None


class ModelNew(nn.Module):
    """Idioms of real KernelBench solutions (issue 46): a dtype taken from an input, an empty
    placeholder tensor for an absent bias, a torch fallback in a branch on the task's configuration
    (the input's dtype: float32 here, so the fallback never runs) and the autograd wrapper above."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.has_bias = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32 and x.dim() >= 1:
            x = x.to(x.device, x.dtype)
            bias = torch.tensor([], device=x.device) if not self.has_bias else None
            return ReluScale.apply(x, self.scale, bias)
        else:
            return torch.relu(x.float()) * self.scale
