"""Where a device's time went while judgements ran at once: their device leases (the JudgeResult's
`leases`, placed on one time line by `started_unix_s`) swept into the shares of the wall time in which

  exclusive    a timing held the device (nothing else may run on it)
  drain        a timing waited for shared leases to end (the device did only their work)
  shared       shared leases held, no timing waiting (verification, references, comparisons)
  idle         no lease held (builds, process start-ups, the gaps between holders)

plus the timings' mean hold, the median hold of each lease's purpose (reference, verify,
profile_candidate, ...), the batches: runs of exclusive holds with no shared one between
(docs/decisions/leases.md), the shared leases' mean overlap
(how many were held at once while any was: their holds' sum over drain + shared) and the seconds
the device was held per timing (exclusive + drain + shared, per exclusive hold: what bounds judged
per GPU-hour; docs/decisions/leases.md). Used by bench/judge_latency.py's
throughput phase; `python3 bench/lease_timeline.py throughput_judgements.jsonl` reads a phase's
records again.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def intervals(records: list[dict]) -> list[dict]:
    """Each lease of each record as {mode, asked, granted, released} in absolute seconds."""
    out = []
    for r in records:
        start = r.get("started_unix_s")
        if not isinstance(start, (int, float)):
            continue
        for lease in r.get("leases") or []:
            if not isinstance(lease.get("released_s"), (int, float)):
                continue
            out.append({"mode": lease["mode"], "for": lease.get("for"), "asked": start + lease["asked_s"],
                        "granted": start + lease["granted_s"], "released": start + lease["released_s"]})
    return out


def summary(records: list[dict]) -> dict:
    """The shares of the time line (module doc) from the first lease asked to the last released."""
    leases = intervals(records)
    if not leases:
        return {"lease_timeline": None}
    points = sorted({p for lease in leases for p in (lease["asked"], lease["granted"], lease["released"])})
    total = points[-1] - points[0]
    shares = {"exclusive": 0.0, "drain": 0.0, "shared": 0.0, "idle": 0.0}
    shared_weighted = 0.0  # seconds x shared leases held, where no timing held the device
    for a, b in zip(points, points[1:]):
        mid = (a + b) / 2
        holders = [lease["mode"] for lease in leases if lease["granted"] <= mid < lease["released"]]
        held = set(holders)
        timing_waits = any(lease["mode"] == "exclusive" and lease["asked"] <= mid < lease["granted"]
                           for lease in leases)
        if "exclusive" in held:
            shares["exclusive"] += b - a
        elif "shared" in held:
            shares["drain" if timing_waits else "shared"] += b - a
            shared_weighted += holders.count("shared") * (b - a)
        else:
            shares["idle"] += b - a
    exclusive = sorted((lease for lease in leases if lease["mode"] == "exclusive"), key=lambda x: x["granted"])
    shared = [lease for lease in leases if lease["mode"] == "shared"]
    # A batch ends where a shared lease was granted between one timing's end and the next's start.
    ends = [i for i in range(1, len(exclusive))
            if any(exclusive[i - 1]["released"] <= s["granted"] < exclusive[i]["granted"] for s in shared)]
    bounds = [0, *ends, len(exclusive)] if exclusive else []
    batches = [b - a for a, b in zip(bounds, bounds[1:])]
    holds = [lease["released"] - lease["granted"] for lease in exclusive]
    by_purpose: dict[str, list[float]] = {}
    for lease in leases:
        by_purpose.setdefault(str(lease["for"]), []).append(lease["released"] - lease["granted"])
    return {"lease_timeline": {
        "seconds": total,
        **{f"{k}_share": v / total if total > 0 else None for k, v in shares.items()},
        "exclusive_holds": len(holds),
        "exclusive_hold_mean_s": statistics.mean(holds) if holds else None,
        "batches": len(batches),
        "batch_size_mean": statistics.mean(batches) if batches else None,
        "shared_overlap": shared_weighted / (shares["drain"] + shares["shared"])
        if shares["drain"] + shares["shared"] > 0 else None,
        "held_seconds_per_timing": (total - shares["idle"]) / len(holds) if holds else None,
        "hold_median_s": {k: statistics.median(v) for k, v in sorted(by_purpose.items())},
        # Held in all, by purpose: a run whose profile_baselines is here re-measured baselines, whose
        # exclusive time the arm compared with it did not spend (docs/benchmarks.md).
        "held_s": {k: sum(v) for k, v in sorted(by_purpose.items())},
    }}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=Path, help="a JSON-lines file of judgements (JudgeResults or bench records)")
    args = ap.parse_args()
    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    print(json.dumps(summary(records), indent=2))


if __name__ == "__main__":
    main()
