#!/usr/bin/env python3
"""What poisoning free memory costs per forward (integrity.poison_free_memory, HACKS.md B1/B12).

The candidate job poisons the CUDA allocator's free memory before each of its forwards. This times,
in one CUDA process, --calls poisonings with a forward-sized allocation (--output-mib, written and
freed) between them, and the parts of one poisoning: emptying the cache, reading the allocator's
free blocks (its snapshot), and allocating and filling the poison blocks. It also reports the
allocator's reserved memory after each call.

    python3 bench/poison_costs.py --calls 6 --out poison.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402

from cuda_agent_harness import integrity  # noqa: E402


def timed_parts() -> dict:
    """Wraps integrity's helpers so one poisoning reports where its time went."""
    parts = {"empty_cache": 0.0, "snapshot_reads": 0, "snapshot_s": 0.0, "block_s": 0.0, "blocks": 0}
    real_empty, real_free_blocks, real_block = (torch.cuda.empty_cache, integrity._free_blocks,
                                                integrity._poison_block)

    def empty_cache():
        start = time.perf_counter()
        real_empty()
        parts["empty_cache"] += time.perf_counter() - start

    def free_blocks():
        start = time.perf_counter()
        value = real_free_blocks()
        parts["snapshot_reads"] += 1
        parts["snapshot_s"] += time.perf_counter() - start
        return value

    def block(nbytes, device, fill=math.nan):
        start = time.perf_counter()
        value = real_block(nbytes, device, fill)
        parts["blocks"] += 1
        parts["block_s"] += time.perf_counter() - start
        return value

    torch.cuda.empty_cache, integrity._free_blocks, integrity._poison_block = empty_cache, free_blocks, block
    return parts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--output-mib", type=int, default=64)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.zeros(1, device="cuda")
    records = []
    for call in range(args.calls):
        parts = timed_parts()
        torch.cuda.synchronize()
        start = time.perf_counter()
        poisoned = integrity.poison_free_memory("cuda")
        total = time.perf_counter() - start
        record = {"call": call, "seconds": total, "poisoned_gib": poisoned / 2**30,
                  "reserved_gib": torch.cuda.memory_reserved() / 2**30, **parts}
        records.append(record)
        print(json.dumps(record), flush=True)
        # A forward's output: carved out of the poisoned cache, written, freed.
        out = torch.empty(args.output_mib << 18, device="cuda").fill_(1.0)
        torch.cuda.synchronize()
        del out
    seconds = [r["seconds"] for r in records]
    summary = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "calls": records,
               "median_s": statistics.median(seconds), "first_s": seconds[0],
               "later_median_s": statistics.median(seconds[1:]) if len(seconds) > 1 else None}
    print(json.dumps({k: v for k, v in summary.items() if k != "calls"}))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
