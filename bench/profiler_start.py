#!/usr/bin/env python3
"""What starting torch.profiler costs in a fresh process on this GPU machine (issue 22's faster steps).

Each variant runs in its own fresh interpreter (--repeats times): import torch, create the CUDA context,
then time the profiler's prepare (kineto/CUPTI set-up; wall and CPU seconds) and start separately, one profiled kernel, the
stop, and a second start/stop cycle in the same process. One JSON line per run.

    python3 bench/profiler_start.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = time.perf_counter()
import torch
from torch.profiler import ProfilerActivity, profile
t1 = time.perf_counter()
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t2 = time.perf_counter()
acts = [ProfilerActivity.CUDA] if sys.argv[1] == "cuda_only" else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
prof = profile(activities=acts)
c2 = cpu()
prof.prepare_trace()
t3 = time.perf_counter()
c3 = cpu()
prof.start_trace()
t4 = time.perf_counter()
torch.ones(1 << 20, device="cuda").mul_(2); torch.cuda.synchronize()
prof.stop_trace()
t5 = time.perf_counter()
n = len(prof.profiler.kineto_results.events())
again = profile(activities=acts)
t6 = time.perf_counter()
again.prepare_trace(); again.start_trace()
torch.ones(1 << 20, device="cuda").mul_(2); torch.cuda.synchronize()
again.stop_trace()
t7 = time.perf_counter()
print(json.dumps({"import_torch": t1 - t0, "cuda_context": t2 - t1, "prepare": t3 - t2, "prepare_cpu": c3 - c2, "start": t4 - t3,
                  "stop": t5 - t4, "events": n, "second_cycle": t7 - t6}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    for variant in ("cpu_and_cuda", "cuda_only"):
        for _ in range(args.repeats):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", CHILD, variant], capture_output=True, text=True)
            wall = time.perf_counter() - t
            line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else None
            record = {"variant": variant, "wall_s": round(wall, 3)}
            if line:
                record.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in json.loads(line).items()})
            else:
                record["error"] = out.stderr[-800:]
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
