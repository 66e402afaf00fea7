#!/usr/bin/env python3
"""server_throughput.py — issue 19's row "8 concurrent sessions judging through serve reach the same
judged-per-GPU-hour as `cuda-agent bench` at concurrency 8 (±5%)": judged candidates per hour through
`cuda-agent serve` with N concurrent clients, against `cuda-agent bench --jobs N` over the same
candidates, on the same machine in the same run.

Each repeat makes --count distinct tasks (copies of the --pairs' tasks with a comment of their own,
so every judgement computes its reference as a fresh task would) and judges each copy's candidate
twice:
  serve  `cuda-agent serve --device D --judge-workers N` on a free port; N client threads take
         candidates from one list. --mode session (the default, as the row says "sessions"): each
         candidate is a session — open, Write its files, grade, close — so the rate includes what a
         session costs around its grade; --mode evaluate: one POST /v1/evaluate per candidate (the
         single-turn path). A 429 is retried after its Retry-After (counted).
  bench  `cuda-agent bench SUITE --solver solutions:DIR --jobs N` over the same copies.
The order of the two alternates between repeats. Before the first repeat each distinct candidate is
judged once with `cuda-agent judge` (not counted) so both start with the build cache warm. The rate
is judged candidates ÷ wall time (first request to last answer; bench: the process's whole run),
per GPU: ÷ --gpus (default: the GPUs nvidia-smi lists for cuda, 1 for cpu).

    python3 bench/server_throughput.py --device cpu --threads 2 --count 4 --repeats 1 --out /tmp/st
    python3 bench/server_throughput.py --device cuda --threads 8 --count 16 --out $OUT/server-throughput

Writes OUT/server_throughput.json (every run, the settings, the summary) and OUT/server_throughput.md
(the markdown row), and prints the row. Judge flags: --judge-args (default --baselines none: no
eager/compile timing of each copy, which would cost more than the candidate's own judgement; both
paths use the same flags).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
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
DEFAULT_PAIRS = {
    "cuda": [f"examples/{t}/model.py=examples/{t}/candidates/cuda_correct"
             for t in ("relu_scale", "linear_gelu", "rowwise_softmax")],
    "cpu": [f"examples/{t}/model.py=examples/{t}/candidates/cpu_correct"
            for t in ("relu_scale", "linear_gelu", "rowwise_softmax")],
}
DEFAULT_JUDGE_ARGS = {"cuda": "--baselines none", "cpu": "--baselines none --checks 2 --warmup 1 --iters 3"}


def child_env() -> dict:
    """This environment without CUDA_AGENT_* flags (a CUDA_AGENT_REDIS or _TOKEN would change what is
    measured); the harness home, the cache folder and the binary stay."""
    keep = {"CUDA_AGENT_HOME", "CUDA_AGENT_CACHE_DIR", "CUDA_AGENT_BIN"}
    return {k: v for k, v in os.environ.items() if not k.startswith("CUDA_AGENT_") or k in keep}


def files_of(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def make_copies(pairs: list[tuple[Path, Path]], count: int, root: Path, tag: str) -> list[tuple[Path, Path]]:
    """`count` distinct tasks, round-robin over the pairs, as a suite folder (root/suite/NAME.py) with a
    solutions folder that mirrors it (root/solutions/NAME/); [(task file, candidate folder)]."""
    (root / "suite").mkdir(parents=True)
    (root / "solutions").mkdir()
    copies = []
    for i in range(count):
        task, candidate = pairs[i % len(pairs)]
        name = f"{task.parent.name}_{tag}_{i:03d}"
        task_file = root / "suite" / f"{name}.py"
        task_file.write_text(task.read_text() + f"\n# server_throughput copy {tag} {i}\n")
        shutil.copytree(candidate, root / "solutions" / name)
        copies.append((task_file, root / "solutions" / name))
    return copies


class Client:
    """One client thread's connection to serve; reconnects once on a dropped kept-alive connection."""

    def __init__(self, port: int):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        self.retries_429 = 0

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        data = json.dumps(body) if body is not None else None
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data,
                                  headers={"Content-Type": "application/json"} if data else {})
                resp = self.conn.getresponse()
                text = resp.read().decode()
                break
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=3600)
                if attempt == 1:
                    raise
        answer = json.loads(text) if text else {}
        if resp.status == 429:
            self.retries_429 += 1
            time.sleep(float(resp.getheader("Retry-After") or 1))
            return self.call(method, path, body)
        return resp.status, answer

    def ok(self, method: str, path: str, body=None, status=200) -> dict:
        code, answer = self.call(method, path, body)
        if code != status:
            raise RuntimeError(f"{method} {path}: {code} {json.dumps(answer)[:500]}")
        return answer


