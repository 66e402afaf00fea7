#!/usr/bin/env python3
"""Start-up cost of the sandbox: `cuda-agent sandbox run -- CMD` against running CMD directly.

Measures wall time per run (median and spread over --repeats runs, interleaved so drift hits both
sides alike) for /bin/true, and for `python3 -c "import torch"` (with --torch), where the sandbox
binds the interpreter's prefix like the judge does.

    python3 bench/sandbox_startup.py --repeats 20 [--torch] [--gpu] --out sandbox_startup.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("CUDA_AGENT_BIN", str(ROOT / "build" / "cuda-agent"))


def timed(argv):
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr[-500:]}")
    return elapsed * 1000.0


def summary(ms):
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "runs": len(ms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="bind /dev/nvidia* (as GPU jobs do)")
    ap.add_argument("--out")
    args = ap.parse_args()
    python = os.path.realpath(sys.executable)
    prefix = str(Path(sys.executable).parent.parent)
    commands = {"true": ["/bin/true"]}
    if args.torch:
        code = "import torch; torch.cuda.is_available() and torch.zeros(1, device='cuda')"
        commands["python -c 'import torch'"] = [python, "-c", code]
    info = subprocess.run([BIN, "sandbox", "info"], capture_output=True, text=True).stdout.strip()
    results = {"sandbox": info, "commands": {}}
    for name, argv in commands.items():
        sandboxed = [BIN, "sandbox", "run", "--read-only", f"{prefix},{os.path.dirname(os.path.dirname(python))}"]
        if args.gpu:
            sandboxed.append("--gpu")
        sandboxed += ["--"] + argv
        direct, contained = [], []
        for _ in range(args.repeats):
            direct.append(timed(argv))
            contained.append(timed(sandboxed))
        overhead = [c - d for c, d in zip(contained, direct)]
        results["commands"][name] = {"direct": summary(direct), "sandboxed": summary(contained),
                                     "overhead": summary(overhead)}
        print(f"{name}: direct {statistics.median(direct):.1f} ms, sandboxed "
              f"{statistics.median(contained):.1f} ms, overhead median {statistics.median(overhead):.1f} ms "
              f"(min {min(overhead):.1f}, max {max(overhead):.1f})", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
