#!/usr/bin/env python3
"""The Redis queue's numbers (issue 20): its overhead per job, and judged candidates per hour as CPU
workers are added. Starts its own redis-server ($CUDA_AGENT_REDIS_SERVER, else the one on PATH) on
a free loopback port (AOF on, fsync every second, as docs/scaling.md deploys it) and its own
workers; stops them at the end.

  overhead  one worker, the no-op benchmark mode (`cuda-agent queue bench --noop`): workers answer
            each job without judging it, so submit → result is the queue alone (XADD, XREADGROUP,
            SET NX, the notification, XACK). --noop-jobs jobs one at a time, --repeats times.
  scaling   for each N of --workers: N `cuda-agent worker --device cpu` processes (one consumer
            each, --build-jobs cores/N, a shared cache folder as on one host), then `queue bench`
            with max(--jobs, 4N) real judgements of distinct candidates (each one compiled), 2N in
            flight; --repeats times. One judgement per worker set first fills the caches (not
            counted).
  capacity  --capacity-workers W `cuda-agent worker --device cpu` processes of --capacity-consumers C
            consumers each (standing in for W hosts' workers), no-op jobs, --capacity-inflight in
            flight, --capacity-jobs per run, --repeats times: the queue's own throughput in jobs per
            second, which bounds how many worker hosts one Redis serves (all of it on this machine's
            cores, Redis and the submitter included: a lower bound).

    python3 bench/dist_scaling.py --cores 2 --workers 1,2 --repeats 3 --out bench/results/DATE-dist
    python3 bench/dist_scaling.py --cores 16 --workers 1,2,4,8 --repeats 3 --out bench/results/DATE-dist-16
    python3 bench/dist_scaling.py --phases capacity --capacity-workers 4 --capacity-consumers 8 \
        --capacity-inflight 64 --capacity-jobs 4000 --repeats 3 --out bench/results/DATE-dist-capacity

Writes OUT/overhead.jsonl, OUT/scaling.jsonl, OUT/capacity.jsonl (one `queue bench --json` record per
run, plus the run's settings) and prints a markdown summary (median and min–max over the repeats).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STARTED: list[subprocess.Popen] = []  # every worker process, stopped at the end whatever happens


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_server() -> str | None:
    """$CUDA_AGENT_REDIS_SERVER (scripts/bundle.sh's dist/redis/redis-server on the GPU machine), else
    the redis-server on PATH."""
    return os.environ.get("CUDA_AGENT_REDIS_SERVER") or shutil.which("redis-server")


def ping(port: int) -> bool:
    """PING in RESP over a socket (no redis-cli needed)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
                             "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
                             "--logfile", str(folder / "redis.log")])
    for _ in range(300):
        if ping(port):
            return proc, f"redis://127.0.0.1:{port}/0"
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"redis-server did not start (see {folder / 'redis.log'})")


def start_workers(binary: Path, url: str, n: int, build_jobs: int, cache: Path, log: Path,
                  consumers: int = 1) -> list[subprocess.Popen]:
    procs = []
    for i in range(n):
        procs.append(subprocess.Popen(
            [str(binary), "worker", "--redis", url, "--device", "cpu", "--consumers", str(consumers),
             "--name", f"bench{i}",
             "--build-jobs", str(build_jobs), "--cache-dir", str(cache)],
            stdout=subprocess.DEVNULL, stderr=open(log, "a")))
        STARTED.append(procs[-1])
    return procs


