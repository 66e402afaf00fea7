#!/usr/bin/env python3
"""server_overhead.py — what `cuda-agent serve` adds per tool call, on loopback (docs/benchmarks.md).

1. latency: S sessions at once (default 64), each on its own kept-alive connection, call a cheap tool
   (TodoWrite: no sandbox, no file) in a loop; p50/p99/max of the round trip over all calls, and the
   same for one session alone (no queueing: the pure overhead of HTTP + routing + the SQLite write).
2. hold: H sessions open at once (default 256), then each makes calls concurrently; every answer
   must be 200 (429 allowed, counted); any other status or a connection error is a failure.
3. memory: the server's RSS before and after opening the H sessions, per idle session.

    python3 bench/server_overhead.py [--bin build/cuda-agent] [--sessions 64] [--hold 256]
                                     [--calls 200] [--repeat 3] [--json OUT.json]

Clients run in several processes (threads within each) so that the GIL does not serialise them.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TASK = REPO / "examples" / "relu_scale" / "model.py"
TODO = {"todos": [{"content": "write the kernel", "status": "in_progress"}]}


def request(conn, method, path, body=None):
    data = json.dumps(body) if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    resp = conn.getresponse()
    return resp.status, resp.read()


def timed_call(conn, sid, call_id):
    """One TodoWrite call: (status, round-trip seconds, the server's own milliseconds)."""
    body = json.dumps({"call_id": call_id, "tool": "TodoWrite", "arguments": TODO})
    t0 = time.perf_counter()
    conn.request("POST", f"/v1/sessions/{sid}/calls", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    elapsed = time.perf_counter() - t0
    match = re.search(r"dur=([\d.]+)", resp.getheader("Server-Timing") or "")
    return resp.status, elapsed, float(match.group(1)) if match else None


def open_sessions(port, count):
    ids = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(count):
        status, body = request(conn, "POST", "/v1/sessions", {"task": str(TASK), "device": "cpu"})
        if status != 201:
            raise RuntimeError(f"open: {status} {body[:200]!r}")
        ids.append(json.loads(body)["session_id"])
    conn.close()
    return ids


def caller(port, session_ids, calls, start_at, out_queue):
    """One client process: a thread per session, each with its own connection."""
    results = []
    lock = threading.Lock()

    def run(sid):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        latencies, server_ms, statuses, errors, reconnects = [], [], {}, 0, 0
        for i in range(3):  # warm-up: connection, first rows
            timed_call(conn, sid, f"w{i}")
        while time.time() < start_at:
            time.sleep(0.001)
        for i in range(calls):
            for attempt in range(2):
                try:
                    status, elapsed, ms = timed_call(conn, sid, f"c{i}")
                    break
                except (OSError, http.client.HTTPException):
                    # A kept-alive connection the server closed while idle: reconnect and send the
                    # same call_id again (idempotent), as a trainer's client would.
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    reconnects += 1
            else:
                errors += 1
                continue
            latencies.append(elapsed)
            if ms is not None:
                server_ms.append(ms)
            statuses[status] = statuses.get(status, 0) + 1
        conn.close()
        with lock:
            results.append((latencies, server_ms, statuses, errors, reconnects))

    threads = [threading.Thread(target=run, args=(sid,)) for sid in session_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out_queue.put(results)


def drive(port, session_ids, calls, processes):
    """All sessions call at once; returns (latencies, statuses, errors, wall seconds)."""
    chunks = [session_ids[i::processes] for i in range(processes)]
    chunks = [c for c in chunks if c]
    queue = multiprocessing.Queue()
    start_at = time.time() + 1.0 + 0.05 * len(session_ids)
    procs = [multiprocessing.Process(target=caller, args=(port, c, calls, start_at, queue)) for c in chunks]
    for p in procs:
        p.start()
    gathered = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    wall = time.time() - start_at
    latencies, server_ms, statuses, errors, reconnects = [], [], {}, 0, 0
    for results in gathered:
        for lat, ms, st, err, rec in results:
            latencies.extend(lat)
            server_ms.extend(ms)
            errors += err
            reconnects += rec
            for k, v in st.items():
                statuses[k] = statuses.get(k, 0) + v
    return latencies, server_ms, statuses, errors, reconnects, wall


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def rss_kib(pid):
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1))


def start_server(binary, state_dir, *flags):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_AGENT_")}
    proc = subprocess.Popen([binary, "serve", "--port", "0", "--device", "cpu", "--state-dir", state_dir,
                             *flags], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"serve printed {line!r}")
    return proc, int(match.group(1))


def summary_ms(latencies, server_ms):
    return {"p50_ms": 1000 * percentile(latencies, 50), "p99_ms": 1000 * percentile(latencies, 99),
            "max_ms": 1000 * max(latencies), "calls": len(latencies),
            "server_p50_ms": percentile(server_ms, 50), "server_p99_ms": percentile(server_ms, 99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "cuda-agent"))
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--hold", type=int, default=256)
    ap.add_argument("--calls", type=int, default=200, help="calls per session in the latency run")
    ap.add_argument("--hold-calls", type=int, default=20, help="calls per session in the hold run")
    ap.add_argument("--processes", type=int, default=8, help="client processes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    report = {"machine": {"cpus": os.cpu_count(), "uname": " ".join(os.uname())},
              "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(sys.argv)}
    state = tempfile.mkdtemp(prefix="serve-bench-", dir="/tmp")
    try:
        proc, port = start_server(args.bin, state, "--max-sessions", str(max(args.hold, args.sessions)),
                                  "--turn-limit", "1000000")
        try:
            single_runs, concurrent_runs = [], []
            for r in range(args.repeat):
                ids = open_sessions(port, 1)
                lat, ms, st, err, rec, wall = drive(port, ids, args.calls * 4, 1)
                single_runs.append({**summary_ms(lat, ms), "statuses": st, "errors": err})
                ids = open_sessions(port, args.sessions)
                lat, ms, st, err, rec, wall = drive(port, ids, args.calls, args.processes)
                concurrent_runs.append({**summary_ms(lat, ms), "statuses": st, "errors": err,
                                        "reconnects": rec, "calls_per_s": len(lat) / wall})
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                for sid in ids:
                    request(conn, "DELETE", f"/v1/sessions/{sid}")
                conn.close()
                one, many = single_runs[-1], concurrent_runs[-1]
                print(f"run {r + 1}: 1 session p50 {one['p50_ms']:.2f} ms p99 {one['p99_ms']:.2f} ms "
                      f"(server {one['server_p50_ms']:.3f}/{one['server_p99_ms']:.3f} ms); "
                      f"{args.sessions} sessions p50 {many['p50_ms']:.2f} ms p99 {many['p99_ms']:.2f} ms "
                      f"(server {many['server_p50_ms']:.3f}/{many['server_p99_ms']:.3f} ms, "
                      f"{many['calls_per_s']:.0f} calls/s) {st}", flush=True)
            report["single"] = single_runs
            report["concurrent"] = concurrent_runs
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)

        # Hold and memory on a fresh server (its RSS not grown by the latency runs).
        shutil.rmtree(state)
        os.makedirs(state)
        proc, port = start_server(args.bin, state, "--max-sessions", str(args.hold), "--turn-limit", "1000000")
        try:
            warm = open_sessions(port, 2)  # the first sessions load the code paths; not counted
            time.sleep(0.5)
            before = rss_kib(proc.pid)
            ids = open_sessions(port, args.hold - 2)
            time.sleep(0.5)
            after = rss_kib(proc.pid)
            report["memory"] = {"sessions": len(ids), "rss_before_kib": before, "rss_after_kib": after,
                                "kib_per_session": (after - before) / len(ids)}
            workspace = Path(state) / "sessions" / ids[0] / "workspace"
            report["memory"]["workspace_kib"] = sum(f.stat().st_size for f in workspace.rglob("*")
                                                    if f.is_file()) / 1024
            print(f"memory: {report['memory']}", flush=True)
            all_ids = warm + ids
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            status, body = request(conn, "GET", "/v1/health")
            conn.close()
            open_now = json.loads(body)["sessions_open"]
            lat, ms, st, err, rec, wall = drive(port, all_ids, args.hold_calls, args.processes)
            bad = {k: v for k, v in st.items() if k not in (200, 429)}
            report["hold"] = {"sessions_open": open_now, **summary_ms(lat, ms), "statuses": st, "errors": err,
                              "reconnects": rec, "ok": err == 0 and not bad}
            print(f"hold: {report['hold']}", flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            report["exit_status"] = proc.wait(timeout=300)
    finally:
        shutil.rmtree(state, ignore_errors=True)

    def spread(runs, key):
        values = [r[key] for r in runs]
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    report["summary"] = {
        "single_p50_ms": spread(report["single"], "p50_ms"),
        "single_p99_ms": spread(report["single"], "p99_ms"),
        "concurrent_p50_ms": spread(report["concurrent"], "p50_ms"),
        "concurrent_p99_ms": spread(report["concurrent"], "p99_ms"),
        "concurrent_calls_per_s": spread(report["concurrent"], "calls_per_s"),
        "single_server_p50_ms": spread(report["single"], "server_p50_ms"),
        "concurrent_server_p50_ms": spread(report["concurrent"], "server_p50_ms"),
        "concurrent_server_p99_ms": spread(report["concurrent"], "server_p99_ms"),
    }
    print(json.dumps(report["summary"], indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0 if report["hold"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
