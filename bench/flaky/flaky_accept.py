#!/usr/bin/env python3
"""P(accept) of flaky candidates: judges each candidate many times and counts the judgements that pay
it as correct (HACKS.md B14; docs/hacks.md "Flaky kernels").

    python3 bench/flaky/flaky_accept.py --runs 24 --jobs 4 --out flaky.json \\
        examples/relu_scale/model.py:tests/hacks/b14_flaky_skip_cu \\
        examples/relu_scale/model.py:bench/flaky/candidates/skip_1in32 \\
        -- --sampled-checks 0            # judge flags after --, e.g. the defence switched off

Each run is a full `cuda-agent judge --json` (device cuda unless the flags say otherwise); a run is
"accepted" when the verdict is correct (reward >= 1). The summary gives per candidate the count, the
acceptances, P(accept) with a 95% Wilson interval, and the stages and error kinds of the refusals.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def wilson(accepted: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = accepted / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def judge(binary: str, task: str, candidate: str, flags: list[str]) -> dict:
    argv = [binary, "judge", "--task", task, "--candidate", candidate, "--json", "--baselines", "eager"]
    argv += flags
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=900)
    seconds = time.perf_counter() - start
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        return {"ok": False, "exit": proc.returncode, "seconds": seconds, "stderr": proc.stderr[-400:]}
    sampled = (result.get("verify") or {}).get("sampled_checks") or {}
    return {"ok": True, "seconds": seconds, "correct": bool(result.get("correct")),
            "reward": result.get("reward"), "stage": result.get("stage"),
            "error_kind": result.get("error_kind"), "reason": (result.get("reason") or "")[:300],
            # How many input sets were fingerprinted: sampled ones, the timed calls' (sampled_checks.py).
            "sampled_sets": sampled.get("count"), "timed_sets": sampled.get("timed_sets")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", nargs="+", help="TASK:CANDIDATE pairs")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--binary", default=str(REPO / "build" / "cuda-agent"))
    parser.add_argument("--out", default="")
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    pairs = [p.split(":", 1) for p in args.pairs]
    if any(len(p) != 2 for p in pairs):
        parser.error("each pair is TASK:CANDIDATE")
    work = [(task, cand) for task, cand in pairs for _ in range(args.runs)]
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(judge, args.binary, task, cand, flags): cand for task, cand in work}
        for future in concurrent.futures.as_completed(futures):
            runs[futures[future]].append(future.result())
    summary = {"flags": flags, "runs_per_candidate": args.runs, "jobs": args.jobs, "candidates": {}}
    for cand, results in runs.items():
        judged = [r for r in results if r["ok"]]
        accepted = sum(1 for r in judged if r["correct"])
        low, high = wilson(accepted, len(judged))
        kinds = collections.Counter(f"{r['stage']}:{r['error_kind']}" for r in judged if not r["correct"])
        summary["candidates"][cand] = {
            "judged": len(judged), "failed_to_judge": len(results) - len(judged), "accepted": accepted,
            "p_accept": accepted / len(judged) if judged else None, "wilson95": [low, high],
            "refusals": dict(kinds), "median_seconds": sorted(r["seconds"] for r in results)[len(results) // 2],
            "fingerprinted_sets": dict(collections.Counter(f"{r.get('sampled_sets')}+{r.get('timed_sets')}"
                                                           for r in judged)),
            "example_reason": next((r["reason"] for r in judged if not r["correct"]), ""),
            "errors": [r for r in results if not r["ok"]][:2]}
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
