"""Does work that no device lease covers slow a timing? One process times the judge's device
calibration (timing.calibrate: a 64 MiB copy and a 2048² float64 GEMM, minimum of 7 each) and a short
kernel over and over, while other processes do, phase by phase, what a judgement's processes do
outside any lease (docs/benchmarks.md, "The calibration times the device, not the host"):

  quiet            nothing else
  idle-contexts    N processes that created a CUDA context and sleep (an early job before its go)
  idle-profilers   the same with torch's profiler (kineto/CUPTI) started (a standby profile job)
  context-churn    N loops of: start Python, import torch, create a context, exit (jobs starting/ending)
  cpu-busy         N processes spinning on the CPU (builds)
  quiet-after-idle nothing else, each sample after 1.5 s of an idle GPU (its clocks fall)

with the SM clock and power draw (nvidia-smi, once a second) beside them.

    python3 bench/timing_interference.py --out OUT [--workers 8] [--seconds 10]

Writes OUT/timing_interference.json: per phase, the samples' median, min and max of each measure.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

PHASES = ["quiet", "idle-contexts", "idle-profilers", "context-churn", "cpu-busy", "quiet-again", "quiet-after-idle"]


def background(kind: str, ready, stop) -> None:
    """One background process of phase `kind` (module doc); sets `ready` once its set-up is done."""
    if kind == "cpu-busy":
        ready.set()
        x = 0
        while not stop.is_set():
            for i in range(100000):
                x += i
        return
    if kind == "context-churn":
        import subprocess
        ready.set()
        code = "import torch; torch.cuda.init(); torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
        while not stop.is_set():
            subprocess.run([sys.executable, "-c", code], check=False)
        return
    import torch
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    if kind == "idle-profilers":
        from cuda_agent_harness import timing
        timing.DeviceProfiler().start()
    ready.set()
    stop.wait()


def short_kernel_us(x, y) -> float:
    import torch
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.clamp(x, min=0, out=y)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def smi_sampler(samples: dict, stop: threading.Event) -> None:
    """The SM clock (MHz) and power draw (W) once a second, from nvidia-smi."""
    while not stop.wait(1.0):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5).stdout.split(",")
            samples["sm_mhz"].append(float(out[0]))
            samples["power_w"].append(float(out[1]))
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
            pass


def measure(seconds: float, idle_before: float = 0) -> dict:
    import torch
    from cuda_agent_harness import timing
    x = torch.randn(8 << 20, device="cuda")
    y = torch.empty_like(x)
    samples = {"copy_us": [], "gemm_us": [], "relu_32mib_us": [], "sm_mhz": [], "power_w": []}
    stop = threading.Event()
    sampler = threading.Thread(target=smi_sampler, args=(samples, stop), daemon=True)
    sampler.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(idle_before)
        cal = timing.calibrate("cuda")
        samples["copy_us"].append(cal["copy_us"])
        samples["gemm_us"].append(cal["gemm_us"])
        samples["relu_32mib_us"].append(short_kernel_us(x, y))
    stop.set()
    sampler.join()
    return {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
            for k, v in samples.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    torch.cuda.init()
    measure(2)  # clocks up, kernels loaded
    ctx = mp.get_context("spawn")
    report = {"workers": args.workers, "seconds": args.seconds, "phases": {}}
    for phase in PHASES:
        stop = ctx.Event()
        procs, readies = [], []
        if not phase.startswith("quiet"):
            for _ in range(args.workers):
                ready = ctx.Event()
                p = ctx.Process(target=background, args=(phase, ready, stop), daemon=True)
                p.start()
                procs.append(p)
                readies.append(ready)
            for r in readies:
                r.wait(120)
        report["phases"][phase] = measure(args.seconds, 1.5 if phase == "quiet-after-idle" else 0)
        stop.set()
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
        print(phase, json.dumps({k: round(v["median"], 1) for k, v in report["phases"][phase].items()}),
              flush=True)
    (args.out / "timing_interference.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
