#!/usr/bin/env python3
"""cpu_meter.py — how much of the host's CPU a run used, and whose (issue 20: is a GPU host bound by its
cores or by its driver?).

`snap FILE` writes the machine's CPU counters (/proc/stat) and every process's own and reaped children's
CPU time (/proc/PID/stat); `diff BEFORE AFTER --jobs N` reads two snapshots and prints, as JSON, the
busy core-seconds between them (user, nice, system, irq, softirq; iowait and a virtual machine's steal
are listed apart, not counted busy), the mean busy cores over the wall time,
the core-seconds per job, and per command name (of processes alive at both snapshots) the CPU of the
process itself and of the children it reaped — a worker reaps its judge processes and their compilers,
the fork server its harness jobs — largest first.

    python3 bench/cpu_meter.py snap /tmp/before.json
    ... the run ...
    python3 bench/cpu_meter.py snap /tmp/after.json
    python3 bench/cpu_meter.py diff /tmp/before.json /tmp/after.json --jobs 96
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

FIELDS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]


def snapshot() -> dict:
    with open("/proc/stat") as f:
        first = f.readline().split()
    assert first[0] == "cpu", "unexpected /proc/stat"
    ticks = dict(zip(FIELDS, (int(x) for x in first[1:1 + len(FIELDS)])))
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
        except OSError:
            continue  # ended meanwhile
        comm = text[text.index("(") + 1:text.rindex(")")]
        rest = text[text.rindex(")") + 2:].split()
        # fields 14-17 of proc(5): utime, stime, cutime, cstime; rest[0] is field 3
        utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
        procs[pid] = {"comm": comm, "self": utime + stime, "children": cutime + cstime,
                      "start": int(rest[19])}
    return {"unix": time.time(), "hz": os.sysconf("SC_CLK_TCK"), "cpus": os.cpu_count(), "ticks": ticks,
            "procs": procs}


def difference(before: dict, after: dict, jobs: int) -> dict:
    hz = before["hz"]
    wall = after["unix"] - before["unix"]
    delta = {k: (after["ticks"][k] - before["ticks"][k]) / hz for k in FIELDS}
    busy = sum(v for k, v in delta.items() if k not in ("idle", "iowait", "steal"))  # steal: the hypervisor's
    by_comm: dict[str, dict[str, float]] = {}
    for pid, b in before["procs"].items():
        a = after["procs"].get(pid)
        if a is None or a["start"] != b["start"]:
            continue  # ended, or the pid was reused
        row = by_comm.setdefault(b["comm"], {"self": 0.0, "children": 0.0, "processes": 0})
        row["self"] += (a["self"] - b["self"]) / hz
        row["children"] += (a["children"] - b["children"]) / hz
        row["processes"] += 1
    ranked = sorted(((c, r) for c, r in by_comm.items() if r["self"] + r["children"] >= 0.5),
                    key=lambda cr: -(cr[1]["self"] + cr[1]["children"]))
    return {
        "wall_s": round(wall, 2), "cpus": before["cpus"], "jobs": jobs,
        "busy_core_s": round(busy, 1), "mean_busy_cores": round(busy / wall, 2) if wall > 0 else None,
        "busy_share": round(busy / wall / before["cpus"], 3) if wall > 0 else None,
        "core_s_per_job": round(busy / jobs, 2) if jobs else None,
        "core_s": {k: round(v, 1) for k, v in delta.items()},
        "by_command": {c: {k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()}
                       for c, r in ranked},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snap")
    snap.add_argument("file")
    diff = sub.add_parser("diff")
    diff.add_argument("before")
    diff.add_argument("after")
    diff.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    if args.command == "snap":
        with open(args.file, "w") as f:
            json.dump(snapshot(), f)
        return
    with open(args.before) as f:
        before = json.load(f)
    with open(args.after) as f:
        after = json.load(f)
    json.dump(difference(before, after, args.jobs), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
