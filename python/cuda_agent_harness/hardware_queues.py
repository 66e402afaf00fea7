"""Fewer hardware queues for a job's CUDA context: one for a job whose device work is never timed (the
reference, the `candidate` job), two for a timed one (the candidate's profile job, which also runs its
checks, and the baselines').

The NVIDIA driver makes and tears down CUDA contexts one at a time per host, and a context's hardware
queues (channels; eight by default) are much of that work: per process with 16 starting at once on four
H100s, the context costs the host's line 0.04 s with one queue, 0.05 with two, 0.10 with eight, and its
teardown 0.07, 0.07 and 0.10 s (bench/host_line.py, bench/context_contention.py). The judge sets
CUDA_DEVICE_MAX_CONNECTIONS per job (src/judge/stages/judgement.h, ContainUntimed and ContainTimed;
the judge's --timed-queues). With two, two streams a candidate runs side by
side while it is timed each have a queue of their own (bench/stream_queues.py); a third shares one.

The driver reads the variable when it makes the context. Every job then removes it
(`forget_queue_setting`) before any candidate code is loaded, so that the environment does not tell one
job from another (HACKS A5: the phases must look alike).
"""

from __future__ import annotations

import os

QUEUES_VARIABLE = "CUDA_DEVICE_MAX_CONNECTIONS"


def forget_queue_setting(device: str) -> None:
    """Where QUEUES_VARIABLE is set, makes the CUDA context (if the job has none yet) and then
    removes the variable from the process's environment (getenv, os.environ). A no-op on the CPU."""
    if device != "cuda" or QUEUES_VARIABLE not in os.environ:
        return
    import torch
    torch.cuda.synchronize()  # the context, made with the variable read
    del os.environ[QUEUES_VARIABLE]