def judge_by_session(client: Client, task: Path, files: dict[str, str], device: str) -> dict:
    opened = client.ok("POST", "/v1/sessions", {"task": str(task), "device": device}, status=201)
    sid = opened["session_id"]
    for i, (name, content) in enumerate(files.items()):
        answer = client.ok("POST", f"/v1/sessions/{sid}/calls",
                           {"call_id": f"w{i}", "tool": "Write", "arguments": {"file_path": name, "content": content}})
        if answer["observation"]["is_error"]:
            raise RuntimeError(f"Write {name}: {answer['observation']['text'][:300]}")
    grade = client.ok("POST", f"/v1/sessions/{sid}/grade", {})
    client.ok("DELETE", f"/v1/sessions/{sid}")
    return grade["result"]


def judge_by_evaluate(client: Client, task: Path, files: dict[str, str], device: str) -> dict:
    return client.ok("POST", "/v1/evaluate", {"task": str(task), "files": files, "device": device})["result"]


def start_serve(args, state_dir: Path, log: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [args.binary, "serve", "--port", "0", "--device", args.device, "--state-dir", str(state_dir),
         "--judge-workers", str(args.judge_workers or args.threads),
         "--queue-per-device", str(2 * args.threads), "--max-sessions", str(args.threads + 8),
         "--shutdown-grace", "5",
         *args.judge_args.split()],
        stdout=subprocess.PIPE, stderr=open(log, "a"), text=True, env=child_env(), cwd=REPO)
    line = proc.stdout.readline()
    match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not match:
        proc.kill()
        sys.exit(f"serve did not start: {line!r} (see {log})")
    return proc, int(match.group(1))


