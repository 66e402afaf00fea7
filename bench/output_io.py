#!/usr/bin/env python3
"""output_io.py — what moving one large output between the judge's jobs costs (issue 22, faster steps).

Verification hands every output from the job that made it to the trusted comparison through a file: the
candidate job copies it to the CPU and torch.saves it, the served reference loads it and moves it to
the GPU. For tasks with 256 MiB outputs (KernelBench 40_Matmul_Scaling_ResidualAdd, 88_MinGPTNewGelu)
that was seconds per step. This measures each part, per folder (the judge's cache on disk, /dev/shm),
the old way and output_files' way (the first round includes pinning the host block; later rounds
reuse it, as a job's later checks do):

    python3 bench/output_io.py --mib 256 --repeats 5 --dirs /tmp/cuda-agent-cache,/dev/shm --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from cuda_agent_harness import output_files  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def one_round(source: torch.Tensor, folder: str, device: str) -> dict:
    """One output moved both ways: as the jobs did until 2026-11-26 (fresh memory, torch.save with
    CRC32, torch.load reading the file) and as output_files does (pinned memory that the host
    allocator reuses, no CRC32, the file mapped)."""
    sync = (lambda: torch.cuda.synchronize()) if device == "cuda" else (lambda: None)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        path = os.path.join(tmp, "out.pt")
        row = {}
        torch.serialization.set_crc32_options(True)
        cpu, row["old_to_cpu"] = timed(lambda: source.detach().cpu())
        _, row["old_save"] = timed(lambda: torch.save(cpu, path))
        loaded, row["old_load"] = timed(lambda: torch.load(path, weights_only=True))
        _, row["old_to_device"] = timed(lambda: (loaded.to(device), sync()))
        del cpu, loaded
        os.unlink(path)
        output_files.no_checksums()
        host, row["new_to_host"] = timed(lambda: output_files.to_host(source))
        _, row["new_save"] = timed(lambda: torch.save(host, path))
        del host
        mapped, row["new_load"] = timed(lambda: output_files.load_output(path))
        _, row["new_to_device"] = timed(lambda: (mapped.to(device), sync()))
        del mapped
        row["old_total"] = sum(row[k] for k in ("old_to_cpu", "old_save", "old_load", "old_to_device"))
        row["new_total"] = sum(row[k] for k in ("new_to_host", "new_save", "new_load", "new_to_device"))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dirs", default=f"{tempfile.gettempdir()},/dev/shm")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    source = torch.rand(args.mib * 1024 * 1024 // 4, device=device)
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "mib": args.mib,
              "torch": torch.__version__, "folders": {}}
    for folder in args.dirs.split(","):
        if not os.path.isdir(folder):
            continue
        rows = [one_round(source, folder, device) for _ in range(args.repeats)]
        stat = os.statvfs(folder)
        summary = {k: {"median": statistics.median(r[k] for r in rows), "min": min(r[k] for r in rows),
                       "max": max(r[k] for r in rows)} for k in rows[0]}
        report["folders"][folder] = {"free_gib": stat.f_bavail * stat.f_frsize / 2**30, "seconds": summary}
        print(folder, " ".join(f"{k} {v['median']:.3f}" for k, v in summary.items()),
              f"(first round: old_total {rows[0]['old_total']:.3f} new_total {rows[0]['new_total']:.3f})",
              flush=True)
        report["folders"][folder]["first_round"] = rows[0]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
