#!/usr/bin/env python3
"""worker_stages.py — per GPU, how long the workers' judgements took and in which stage (issue 20).

Reads `cuda-agent worker` logs, whose lines for a judged job read
    <time> worker: <host>/gpu<G>[.<k>]: job <id> (<task>) judged in <s> s [<stage> <s> s, ...]: <reason>
and prints, per log and GPU, the number of jobs, the median total and the median of each stage, so a
run on several GPUs can be read against the same run on one (which stage grew).

    python3 bench/worker_stages.py OUT/worker_1.log OUT/worker_2.log [--json OUT/stages.json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

LINE = re.compile(r"/gpu(?P<gpu>\d+)[.\d]*: job \S+ \(.*?\) judged in (?P<total>[\d.]+) s"
                  r"(?: \[(?P<stages>[^\]]*)\])?")
STAGE = re.compile(r"(?P<name>[a-z -]+?) (?P<s>[\d.]+) s")


def parse(path: str) -> dict[str, list[dict[str, float]]]:
    """GPU index → one {stage: seconds, "total": seconds} per judged job."""
    per_gpu: dict[str, list[dict[str, float]]] = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            if not m:
                continue
            row = {"total": float(m.group("total"))}
            for part in (m.group("stages") or "").split(", "):
                s = STAGE.fullmatch(part.strip())
                if s:
                    row[s.group("name")] = float(s.group("s"))
            per_gpu.setdefault(m.group("gpu"), []).append(row)
    return per_gpu


def summarize(rows: list[dict[str, float]], stat=statistics.median) -> dict[str, float]:
    """`stat` (the median) per stage over the jobs (a stage a job did not report counts as 0 s)."""
    names = sorted({k for r in rows for k in r})
    return {k: round(stat([r.get(k, 0.0) for r in rows]), 2) for k in names}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    report = {}
    for path in args.logs:
        per_gpu = parse(path)
        report[path] = {gpu: {"jobs": len(rows), "median_s": summarize(rows),
                              "mean_s": summarize(rows, statistics.fmean), "max_s": summarize(rows, max),
                              "busy_s": round(sum(r["total"] for r in rows), 1)}
                        for gpu, rows in sorted(per_gpu.items())}
        for gpu, entry in report[path].items():
            for stat in ("median_s", "mean_s", "max_s"):
                stages = ", ".join(f"{k} {v}" for k, v in entry[stat].items())
                print(f"{path} gpu{gpu}: {entry['jobs']} jobs, {stat[:-2]}: {stages}")
            print(f"{path} gpu{gpu}: judging seconds summed over its jobs {entry['busy_s']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if any(report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
