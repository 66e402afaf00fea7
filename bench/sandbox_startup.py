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
    """Wall ms of the whole command; for `sandbox run --json` also the job's own wall ms."""
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    elapsed = (time.perf_counter() - start) * 1000.0
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr[-500:]}")
    if "--json" in argv:
        outcome = json.loads(proc.stdout)
        if outcome["exit_code"] != 0:
            raise SystemExit(f"{argv} failed inside: {outcome['stderr'][-500:]}")
        return elapsed, outcome["wall_seconds"] * 1000.0
    return elapsed, elapsed


def summary(ms):
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "runs": len(ms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="bind /dev/nvidia* (as GPU jobs do)")
    ap.add_argument("--out")
    args = ap.parse_args()
    python = sys.executable  # not its real path: a venv's interpreter must be started through the venv
    prefix = str(Path(sys.executable).parent.parent)
    commands = {"true": ["/bin/true"]}
    if args.torch:
        code = "import torch; torch.cuda.is_available() and torch.zeros(1, device='cuda')"
        commands["python -c 'import torch'"] = [python, "-c", code]
    info = subprocess.run([BIN, "sandbox", "info"], capture_output=True, text=True).stdout.strip()
    results = {"sandbox": info, "commands": {}}
    for name, argv in commands.items():
        sandboxed = [BIN, "sandbox", "run", "--json", "--read-only",
                     f"{prefix},{os.path.dirname(os.path.dirname(os.path.realpath(python)))}"]
        if args.gpu:
            sandboxed.append("--gpu")
        sandboxed += ["--"] + argv
        direct, cli, job = [], [], []
        for _ in range(args.repeats):
            direct.append(timed(argv)[0])
            whole, inside = timed(sandboxed)
            cli.append(whole)
            job.append(inside)
        overhead = [j - d for j, d in zip(job, direct)]
        results["commands"][name] = {"direct": summary(direct), "sandboxed_job": summary(job),
                                     "sandbox_cli_whole": summary(cli), "job_overhead": summary(overhead)}
        print(f"{name}: direct {statistics.median(direct):.1f} ms | sandboxed job "
              f"{statistics.median(job):.1f} ms (overhead median {statistics.median(overhead):.1f}, "
              f"min {min(overhead):.1f}, max {max(overhead):.1f}) | whole `sandbox run` CLI "
              f"{statistics.median(cli):.1f} ms (includes the CLI's one-time bubblewrap probe)", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
