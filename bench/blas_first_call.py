#!/usr/bin/env python3
"""What a process's first cuBLAS GEMM costs, and what a small GEMM of the harness's own takes off it.

Each run is a fresh interpreter on the GPU (CUDA context made, a 1024x8192 @ 8192x8192 fp32 GEMM's
operands allocated), then one of: nothing, torch's cuBLAS handle alone (`current_blas_handle`), a
64x64 GEMM (what `guards.warm_blas` runs), a 64x64 linear with a bias; then three timed GEMMs of the
big shape. The variants alternate REPEATS times; one JSON line per run, milliseconds. Used for the
`candidate` and `profile` jobs' cuBLAS warm-up (docs/decisions.md, 2026-11-27 twelfth session).

    python3 bench/blas_first_call.py [REPEATS]
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r'''
import json, sys, time, torch
variant = sys.argv[1]
torch.backends.cuda.matmul.allow_tf32 = False
torch.zeros(1, device="cuda")
x = torch.randn(1024, 8192, device="cuda")
w = torch.randn(8192, 8192, device="cuda")
torch.cuda.synchronize()
start = time.perf_counter()
if variant == "handle":
    torch.cuda.current_blas_handle()
elif variant == "mm":
    a = torch.randn(64, 64, device="cuda")
    torch.mm(a, a.t())
elif variant == "linear":
    a = torch.randn(64, 64, device="cuda")
    torch.nn.functional.linear(a, a, a[0])
torch.cuda.synchronize()
out = {"variant": variant, "warm": time.perf_counter() - start}
for call in ("first", "second", "third"):
    start = time.perf_counter()
    torch.mm(x, w.t())
    torch.cuda.synchronize()
    out[call] = time.perf_counter() - start
print(json.dumps(out))
'''

VARIANTS = ("none", "handle", "mm", "linear")


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for _ in range(repeats):
        for variant in VARIANTS:
            proc = subprocess.run([sys.executable, "-c", CHILD, variant], capture_output=True, text=True)
            if proc.returncode != 0:
                print(json.dumps({"variant": variant, "error": proc.stderr[-1000:]}), flush=True)
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            print(json.dumps({k: round(v * 1000, 2) if isinstance(v, float) else v for k, v in row.items()}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
