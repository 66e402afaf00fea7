#!/usr/bin/env python3
"""Where a harness job's time goes before it does any work: the costs the fork server removes.

Measures, on this machine, each several times (median and range):
  interpreter   `python3 -c pass` in a fresh process
  import_torch  `python3 -c "import torch"` in a fresh process
  import_inductor  the same plus torch._dynamo / torch._inductor (what a compile baseline imports)
  fork          fork() of a process that imported torch, to the child's first line (wall in the parent)
  cuda_init     first CUDA call in a forked child (torch.zeros(1, device="cuda") + synchronize)
  profiler      entering and leaving torch.profiler.profile with CUDA activities, one tiny kernel
  profiler_*    25 calls of a small op, each in a record_function range, under the profiler with CPU+CUDA
                activities and with CUDA only: seconds to enter, run, leave, and read the events
  save_load     torch.save + torch.load of a 1 GiB tensor in --scratch (disk) and /dev/shm
  generate      torch.rand of 1 GiB on the CPU vs on the GPU (KernelBench-sized inputs)

    python3 bench/harness_costs.py --repeats 5 --out costs.json
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


def fresh(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def in_forked_child(fn):
    """Runs fn() in a forked child; returns what it reported (a number or a dict, through a pipe)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            value = fn()
            os.write(w, repr(value).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    import ast
    return ast.literal_eval(data.decode() or "float('nan')") if data else float("nan")


def summary(values: list[float]) -> dict:
    return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values),
            "n": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scratch", default=tempfile.gettempdir())
    parser.add_argument("--out")
    args = parser.parse_args()
    results: dict = {}

    results["interpreter"] = summary([fresh("pass") for _ in range(args.repeats)])
    results["import_torch"] = summary([fresh("import torch") for _ in range(args.repeats)])
    results["import_inductor"] = summary(
        [fresh("import torch, torch._dynamo, torch._inductor.compile_fx") for _ in range(args.repeats)])

    import torch  # noqa: E402  (after the fresh-process measurements)

    def fork_cost() -> float:
        start = time.perf_counter()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"x")
            os._exit(0)
        os.read(r, 1)
        elapsed = time.perf_counter() - start
        os.waitpid(pid, 0)
        os.close(r)
        os.close(w)
        return elapsed

    results["fork"] = summary([fork_cost() for _ in range(args.repeats)])
    if os.path.exists("/dev/nvidiactl"):
        def cuda_init() -> float:
            start = time.perf_counter()
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            return time.perf_counter() - start

        def profiler_cost() -> float:
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            start = time.perf_counter()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                    torch.profiler.ProfilerActivity.CUDA]) as prof:
                torch.ones(16, device="cuda").add_(1)
                torch.cuda.synchronize()
            prof.key_averages()
            return time.perf_counter() - start

        def generate(device: str) -> float:
            if device == "cuda":
                torch.zeros(1, device="cuda")
            torch.manual_seed(0)
            start = time.perf_counter()
            x = torch.rand(256, 1 << 20, device=device)
            if device == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start
            del x
            return elapsed

        def profiled_calls(cpu: bool) -> dict:
            from torch.profiler import ProfilerActivity, profile, record_function
            x = torch.ones(1 << 20, device="cuda")
            torch.cuda.synchronize()
            activities = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if cpu else [])
            t0 = time.perf_counter()
            with profile(activities=activities) as prof:
                t1 = time.perf_counter()
                for i in range(25):
                    with record_function(f"call_{i}"):
                        x.mul_(1.0001)
                        torch.cuda.synchronize()
                t2 = time.perf_counter()
            t3 = time.perf_counter()
            events = prof.events()
            t4 = time.perf_counter()
            return {"enter": t1 - t0, "calls": t2 - t1, "exit": t3 - t2, "events": t4 - t3,
                    "count": len(events)}

        for cpu in (True, False):
            runs = [in_forked_child(lambda: profiled_calls(cpu)) for _ in range(2)]
            for part in ("enter", "calls", "exit", "events", "count"):
                results[f"profiler_{'cpu_cuda' if cpu else 'cuda_only'}_{part}"] = summary([r[part] for r in runs])
        results["cuda_init"] = summary([in_forked_child(cuda_init) for _ in range(args.repeats)])
        results["profiler"] = summary([in_forked_child(profiler_cost) for _ in range(args.repeats)])
        results["generate_cpu_1GiB"] = summary([in_forked_child(lambda: generate("cpu")) for _ in range(3)])
        results["generate_gpu_1GiB"] = summary([in_forked_child(lambda: generate("cuda")) for _ in range(3)])

    x = torch.rand(256, 1 << 20)
    for name, folder in (("scratch", args.scratch), ("shm", "/dev/shm")):
        if not os.path.isdir(folder):
            continue
        saves, loads = [], []
        for _ in range(3):
            path = os.path.join(folder, f"harness_costs_{os.getpid()}.pt")
            start = time.perf_counter()
            torch.save(x, path)
            saves.append(time.perf_counter() - start)
            start = time.perf_counter()
            torch.load(path, weights_only=True)
            loads.append(time.perf_counter() - start)
            os.unlink(path)
        results[f"save_1GiB_{name}"] = summary(saves)
        results[f"load_1GiB_{name}"] = summary(loads)

    results["env"] = {"python": sys.version.split()[0], "torch": torch.__version__,
                      "cpus": os.cpu_count(),
                      "gpu": torch.cuda.get_device_name(0) if os.path.exists("/dev/nvidiactl") else None}
    text = json.dumps(results, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
