"""Shape rules of the op catalog: for each kind of op, how it applies to an input shape.

A rule takes the current shape and a `random.Random` and returns a `Step` (the constructor or call
text, the integer hyperparameters that become `__init__` arguments, the output shape), or None when the
op does not apply to that shape. Rules are pure Python (no torch), so the composer and the catalog's
prober share them.

    step = RULES["linear"](("batch", 64), (16, 64), rng)  # nn.Linear(64, n) on a (16, 64) input
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

MODULE_CALL = "{m}({x})"


@dataclass
class Step:
    """One applied op: `module` is an nn.Module constructor (an attribute of Model) or None, `call` the
    forward expression with {x} (and {m} for the module attribute); `params` the integer
    hyperparameters (name → value) the constructor text refers to by name."""

    shape: tuple
    call: str = MODULE_CALL
    module: str | None = None
    params: dict = field(default_factory=dict)


Rule = Callable[[str, tuple, random.Random], Step | None]


def _same(template: str, shape: tuple, rng: random.Random) -> Step:
    """A shape-preserving op without hyperparameters: a module (nn.X(...)) or a one-tensor call."""
    if template.startswith("nn."):
        return Step(shape=shape, module=template)
    return Step(shape=shape, call=template)


def _linear(template: str, shape: tuple, rng: random.Random) -> Step | None:
    if len(shape) < 2:
        return None
    out = rng.choice((32, 64, 128, 256, 512, 1024))
    return Step(shape=shape[:-1] + (out,), module=template.format(i="in_features", o="out_features"),
                params={"in_features": shape[-1], "out_features": out})


def _conv(dims: int, transpose: bool):
    def rule(template: str, shape: tuple, rng: random.Random) -> Step | None:
        if len(shape) != dims + 2:
            return None
        k = rng.choice((1, 3, 3, 5)) if dims < 3 else rng.choice((1, 3))
        if transpose:
            out_sizes = tuple(s + k - 1 for s in shape[2:])
        else:
            if min(shape[2:]) < k:
                return None
            out_sizes = tuple(s - k + 1 for s in shape[2:])
        out = rng.choice((8, 16, 32, 64))
        return Step(shape=(shape[0], out) + out_sizes,
                    module=template.format(i="in_channels", o="out_channels", k="kernel_size"),
                    params={"in_channels": shape[1], "out_channels": out, "kernel_size": k})
    return rule


def _channel_norm(ranks: tuple):
    def rule(template: str, shape: tuple, rng: random.Random) -> Step | None:
        if len(shape) not in ranks:
            return None
        return Step(shape=shape, module=template.format(c="num_features"), params={"num_features": shape[1]})
    return rule


def _layer_norm(template: str, shape: tuple, rng: random.Random) -> Step | None:
    if len(shape) < 2:
        return None
    return Step(shape=shape, module=template.format(n="normalized_shape"), params={"normalized_shape": shape[-1]})


def _group_norm(template: str, shape: tuple, rng: random.Random) -> Step | None:
    if len(shape) < 3:
        return None
    groups = [g for g in (2, 4, 8) if shape[1] % g == 0 and g < shape[1]]
    if not groups:
        return None
    return Step(shape=shape, module=template.format(g="num_groups", c="num_channels"),
                params={"num_groups": rng.choice(groups), "num_channels": shape[1]})


def _pool(dims: int):
    def rule(template: str, shape: tuple, rng: random.Random) -> Step | None:
        if len(shape) != dims + 2 or min(shape[2:]) < 2:
            return None
        return Step(shape=shape[:2] + tuple(s // 2 for s in shape[2:]),
                    module=template.format(k="pool_kernel_size"), params={"pool_kernel_size": 2})
    return rule


def _adaptive_pool(template: str, shape: tuple, rng: random.Random) -> Step | None:
    if len(shape) != 4:
        return None
    size = rng.choice((1, 2, 4))
    return Step(shape=shape[:2] + (size, size), module=template.format(s="output_size"),
                params={"output_size": size})


def _along_dim(template: str, shape: tuple, rng: random.Random) -> Step | None:
    """softmax-like: shape kept, a dimension chosen (the last one most often)."""
    if len(shape) < 2:
        return None
    dim = rng.choice((-1, -1, 1))
    return Step(shape=shape, call=template.replace("{dim}", str(dim)))


def _reduce(template: str, shape: tuple, rng: random.Random) -> Step | None:
    """sum/mean/amax over one non-batch dimension; keepdim chosen so the output keeps rank >= 2."""
    if len(shape) < 2:
        return None
    dim = rng.randrange(1, len(shape))
    keep = len(shape) == 2 or rng.random() < 0.5
    new = shape[:dim] + ((1,) if keep else ()) + shape[dim + 1:]
    return Step(shape=new, call=template.replace("{dim}", str(dim)).replace("{keep}", str(keep)))


def _flatten(template: str, shape: tuple, rng: random.Random) -> Step | None:
    if len(shape) < 3:
        return None
    n = 1
    for s in shape[1:]:
        n *= s
    return Step(shape=(shape[0], n), call=template)


def _clamp(template: str, shape: tuple, rng: random.Random) -> Step | None:
    bound = rng.choice((0.5, 1.0, 2.0))
    return Step(shape=shape, call=template.replace("{lo}", str(-bound)).replace("{hi}", str(bound)))


def _scale(template: str, shape: tuple, rng: random.Random) -> Step | None:
    return Step(shape=shape, call=template.replace("{c}", str(rng.choice((0.5, 2.0, 3.0)))))


# transformers blocks (catalog.TRANSFORMERS): modules on (..., hidden) inputs.

def _module_same(template: str, shape: tuple, rng: random.Random) -> Step:
    """A shape-preserving module without hyperparameters (a transformers activation)."""
    return Step(shape=shape, module=template)


def _hidden(template: str, shape: tuple, rng: random.Random) -> Step | None:
    """A norm over the last (hidden) dimension."""
    if len(shape) < 2:
        return None
    return Step(shape=shape, module=template.format(n="hidden_size"), params={"hidden_size": shape[-1]})


def _hidden_mlp(template: str, shape: tuple, rng: random.Random) -> Step | None:
    """An MLP block hidden -> intermediate (2x or 4x) -> hidden."""
    if len(shape) < 2:
        return None
    n = shape[-1]
    return Step(shape=shape, module=template.format(n="hidden_size", m="intermediate_size"),
                params={"hidden_size": n, "intermediate_size": n * rng.choice((2, 4))})


def _attention(template: str, shape: tuple, rng: random.Random) -> Step | None:
    """Self-attention on (batch, sequence, hidden), heads of at least 8 channels; the block returns
    (output, weights): the output is taken."""
    if len(shape) != 3:
        return None
    heads = [h for h in (2, 4, 8, 16) if shape[-1] % h == 0 and shape[-1] // h >= 8]
    if not heads:
        return None
    return Step(shape=shape, call="{m}({x})[0]", module=template.format(n="hidden_size", h="num_heads"),
                params={"hidden_size": shape[-1], "num_heads": rng.choice(heads)})


RULES: dict[str, Rule] = {
    "same": _same,
    "linear": _linear,
    "conv1d": _conv(1, False),
    "conv2d": _conv(2, False),
    "conv3d": _conv(3, False),
    "conv_transpose2d": _conv(2, True),
    "channel_norm_1d": _channel_norm((2, 3)),
    "channel_norm_2d": _channel_norm((4,)),
    "channel_norm_3d": _channel_norm((5,)),
    "layer_norm": _layer_norm,
    "group_norm": _group_norm,
    "pool1d": _pool(1),
    "pool2d": _pool(2),
    "pool3d": _pool(3),
    "adaptive_pool2d": _adaptive_pool,
    "along_dim": _along_dim,
    "reduce": _reduce,
    "flatten": _flatten,
    "clamp": _clamp,
    "scale": _scale,
    "module_same": _module_same,
    "hidden": _hidden,
    "hidden_mlp": _hidden_mlp,
    "attention": _attention,
}
