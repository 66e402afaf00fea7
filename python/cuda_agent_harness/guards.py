"""Runtime guards for the candidate's forward.

`block_functional()` is the published guard: while it is active, every public callable attribute of
`torch.nn.functional` is replaced by one that raises, so neither model_new.py nor an `nn` module it uses
can compute through `F.*`. The originals are restored on exit, also when the forward raised.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch.nn.functional as F


def _raiser(name: str) -> Callable:
    def blocked(*args, **kwargs):
        raise RuntimeError(f"torch.nn.functional.{name} is not allowed in ModelNew's forward")

    blocked.__name__ = name
    return blocked


def public_callables() -> dict[str, Callable]:
    """Name → object of every public callable attribute of torch.nn.functional."""
    found = {}
    for name in dir(F):
        if name.startswith("_"):
            continue
        attr = getattr(F, name)
        if callable(attr):
            found[name] = attr
    return found


@contextlib.contextmanager
def block_functional() -> Iterator[None]:
    """Replaces every public callable of torch.nn.functional with a raiser for the duration."""
    originals = public_callables()
    try:
        for name in originals:
            setattr(F, name, _raiser(name))
        yield
    finally:
        for name, attr in originals.items():
            setattr(F, name, attr)
