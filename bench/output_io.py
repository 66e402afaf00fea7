#!/usr/bin/env python3
"""output_io.py — what moving one large output between the judge's jobs costs (issue 22, faster steps).

Verification hands every output from the job that made it to the compare job through a file: the
candidate job copies it to the CPU and torch.saves it, the compare job torch.loads both sides and moves
them to the GPU. For tasks with 256 MiB outputs (KernelBench 40_Matmul_Scaling_ResidualAdd,
88_MinGPTNewGelu) that is seconds per step. This measures each part, per folder (the judge's cache on
disk, /dev/shm), for torch.save/torch.load and for a raw write of the tensor's bytes:

    python3 bench/output_io.py --mib 256 --repeats 5 --dirs /tmp/cuda-agent-cache,/dev/shm --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import torch


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def raw_write(tensor: torch.Tensor, path: str) -> None:
    with open(path, "wb") as f:
        f.write(memoryview(tensor.numpy()).cast("B"))


def raw_read(path: str, like: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(like, device="cpu")
    with open(path, "rb") as f:
        f.readinto(memoryview(out.numpy()).cast("B"))
    return out


def one_round(source: torch.Tensor, folder: str, device: str) -> dict:
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        path = os.path.join(tmp, "out.pt")
        row = {}
        cpu, row["to_cpu"] = timed(lambda: source.detach().cpu())
        _, row["torch_save"] = timed(lambda: torch.save(cpu, path))
        loaded, row["torch_load"] = timed(lambda: torch.load(path, weights_only=True))
        _, row["to_device"] = timed(lambda: (loaded.to(device), torch.cuda.synchronize() if device == "cuda" else None))
        raw = os.path.join(tmp, "out.raw")
        _, row["raw_write"] = timed(lambda: raw_write(cpu, raw))
        _, row["raw_read"] = timed(lambda: raw_read(raw, cpu))
        del cpu, loaded
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
        print(folder, " ".join(f"{k} {v['median']:.3f}" for k, v in summary.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
