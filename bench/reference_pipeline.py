#!/usr/bin/env python3
"""The published pipeline (PAPER.md §2), rebuilt for comparison with the judge (issue 5).

Each step is a fresh interpreter, as the published workspace commands are:
  compile  torch.utils.cpp_extension.load() of binding.cpp + kernels/*.cu|*.cpp (torch's extension loader,
           -O3, nvcc --use_fast_math), into a fresh build folder;
  verify   Model and ModelNew from get_init_inputs(), the reference state_dict loaded into ModelNew,
           5 checks on fresh get_inputs(), atol = rtol = 1e-2;
  profile  eager, torch.compile (compiled again every time) and the extension, each timed with CUDA
           events (or perf_counter on the CPU) over warm-up + timed calls.
It prints one JSON object per candidate with the wall seconds of each step, measured from outside.
This is a measuring instrument, not a judge: it has none of the judge's guards.

    python3 bench/reference_pipeline.py --task examples/relu_scale/model.py \\
        --candidate examples/relu_scale/candidates/cuda_correct --device cuda --repeats 3 --out ref.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "templates" / "workspace"

COMPILE = """
import glob, os, sys, torch.utils.cpp_extension as ext
ws, build = sys.argv[1], sys.argv[2]
sources = [os.path.join(ws, "binding.cpp")] + sorted(glob.glob(os.path.join(ws, "kernels", "*.cu")) +
                                                     glob.glob(os.path.join(ws, "kernels", "*.cpp")))
ext.load("cuda_extension", sources, extra_cflags=["-O3"], extra_cuda_cflags=["-O3", "--use_fast_math"],
         extra_include_paths=[ws], build_directory=build, verbose=False)
"""

COMMON = """
import importlib.util, sys, time, torch
ws, build, device = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path[:0] = [build, ws]
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
task = load("model", ws + "/model.py")
new = load("model_new", ws + "/model_new.py")
init = task.get_init_inputs()
ref = task.Model(*init).to(device).eval()
cand = new.ModelNew(*init).to(device).eval()
cand.load_state_dict(ref.state_dict())
def inputs():
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
def sync():
    if device == "cuda":
        torch.cuda.synchronize()
"""

VERIFY = COMMON + """
with torch.no_grad():
    for i in range(5):
        x = inputs()
        ok = torch.allclose(cand(*x), ref(*x), atol=1e-2, rtol=1e-2)
        print(f"[{'PASS' if ok else 'FAIL'}] check {i + 1}/5")
"""

PROFILE = COMMON + """
def timed(model, warmup=5, iters=20):
    x = inputs()
    with torch.no_grad():
        for _ in range(warmup):
            model(*x)
        sync()
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                model(*x)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1e3 / iters
        t = time.perf_counter()
        for _ in range(iters):
            model(*x)
        return (time.perf_counter() - t) * 1e6 / iters
eager = timed(ref)
compiled = timed(torch.compile(ref))
mine = timed(cand)
print(f"Torch Baseline: {eager:.1f}us, Torch Compile: {compiled:.1f}us, CUDA Extension: {mine:.1f}us")
"""


# The published binding.cpp: the module and the registry's bindings, nothing else. (Our template's
# binding.cpp is also the adapter of plain bindings, with torch's headers: the published pipeline
# must not pay for that.)
PUBLISHED_BINDING_CPP = """#include <pybind11/pybind11.h>
#include "binding_registry.h"

PYBIND11_MODULE(cuda_extension, m) {
  cuda_agent::BindingRegistry::Instance().ApplyAll(m);
}
"""


def workspace(task: Path, candidate: Path, into: Path) -> Path:
    """A published-layout workspace: the published binding.cpp, the template's registry header,
    model.py, the candidate's files."""
    ws = into / "ws"
    ws.mkdir(parents=True)
    (ws / "binding.cpp").write_text(PUBLISHED_BINDING_CPP)
    shutil.copy(TEMPLATE / "binding_registry.h", ws / "binding_registry.h")
    shutil.copy(task, ws / "model.py")
    shutil.copytree(candidate / "kernels", ws / "kernels")
    shutil.copy(candidate / "model_new.py", ws / "model_new.py")
    return ws


def step(code: str, *args: str, timeout: float = 1800) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                          text=True, timeout=timeout)
    return time.perf_counter() - start, proc


def run_once(task: Path, candidate: Path, device: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="refpipe-") as tmp:
        ws = workspace(task, candidate, Path(tmp))
        build = Path(tmp) / "build"
        build.mkdir()
        record = {"task": str(task), "candidate": str(candidate), "device": device}
        for name, code in (("compile", COMPILE), ("verify", VERIFY), ("profile", PROFILE)):
            args = (str(ws), str(build)) if name == "compile" else (str(ws), str(build), device)
            seconds, proc = step(code, *args)
            record[f"{name}_s"] = seconds
            if proc.returncode != 0:
                record["error"] = f"{name}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
                break
            if name != "compile":
                record[f"{name}_output"] = proc.stdout.strip().splitlines()[-1:]
        record["step_s"] = sum(record.get(f"{n}_s", 0.0) for n in ("compile", "verify", "profile"))
        return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, type=Path)
    parser.add_argument("--candidate", required=True, type=Path, action="append")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    records = []
    for candidate in args.candidate:
        for r in range(args.repeats):
            record = run_once(args.task.resolve(), candidate.resolve(), args.device)
            record["repeat"] = r
            records.append(record)
            print(json.dumps(record), flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    steps = [r["step_s"] for r in records if "error" not in r]
    if steps:
        print(f"step p50 {statistics.median(steps):.2f} s over {len(steps)} runs", file=sys.stderr)
    return 0 if len(steps) == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
