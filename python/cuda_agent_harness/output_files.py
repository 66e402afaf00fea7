"""How a checked output travels from the job that made it to the trusted comparison: a torch.save file.

The job that ran the candidate (its verification's checks, its profile's spot-checked timed calls)
writes each output with `save_output`; the served reference reads it with `load_output` after that
job has ended. Three things make this cheap for outputs of hundreds of MiB (docs/decisions/processes.md),
none of them a change of what is compared:

- A CUDA tensor is copied into pinned host memory. torch's host allocator keeps the block when the
  copy is freed, so the next check's output of the same size reuses it: no page faults on fresh
  memory, and the copy at the bus's speed. A block it cannot pin is copied the ordinary way.
- The file's records carry no CRC32 (`no_checksums`, called once by the writing job): computing it
  was a third of torch.save's time, and a corrupt file cannot pass as a right output anyway: every
  value is compared.
- The reader maps the file (`mmap=True`) instead of reading it: the comparison touches each byte once.
  Still `weights_only=True`; a file that is not torch.save's zip format (the only one mmap reads) is
  refused like any other unloadable output.
"""

from __future__ import annotations

from typing import Any

import torch

from .nested import map_tensors

# Larger CUDA tensors are copied to ordinary memory: pinning several GiB of host memory per job could
# starve the host of what it cannot page out.
PINNED_CAP = 2 << 30


def no_checksums() -> None:
    """torch.save writes no CRC32 in this process (a no-op on a torch without the switch)."""
    set_crc32 = getattr(torch.serialization, "set_crc32_options", None)
    if set_crc32 is not None:
        set_crc32(False)


def _to_host(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.device.type != "cuda" or t.numel() == 0 or t.element_size() * t.numel() > PINNED_CAP:
        return t.cpu()
    try:
        host = torch.empty_like(t, device="cpu", pin_memory=True)
    except RuntimeError:  # pinned memory exhausted: the ordinary copy
        return t.cpu()
    host.copy_(t)
    return host


def to_host(value: Any) -> Any:
    """Every tensor detached and copied to the CPU; a CUDA tensor into pinned memory."""
    return map_tensors(value, _to_host)


def save_output(value: Any, path: str) -> None:
    """Writes `value` (tensors anywhere in tuples, lists and dicts) to `path`, on the CPU."""
    torch.save(to_host(value), path)


def load_output(path: str) -> Any:
    """The output saved at `path`, its tensors mapped from the file; raises what torch.load raises."""
    return torch.load(path, weights_only=True, mmap=True)
