#!/usr/bin/env python3
"""trusted_load_contention.py — why does a job's trusted loading (the reference weights rebuilt from
their seed and checksummed, the check inputs made on the device) take 0.2–0.3 s alone and 1.8–2.2 s
when eight judgements run at once (issue 22: the candidate job's `load`, the profile job's
`inputs`)? CPUs, the driver's locks (lazy module loading), or the GPU's time slices between
contexts?

Each process imports torch and the harness, creates its CUDA context, waits at a barrier (a file
appearing), then does a job's trusted loading --rounds times: the task imported, its Model built from
a seed on the device and checksummed (models.seeded_reference, models.state_checksums), three
input sets made (inputs.make_input_set), a synchronize. Per round: wall and CPU seconds of each part.
The first round loads the kernels' modules (lazy loading), later ones find them loaded. With
--busy K, K more processes run a stream of GEMMs on the same GPU (others' forwards) while the
loaders work; with --threads T every loader sets torch.set_num_threads(T).

    python3 bench/trusted_load_contention.py --task T.py --counts 1 4 8 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

LOADER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[5])
import torch
from cuda_agent_harness.models import seeded_reference, detached_state, state_checksums
from cuda_agent_harness.inputs import make_input_set
from cuda_agent_harness.task_module import import_task
barrier, task_path, rounds, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
device = sys.argv[6]
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
if threads > 0:
    torch.set_num_threads(threads)
torch.zeros(1, device=device); sync()
open(barrier + ".ready." + str(os.getpid()), "w").close()
while not os.path.exists(barrier):
    time.sleep(0.002)
rows = []
for r in range(rounds):
    row = {}
    def lap(name, t, c):
        row[name + "_s"] = time.perf_counter() - t
        row[name + "_cpu_s"] = time.process_time() - c
        return time.perf_counter(), time.process_time()
    t, c = time.perf_counter(), time.process_time()
    t0 = t
    task = import_task(task_path)
    t, c = lap("task", t, c)
    _, model = seeded_reference(task, 1234 + r, device)
    t, c = lap("model", t, c)
    sums = state_checksums(detached_state(model))
    t, c = lap("checksums", t, c)
    sets = [make_input_set(task, 100 + 10 * r + i, device) for i in range(3)]
    sync()
    t, c = lap("inputs", t, c)
    row["total_s"] = time.perf_counter() - t0
    del model, sets
    rows.append(row)
print(json.dumps(rows))
"""

BUSY = r"""
import os, sys, time
import torch
stop = sys.argv[1]
a = torch.randn(4096, 4096, device="cuda"); b = torch.randn(4096, 4096, device="cuda")
open(stop + ".busy." + str(os.getpid()), "w").close()
while not os.path.exists(stop):
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
"""


def run_once(count: int, busy: int, task: str, rounds: int, threads: int, env: dict,
             device: str) -> list[list[dict]]:
    python_dir = os.path.join(os.path.dirname(HERE), "python")
    with tempfile.TemporaryDirectory() as tmp:
        barrier, stop = os.path.join(tmp, "go"), os.path.join(tmp, "stop")
        busy_procs = [subprocess.Popen([sys.executable, "-c", BUSY, stop], env=env) for _ in range(busy)]
        loaders = [subprocess.Popen([sys.executable, "-c", LOADER, barrier, task, str(rounds), str(threads),
                                     python_dir, device], env=env, stdout=subprocess.PIPE, text=True)
                   for _ in range(count)]
        while (len([f for f in os.listdir(tmp) if ".ready." in f]) < count
               or len([f for f in os.listdir(tmp) if ".busy." in f]) < busy):
            time.sleep(0.01)
        open(barrier, "w").close()
        results = []
        for p in loaders:
            out, _ = p.communicate(timeout=600)
            results.append(json.loads(out.strip().splitlines()[-1]))
        open(stop, "w").close()
        for p in busy_procs:
            p.wait(timeout=60)
        return results


def summary(results: list[list[dict]], rounds: int) -> list[dict]:
    out = []
    for r in range(rounds):
        rows = [res[r] for res in results]
        out.append({key: round(statistics.median(row[key] for row in rows), 4) for key in rows[0]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--counts", nargs="+", type=int, default=[1, 4, 8])
    parser.add_argument("--busy", nargs="+", type=int, default=[0])
    parser.add_argument("--threads", nargs="+", type=int, default=[0], help="0: torch's default")
    parser.add_argument("--module-loading", nargs="+", default=["LAZY"], help="CUDA_MODULE_LOADING values")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of the script (--busy needs cuda)")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    report = []
    for loading in args.module_loading:
        env = dict(os.environ, CUDA_MODULE_LOADING=loading)
        for threads in args.threads:
            for busy in args.busy:
                for count in args.counts:
                    start = time.perf_counter()
                    rounds = summary(run_once(count, busy, args.task, args.rounds, threads, env, args.device), args.rounds)
                    entry = {"module_loading": loading, "threads": threads, "busy": busy, "loaders": count,
                             "wall_s": round(time.perf_counter() - start, 2), "rounds": rounds}
                    report.append(entry)
                    print(json.dumps(entry), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
