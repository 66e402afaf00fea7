"""Allocates GPU memory until CUDA refuses, then exits 3 (used by bench/gpu_session.sh sandbox)."""
import sys

import torch

blocks = []
try:
    while True:
        blocks.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError:
    print(f"out of GPU memory after {len(blocks)} GiB", flush=True)
    sys.exit(3)