def stop(procs: list[subprocess.Popen], grace: float = 120) -> None:
    """SIGTERM (a worker finishes the job in hand), SIGKILL after `grace` seconds."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def queue_bench(binary: Path, url: str, args: argparse.Namespace, count: int, concurrency: int,
                noop: bool) -> dict:
    cmd = [str(binary), "queue", "bench", "--redis", url, "--task", args.task, "--candidate", args.candidate,
           "--device", "cpu", "--count", str(count), "--concurrency", str(concurrency), "--json",
           *args.judge_args.split()]
    if noop:
        cmd.append("--noop")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        sys.exit(f"queue bench failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def spread(values: list[float], fmt: str) -> str:
    return (f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))} – {fmt.format(max(values))})"
            if values else "n/a")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(REPO / "build" / "cuda-agent"))
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                    help="CPU cores of this machine that judgements may use (build jobs are split among workers)")
    ap.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2,4,8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=8, help="judged jobs per run (at least 4 per worker)")
    ap.add_argument("--noop-jobs", type=int, default=1000)
    ap.add_argument("--task", default="examples/relu_scale/model.py")
    ap.add_argument("--candidate", default="examples/relu_scale/candidates/cpu_correct")
    ap.add_argument("--judge-args", default="--warmup 2 --iters 10 --baseline-drift 100",
                    help="judge flags of every judged job (the defaults keep CPU timing short; a CPU's "
                         "calibration on a shared machine moves by far more than 10%%, which would "
                         "re-measure the baselines in every judgement)")
    ap.add_argument("--capacity-workers", type=int, default=4)
    ap.add_argument("--capacity-consumers", type=int, default=8)
    ap.add_argument("--capacity-inflight", type=int, default=64)
    ap.add_argument("--capacity-jobs", type=int, default=4000)
    ap.add_argument("--phases", default="overhead,scaling", help="any of overhead,scaling,capacity")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    def on_sigterm(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the clean-up below is not interrupted
        sys.exit("dist_scaling: SIGTERM (time limit?): stopping")

    signal.signal(signal.SIGTERM, on_sigterm)
    if redis_server() is None:
        sys.exit("redis-server is required (scripts/setup.sh installs it; on the GPU machine set "
                 "CUDA_AGENT_REDIS_SERVER=dist/redis/redis-server)")
    binary = Path(args.binary)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    machine = {"host": platform.node(), "cpus": os.cpu_count(), "cores_used": args.cores,
               "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    phases = args.phases.split(",")
    summary = []
    with tempfile.TemporaryDirectory(prefix="dist-bench-") as tmp:
        tmp = Path(tmp)
        redis, url = start_redis(tmp)
        cache = tmp / "cache"
        log = out / "workers.log"
        try:
            if "overhead" in phases:
                workers = start_workers(binary, url, 1, args.cores, cache, log)
                time.sleep(1)
                p50s, p90s = [], []
                for r in range(args.repeats):
                    rec = queue_bench(binary, url, args, args.noop_jobs, 1, noop=True)
                    rec.update(machine=machine, repeat=r)
                    with open(out / "overhead.jsonl", "a") as f:
                        f.write(json.dumps(rec) + "\n")
                    p50s.append(rec["latency_ms"]["p50"])
                    p90s.append(rec["latency_ms"]["p90"])
                stop(workers)
                summary.append(f"queue overhead (no-op jobs, {args.noop_jobs} × {args.repeats}): p50 "
                               f"{spread(p50s, '{:.2f}')} ms, p90 {spread(p90s, '{:.2f}')} ms")
            if "scaling" in phases:
                summary.append("")
                summary.append("| CPU workers | build jobs each | judged per run | judged per hour | "
                               "latency p50 (s) |")
                summary.append("|---:|---:|---:|---:|---:|")
                for n in [int(x) for x in args.workers.split(",")]:
                    build_jobs = max(1, args.cores // n)
                    workers = start_workers(binary, url, n, build_jobs, cache, log)
                    queue_bench(binary, url, args, n, n, noop=False)  # caches: not counted
                    rates, p50s = [], []
                    count = max(args.jobs, 4 * n)
                    for r in range(args.repeats):
                        rec = queue_bench(binary, url, args, count, 2 * n, noop=False)
                        rec.update(machine=machine, repeat=r, workers=n, build_jobs=build_jobs)
                        with open(out / "scaling.jsonl", "a") as f:
                            f.write(json.dumps(rec) + "\n")
                        rates.append(rec["jobs_per_hour"])
                        p50s.append(rec["latency_ms"]["p50"] / 1000)
                    stop(workers)
                    summary.append(f"| {n} | {build_jobs} | {count} | {spread(rates, '{:,.0f}')} | "
                                   f"{spread(p50s, '{:.1f}')} |")
            if "capacity" in phases:
                workers = start_workers(binary, url, args.capacity_workers, 1, cache, log,
                                        consumers=args.capacity_consumers)
                time.sleep(1)
                rates, p50s = [], []
                for r in range(args.repeats):
                    rec = queue_bench(binary, url, args, args.capacity_jobs, args.capacity_inflight, noop=True)
                    rec.update(machine=machine, repeat=r, workers=args.capacity_workers,
                               consumers=args.capacity_consumers)
                    with open(out / "capacity.jsonl", "a") as f:
                        f.write(json.dumps(rec) + "\n")
                    rates.append(rec["jobs_per_hour"] / 3600)
                    p50s.append(rec["latency_ms"]["p50"])
                stop(workers)
                summary.append(f"queue capacity ({args.capacity_workers} workers × {args.capacity_consumers} "
                               f"consumers, {args.capacity_inflight} no-op jobs in flight, "
                               f"{args.capacity_jobs} × {args.repeats}): {spread(rates, '{:,.0f}')} jobs/s, "
                               f"submit → result p50 {spread(p50s, '{:.2f}')} ms")
        finally:
            # Also after a SIGTERM (a time limit): the workers and Redis stop, what was measured is
            # printed.
            stop(STARTED, grace=5)  # only an interrupted run has workers left: no job to finish
            redis.terminate()
            redis.wait()
            print(f"{machine['host']}, {machine['cpus']} CPUs ({args.cores} used), {machine['date']}")
            print("\n".join(summary), flush=True)


if __name__ == "__main__":
    main()