def run_serve(args, copies: list[tuple[Path, Path]], state_dir: Path, log: Path) -> dict:
    proc, port = start_serve(args, state_dir, log)
    todo = list(copies)
    lock = threading.Lock()
    results, errors, retries = [], [], []
    judge = judge_by_session if args.mode == "session" else judge_by_evaluate

    def client_thread():
        client = Client(port)
        while True:
            with lock:
                if not todo:
                    break
                task, candidate = todo.pop(0)
            try:
                r = judge(client, task, files_of(candidate), args.device)
                with lock:
                    results.append(r)
            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                with lock:
                    errors.append(f"{task.name}: {e}")
        with lock:
            retries.append(client.retries_429)

    try:
        started = time.monotonic()
        threads = [threading.Thread(target=client_thread, daemon=True) for _ in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - started
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
    return summarize("serve", results, wall, args) | {"errors": errors, "retries_429": sum(retries),
                                                      "mode": args.mode, "clients": args.threads}


def run_bench(args, root: Path, log: Path) -> dict:
    started = time.monotonic()
    proc = subprocess.run(
        [args.binary, "bench", str(root / "suite"), "--solver", f"solutions:{root / 'solutions'}",
         "--device", args.device, "--jobs", str(args.threads), "--store", str(root / "bench.sqlite"),
         "--json", *args.judge_args.split()],
        capture_output=True, text=True, env=child_env(), cwd=REPO)
    wall = time.monotonic() - started
    with open(log, "a") as f:
        f.write(proc.stderr)
    if proc.returncode not in (0, 4) or not proc.stdout.strip():
        sys.exit(f"bench failed ({proc.returncode}): {proc.stderr[-2000:]}")
    report = json.loads(proc.stdout)
    tasks = [t for t in report["tasks"] if t["status"] != "missing"]
    results = [{"outcome": "verdict" if t["status"] in ("correct", "failed") else t["status"],
                "correct": t["status"] == "correct",
                "stage_seconds": {"total": t.get("judge_seconds") or 0}} for t in tasks]
    return summarize("bench", results, wall, args) | {"jobs": args.threads, "counts": report["counts"]}


def summarize(path: str, results: list[dict], wall: float, args) -> dict:
    judged = len(results)
    # The judge's own time per candidate (JudgeResult.stage_seconds.total): where a difference in
    # rate comes from the judgements themselves rather than from what is around them.
    judge_s = [r.get("stage_seconds", {}).get("total") or 0 for r in results]
    return {"path": path, "judged": judged, "correct": sum(1 for r in results if r.get("correct")),
            "judge_s_median": statistics.median(judge_s) if judge_s else None,
            "not_verdicts": sum(1 for r in results if r.get("outcome") != "verdict"), "wall_s": wall,
            "judged_per_hour": 3600 * judged / wall if wall > 0 else 0,
            "judged_per_gpu_hour": 3600 * judged / wall / args.gpus if wall > 0 else 0}


def visible_gpus() -> int:
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        return len([d for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()])
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
        return max(1, len([line for line in out.splitlines() if line.startswith("GPU ")]))
    except (OSError, subprocess.TimeoutExpired):
        return 1


def spread(values: list[float], fmt: str) -> str:
    if not values:
        return "n/a"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))} – {fmt.format(max(values))})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.environ.get("CUDA_AGENT_BIN") or str(REPO / "build" / "cuda-agent"))
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--threads", type=int, default=8, help="serve's concurrent clients and bench's --jobs")
    ap.add_argument("--judge-workers", type=int, default=0,
                    help="serve's --judge-workers (default: --threads, bench's concurrency)")
    ap.add_argument("--count", type=int, default=24, help="candidates judged per run (distinct task copies)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--mode", choices=["session", "evaluate"], default="session")
    ap.add_argument("--pairs", default="",
                    help="TASK=CANDIDATE_DIR,... (default: the examples' cuda_correct or cpu_correct)")
    ap.add_argument("--judge-args", default=None, help="judge flags of both paths (see above)")
    ap.add_argument("--gpus", type=int, default=0, help="GPUs the judgements share (default: see above)")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    # A time limit's SIGTERM ends the run through the finally blocks: serve stopped, bench killed,
    # the runs so far in the JSON.
    def on_sigterm(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the clean-up is not interrupted
        sys.exit("server_throughput: SIGTERM (time limit?): stopping")

    signal.signal(signal.SIGTERM, on_sigterm)
    if args.threads < 1 or args.count < 1 or args.repeats < 1:
        ap.error("--threads, --count and --repeats must be at least 1")
    if not (Path(args.binary).is_file() and os.access(args.binary, os.X_OK)):
        ap.error(f"no cuda-agent binary at {args.binary} (--binary or $CUDA_AGENT_BIN)")
    if args.judge_args is None:
        args.judge_args = DEFAULT_JUDGE_ARGS[args.device]
    if not args.gpus:
        args.gpus = visible_gpus() if args.device == "cuda" else 1
    pairs = []
    for item in (args.pairs.split(",") if args.pairs else DEFAULT_PAIRS[args.device]):
        task, _, candidate = item.partition("=")
        task_path, candidate_path = (REPO / task).resolve(), (REPO / candidate).resolve()
        if not task_path.is_file() or not candidate_path.is_dir():
            ap.error(f"--pairs: {item!r} is not TASK_FILE=CANDIDATE_DIR (both must exist)")
        pairs.append((task_path, candidate_path))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "server_throughput.log"
    machine = {"host": platform.node(), "cpus": os.cpu_count(), "gpus": args.gpus,
               "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    settings = {k: v for k, v in vars(args).items() if k not in ("out",)}
    report = {"machine": machine, "settings": settings, "runs": []}

    def save():
        (out / "server_throughput.json").write_text(json.dumps(report, indent=2))

    with tempfile.TemporaryDirectory(prefix="server-throughput-", dir="/tmp") as tmp:
        tmp = Path(tmp)
        if not args.no_warmup:
            # The build cache and the fork server, not counted: each distinct candidate once, at once.
            warm = [(task, subprocess.Popen([args.binary, "judge", "--task", str(task), "--candidate", str(candidate),
                                             "--device", args.device, "--json", *args.judge_args.split()],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                            env=child_env(), cwd=REPO))
                    for task, candidate in pairs]
            for task, proc in warm:
                out_text, _ = proc.communicate()
                verdict = json.loads(out_text) if out_text.strip() else {}
                print(f"warm-up {task.parent.name}: exit {proc.returncode}, reward {verdict.get('reward')}",
                      flush=True)
        for r in range(args.repeats):
            root = tmp / f"r{r}"
            copies = make_copies(pairs, args.count, root, f"r{r}")
            order = ["serve", "bench"] if r % 2 == 0 else ["bench", "serve"]
            for path in order:
                if path == "serve":
                    run = run_serve(args, copies, root / "state", log)
                else:
                    run = run_bench(args, root, log)
                run["repeat"] = r
                report["runs"].append(run)
                save()
                print(f"repeat {r} {path}: {run['judged']} judged ({run['correct']} correct, "
                      f"{run['not_verdicts']} not verdicts) in {run['wall_s']:.1f} s: "
                      f"{run['judged_per_hour']:,.0f} per hour, judge's own time p50 "
                      f"{run['judge_s_median'] or 0:.1f} s"
                      + (f", {run['retries_429']} × 429" if path == "serve" else ""), flush=True)
            shutil.rmtree(root, ignore_errors=True)

    serve_rates = [r["judged_per_gpu_hour"] for r in report["runs"] if r["path"] == "serve"]
    bench_rates = [r["judged_per_gpu_hour"] for r in report["runs"] if r["path"] == "bench"]
    ratios = [s / b for s, b in zip(serve_rates, bench_rates) if b > 0]
    problems = [f"{r['path']} repeat {r['repeat']}: {r['judged']} of {args.count} judged, "
                f"{r['not_verdicts']} not verdicts" + (f", errors: {r['errors'][:3]}" if r.get("errors") else "")
                for r in report["runs"]
                if r["judged"] != args.count or r["not_verdicts"] or r.get("errors")]
    report["summary"] = {
        "serve_judged_per_gpu_hour": {"median": statistics.median(serve_rates), "min": min(serve_rates),
                                      "max": max(serve_rates)},
        "bench_judged_per_gpu_hour": {"median": statistics.median(bench_rates), "min": min(bench_rates),
                                      "max": max(bench_rates)},
        "ratio_serve_over_bench": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
        if ratios else None,
        "within_5_percent": bool(ratios) and abs(statistics.median(ratios) - 1) <= 0.05,
        "problems": problems,
    }
    save()
    per = "GPU-hour" if args.device == "cuda" else "hour (CPU)"
    row = ("| device | clients = bench --jobs | candidates per run × repeats | serve "
           f"({args.mode}) judged per {per} | bench judged per {per} | serve ÷ bench |\n"
           "|---|---:|---:|---:|---:|---:|\n"
           f"| {args.device} ×{args.gpus} | {args.threads} | {args.count} × {args.repeats} | "
           f"{spread(serve_rates, '{:,.0f}')} | {spread(bench_rates, '{:,.0f}')} | {spread(ratios, '{:.3f}')} |\n")
    header = (f"{machine['host']}, {machine['cpus']} CPUs, {args.gpus} GPU(s) ({args.device}), {machine['date']}; "
              f"judge flags: {args.judge_args}; median (min – max) over {args.repeats} repeats\n\n")
    notes = "".join(f"- problem: {p}\n" for p in problems)
    (out / "server_throughput.md").write_text(header + row + notes)
    print(header + row + notes, end="")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
