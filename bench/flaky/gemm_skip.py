#!/usr/bin/env python3
"""A flaky candidate for a heavy task (HACKS.md B14): bench/candidates/kernelbench.py's honest candidate
for KernelBench level 2 problem 76 (a 1024 × 8192 × 8192 GEMM in cuBLAS, then our bias-add-ReLU
epilogue), with the epilogue skipped on about one input in K — chosen by the bits of the GEMM's first
output, so stateless, as a racy or flaky kernel is. A skipped call returns the bare GEMM output: wrong.
The epilogue runs in place, so its first element is left to a one-thread kernel queued after it:
every block then reads the same, unmodified value to decide.

On this task a reference forward takes ~3 ms on an H200, so the sampled checks' time budget buys
fewer fresh input sets than on a light task: what P(accept) is there is what this candidate measures.

    python3 bench/flaky/gemm_skip.py OUT [--one-in 32]   # writes OUT/gemm_skip_1in32/
    python3 bench/flaky/flaky_accept.py --runs 20 TASKS/level2/76_Gemm_Add_ReLU.py:OUT/gemm_skip_1in32
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TASK = "level2/76_Gemm_Add_ReLU"
# Edits of the generated source (each must match once, in the element-wise epilogue's kernel or launch).
STRIDE = "  const int64_t stride = (int64_t)gridDim.x * blockDim.x;\n"
LOOP = "    const int64_t n = i % N;\n    const float v = src[i] + (bias != nullptr ? bias[n] : 0.0f);\n"
GRID = "unsigned GridFor(int64_t work) {\n"
LAUNCH = "  map_kernel<<<GridFor(total), kThreads, 0, stream>>>(y, src, bias, extra, total, N, p0, p1);\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--one-in", type=int, default=32, help="a power of two: the epilogue skips 1 input in it")
    args = parser.parse_args()
    k = args.one_in
    if k < 2 or k & (k - 1):
        parser.error("--one-in must be a power of two, at least 2")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(REPO / "bench/candidates/kernelbench.py"), tmp, "--only", TASK],
                       check=True, stdout=subprocess.DEVNULL)
        made = Path(tmp) / TASK
        source = made / "kernels" / "kb_epilogue.cu"
        text = source.read_text()
        skip = f"if (((__float_as_uint(src[0]) >> 9) & {k - 1}u) == 0) return;  // 1 input in {k} (HACKS B14)\n"
        edits = [
            (STRIDE, STRIDE + "  " + skip),
            (LOOP, "    if (i == 0) continue;  // element 0: first_kernel, after every block decided\n" + LOOP),
            (GRID, "__global__ void first_kernel(float* y, const float* src, const float* __restrict__ bias,\n"
                   "                             const float* __restrict__ extra, float p0, float p1) {\n"
                   "  " + skip +
                   "  y[0] = Epilogue(src[0] + (bias != nullptr ? bias[0] : 0.0f),\n"
                   "                  extra != nullptr ? extra[0] : 0.0f, p0, p1);\n}\n\n" + GRID),
            (LAUNCH, LAUNCH + "  first_kernel<<<1, 1, 0, stream>>>(y, src, bias, extra, p0, p1);\n"),
        ]
        for old, new in edits:
            if text.count(old) != 1:
                raise SystemExit(f"gemm_skip: {source} no longer matches the edit of {old.strip()[:40]!r}")
            text = text.replace(old, new)
        source.write_text(text)
        target = args.out / f"gemm_skip_1in{k}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(made, target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
