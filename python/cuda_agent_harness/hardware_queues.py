"""One hardware queue for a job whose device work is never timed (the reference, the candidate's
verification).

The NVIDIA driver makes and tears down CUDA contexts one at a time per host, and a context's eight
hardware queues (channels) are most of that work: with one queue (CUDA_DEVICE_MAX_CONNECTIONS=1) a
context is made in 0.07 s instead of 0.13–0.15 s, and 16 at once in 0.6 s instead of 2.1 s
(bench/context_contention.py, H100). The judge sets the variable for these jobs only
(src/judge/stages/judgement.h, ContainUntimed); the profile job keeps the driver's queues, so streams
a candidate runs side by side while it is timed are as concurrent as they would be anywhere.

The driver reads the variable when it makes the context. The candidate's verification then removes it
(`forget_queue_setting`) before any candidate code is loaded, so that the environment does not tell a
check from a timing (HACKS A5: the phases must look alike). One queue runs the work of all streams in
the order it was issued, so a race between streams cannot show in the verification; the timed calls'
outputs, checked under the driver's queues (the spot checks), are where it shows.
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
