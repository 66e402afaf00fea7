#!/usr/bin/env python3
"""Per-stage wall times of `cuda-agent judge` on the bundled examples.

Runs every example candidate whose name starts with the device (cpu_ / cuda_) `--repeats` times:
the first run with an empty cache (cold: compiles every object, discovers the toolchain), the
following ones with the cache warm. Writes one JSON record per run and a markdown table of medians.

    python3 bench/judge_stages.py --device cuda --repeats 3 --out stages.json --markdown stages.md
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["static", "toolchain", "build", "reference", "verify", "profile_candidate",
          "profile_baselines", "total"]


def candidates(device, only):
    for task_dir in sorted((ROOT / "examples").iterdir()):
        cand_root = task_dir / "candidates"
        if not cand_root.is_dir():
            continue
        for cand in sorted(cand_root.iterdir()):
            if not cand.name.startswith(device + "_"):
                continue
            if only and cand.name not in only:
                continue
            yield task_dir / "model.py", cand


def run_one(binary, task, cand, device, cache_dir, extra):
    cmd = [binary, "judge", "--task", str(task), "--candidate", str(cand), "--device", device,
           "--json", "--cache-dir", cache_dir, "--timeout", "120"] + extra
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result = {"reason": "no JSON: " + proc.stderr[-300:]}
    return {"task": task.parent.name, "candidate": cand.name, "exit_code": proc.returncode,
            "wall_s": wall, "reward": result.get("reward"), "stage": result.get("stage"),
            "reason": result.get("reason"), "stage_seconds": result.get("stage_seconds", {}),
            "timing": result.get("timing"), "env": result.get("env")}


def markdown(records):
    lines = ["| task / candidate | run | reward | " + " | ".join(STAGES) + " |",
             "|---" * (len(STAGES) + 3) + "|"]
    groups = {}
    for r in records:
        groups.setdefault((r["task"], r["candidate"]), []).append(r)
    for (task, cand), runs in groups.items():
        cold, warm = runs[0], runs[1:]
        for label, sel in (("cold", [cold]), ("warm (median)", warm)):
            if not sel:
                continue
            cells = []
            for st in STAGES:
                vals = [r["stage_seconds"].get(st) for r in sel if r["stage_seconds"].get(st) is not None]
                cells.append(f"{statistics.median(vals):.2f}" if vals else "–")
            rewards = ",".join(str(r["reward"]) for r in sel)
            lines.append(f"| {task} / {cand} | {label} | {rewards} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--binary", default=os.environ.get("CUDA_AGENT_BIN", str(ROOT / "build" / "cuda-agent")))
    ap.add_argument("--only", default="", help="comma-separated candidate names")
    ap.add_argument("--out", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("judge_args", nargs="*", help="extra judge flags, after --")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    records = []
    for task, cand in candidates(args.device, only):
        cache_dir = tempfile.mkdtemp(prefix="judge-bench-")
        try:
            for rep in range(args.repeats):
                rec = run_one(args.binary, task, cand, args.device, cache_dir, args.judge_args)
                rec["repeat"] = rep
                records.append(rec)
                # Written after every run, so a time limit loses nothing already measured.
                Path(args.out).write_text(json.dumps(records, indent=1))
                if args.markdown:
                    Path(args.markdown).write_text(markdown(records))
                print(f"{task.parent.name}/{cand.name} #{rep}: reward={rec['reward']} "
                      f"stage={rec['stage']} total={rec['stage_seconds'].get('total', float('nan')):.2f}s "
                      f"{(rec['reason'] or '')[:120]}", flush=True)
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
