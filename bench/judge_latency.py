#!/usr/bin/env python3
"""The fast judge's numbers (issue 5), measured against the published pipeline in the same run.

Phases (each appends JSON lines to OUT/<phase>.jsonl and skips what is already there, so a run that
hit a time limit goes on where it stopped; `report` reads whatever exists):

  warmup      judge every case once, --warmup-jobs at a time: fills the object cache, stores the
              baselines, starts the precompiled header (waited for at the end)
  ours        the agent's step: the first kernel file gets a fresh comment (so it is compiled again,
              as after an edit), then one `cuda-agent judge` — wall time from outside, per case ×
              --repeats, one at a time on a quiet machine
  reference   bench/reference_pipeline.py on the same cases: extension build by torch's loader,
              fresh interpreter per command, torch.compile in every profile
  rebuild     `cuda-agent build`: unchanged candidate, after editing the .cu, after editing the
              binding .cpp (--repeats each)
  plain       relu_scale with a plain binding (plain_binding.h, no torch headers) against the same
              kernel with a torch-style binding, alternately: rebuild after editing the binding, and
              the judged candidate time (the bindings' host overhead), --repeats each
  cv          --cv-runs judgements of the same unchanged candidate: spread of its speedups
  throughput  judged candidates per hour at 1, 2, 4, 8 concurrent requests (each a fresh edit:
              builds overlap, timings are exclusive through the device lease), with CPU and
              GPU utilisation sampled meanwhile and the device's lease time line
              (bench/lease_timeline.py); each judgement's reward, reason, stage times, jobs,
              leases and calibration go to OUT/throughput_judgements.jsonl
  report      OUT/summary.md and OUT/summary.json from the phases' records

Cases: the bundled examples' `<device>_correct` candidates plus, with --suite on a GPU, the
KernelBench candidates that bench/candidates/kernelbench.py writes (mirrored: level2/76_Gemm_Add_ReLU/
judged against --suite#level2/76_Gemm_Add_ReLU).

    python3 bench/judge_latency.py --device cuda --suite .gpu/kernelbench_all --out OUT \\
        --phases warmup,ours,rebuild,cv,reference,throughput,report
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "bench" / "candidates"))
import kernelbench as kernelbench_candidates  # noqa: E402
import lease_timeline  # noqa: E402
import reference_pipeline  # noqa: E402


def binary() -> str:
    return os.environ.get("CUDA_AGENT_BIN") or str(REPO / "build" / "cuda-agent")


def discover_cases(device: str, suite: Path | None, only: set[str], work: Path) -> list[dict]:
    cases = []
    for task_dir in sorted((REPO / "examples").iterdir()):
        cand = task_dir / "candidates" / f"{device}_correct"
        if cand.is_dir():
            cases.append({"name": f"examples/{task_dir.name}", "task": str(task_dir / "model.py"),
                          "task_file": str(task_dir / "model.py"), "candidate": str(cand)})
    root = work / "kernelbench-candidates"
    if suite is not None and device == "cuda":
        kernelbench_candidates.write(root, set())
        for level in sorted(root.iterdir()):
            for cand in sorted(p for p in level.iterdir() if (p / "model_new.py").exists()):
                task_file = suite / level.name / f"{cand.name}.py"
                if task_file.exists():
                    cases.append({"name": f"{level.name}/{cand.name}", "task": f"{suite}#{level.name}/{cand.name}",
                                  "task_file": str(task_file), "candidate": str(cand)})
    return [c for c in cases if not only or c["name"] in only]


def done(path: Path, key=lambda r: r.get("case")) -> set:
    if not path.exists():
        return set()
    return {key(json.loads(line)) for line in path.read_text().splitlines() if line.strip()}


def append(path: Path, record: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")


def workdir_copy(case: dict, root: Path) -> Path:
    """A private copy of the candidate that the benchmark may edit."""
    dest = root / case["name"].replace("/", "__")
    if not dest.exists():
        shutil.copytree(case["candidate"], dest)
    return dest


def edit_kernel(candidate: Path, suffix: str = ".cu") -> Path:
    """Appends a fresh comment to the first kernel file with `suffix`: new content, same program."""
    kernels = sorted((candidate / "kernels").rglob(f"*{suffix}"))
    if suffix == ".cu" and not kernels:
        kernels = sorted(p for p in (candidate / "kernels").rglob("*.cpp") if "_binding" not in p.name)
    target = kernels[0]
    with target.open("a") as f:
        f.write(f"\n// benchmark edit {uuid.uuid4().hex}\n")
    return target


def judge(case: dict, candidate: Path, device: str, extra: list[str], timeout: float = 900) -> dict:
    cmd = [binary(), "judge", "--task", case["task"], "--candidate", str(candidate), "--device", device,
           "--json", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result = {"reason": "no JSON: " + proc.stderr[-500:]}
    timing = result.get("timing") or {}
    return {"case": case["name"], "wall_s": wall, "exit_code": proc.returncode,
            "reward": result.get("reward"), "reason": (result.get("reason") or "")[:300],
            "stage_seconds": result.get("stage_seconds", {}), "build": {
                k: (result.get("build") or {}).get(k) for k in ("objects_compiled", "objects_cached",
                                                                "objects_clang", "clang_fallbacks",
                                                                "library_cached", "seconds", "steps")},
            "candidate_us": (timing.get("candidate") or {}).get("time_us"),
            # Where the candidate's timed loop spent its time (timing.time_calls_cuda's `loop`).
            "profiler_seconds": (timing.get("candidate") or {}).get("profiler_seconds"),
            "eager_us": (timing.get("eager") or {}).get("time_us"),
            "compile_us": (timing.get("compile") or {}).get("time_us"),
            "speedup_vs_eager": timing.get("speedup_vs_eager"),
            "speedup_vs_compile": timing.get("speedup_vs_compile"),
            "baseline_store": timing.get("baseline_store"), "calibration": timing.get("calibration"),
            "sandbox": (result.get("env") or {}).get("sandbox"),
            "jobs": sorted(result.get("jobs") or [], key=lambda j: j.get("start_s", 0)),
            "leases": result.get("leases") or [], "started_unix_s": result.get("started_unix_s")}


def wait_for_pch(cache_dir: Path, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        started = list((cache_dir / "pch").glob("*/started"))
        made = ("cuda_agent_pch.h.gch", "cuda_agent_pch.h.pch", "failed")  # g++'s, clang's, or given up
        if started and all(any((p.parent / name).exists() for name in made) for p in started):
            return True
        if not started:
            return False
        time.sleep(2)
    return False


def phase_warmup(args, cases, work: Path) -> None:
    out = args.out / "warmup.jsonl"
    todo = [c for c in cases if c["name"] not in done(out)]

    def one(case):
        record = judge(case, workdir_copy(case, work), args.device, args.judge_args)
        append(out, record)
        print(f"warmup {case['name']}: reward={record['reward']} {record['wall_s']:.1f}s "
              f"{record['reason'][:100]}", flush=True)

    with concurrent.futures.ThreadPoolExecutor(args.warmup_jobs) as pool:
        list(pool.map(one, todo))
    print("precompiled header ready:", wait_for_pch(args.cache_dir, 240), flush=True)


def phase_ours(args, cases, work: Path) -> None:
    out = args.out / "ours.jsonl"
    have = done(out, key=lambda r: (r["case"], r["repeat"]))
    for rep in range(args.repeats):
        for case in cases:
            if (case["name"], rep) in have:
                continue
            cand = workdir_copy(case, work)
            edit_kernel(cand)
            record = judge(case, cand, args.device, args.judge_args)
            record["repeat"] = rep
            append(out, record)
            print(f"ours {case['name']} #{rep}: {record['wall_s']:.2f}s reward={record['reward']} "
                  f"{json.dumps({k: round(v, 2) for k, v in record['stage_seconds'].items()})}", flush=True)


def phase_reference(args, cases, work: Path) -> None:
    out = args.out / "reference.jsonl"
    have = done(out)
    for case in cases:
        if case["name"] in have:
            continue
        record = reference_pipeline.run_once(Path(case["task_file"]), Path(case["candidate"]), args.device)
        record["case"] = case["name"]
        append(out, record)
        print(f"reference {case['name']}: step {record['step_s']:.1f}s "
              f"(compile {record.get('compile_s', 0):.1f}, verify {record.get('verify_s', 0):.1f}, "
              f"profile {record.get('profile_s', 0):.1f}) {record.get('error', '')}", flush=True)


def build_once(candidate: Path, device: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([binary(), "build", "--candidate", str(candidate), "--device", device, "--out",
                           str(candidate.parent / "bench_ext.so")], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"build failed: {proc.stderr[-500:]}")
    return time.perf_counter() - start


def phase_rebuild(args, cases, work: Path) -> None:
    out = args.out / "rebuild.jsonl"
    if done(out):
        return
    case = cases[0]
    cand = workdir_copy(case, work)
    build_once(cand, args.device)
    for rep in range(args.repeats):
        record = {"case": case["name"], "repeat": rep, "unchanged_s": build_once(cand, args.device)}
        edit_kernel(cand, ".cu" if args.device == "cuda" else ".cpp")
        record["kernel_edit_s"] = build_once(cand, args.device)
        binding = sorted((cand / "kernels").rglob("*_binding.cpp"))[0]
        with binding.open("a") as f:
            f.write(f"\n// benchmark edit {uuid.uuid4().hex}\n")
        record["binding_edit_s"] = build_once(cand, args.device)
        append(out, record)
        print("rebuild", json.dumps(record), flush=True)


def phase_plain(args, cases, work: Path) -> None:
    out = args.out / "plain.jsonl"
    have = done(out, key=lambda r: (r["style"], r["repeat"]))
    task_dir = REPO / "examples" / "relu_scale"
    case = {"name": "examples/relu_scale", "task": str(task_dir / "model.py")}
    candidates = {}
    for style, folder in (("torch", f"{args.device}_correct"), ("plain", f"{args.device}_plain_binding")):
        candidates[style] = workdir_copy({"name": f"plain-phase/{style}",
                                          "candidate": str(task_dir / "candidates" / folder)}, work)
        build_once(candidates[style], args.device)
    print("precompiled header ready:", wait_for_pch(args.cache_dir, 240), flush=True)  # torch style's
    for rep in range(args.repeats):
        for style, cand in candidates.items():
            if (style, rep) in have:
                continue
            record = {"style": style, "repeat": rep, "unchanged_s": build_once(cand, args.device)}
            binding = sorted((cand / "kernels").rglob("*_binding.cpp"))[0]
            with binding.open("a") as f:
                f.write(f"\n// benchmark edit {uuid.uuid4().hex}\n")
            record["binding_edit_s"] = build_once(cand, args.device)
            judged = judge(case, cand, args.device, args.judge_args)
            record.update({k: judged[k] for k in ("wall_s", "reward", "reason", "candidate_us", "eager_us",
                                                  "speedup_vs_eager")})
            append(out, record)
            print("plain", json.dumps(record), flush=True)


def phase_cv(args, cases, work: Path) -> None:
    out = args.out / "cv.jsonl"
    have = done(out, key=lambda r: (r["case"], r["run"]))
    chosen = [c for c in cases if c["name"] in args.cv_cases] or cases[:2]
    for case in chosen:
        cand = workdir_copy(case, work)
        for run in range(args.cv_runs):
            if (case["name"], run) in have:
                continue
            record = judge(case, cand, args.device, args.judge_args)
            record["run"] = run
            append(out, record)
            print(f"cv {case['name']} #{run}: cand {record['candidate_us']} us, x{record['speedup_vs_eager']}",
                  flush=True)


class Utilisation:
    """Samples CPU busy share (/proc/stat) and GPU utilisation (nvidia-smi) while a phase runs."""

    def __init__(self):
        self.cpu, self.gpu = [], []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    @staticmethod
    def cpu_times():
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields), idle

    def run(self):
        total0, idle0 = self.cpu_times()
        while not self.stop.wait(1.0):
            total1, idle1 = self.cpu_times()
            if total1 > total0:
                self.cpu.append(1 - (idle1 - idle0) / (total1 - total0))
            total0, idle0 = total1, idle1
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
                self.gpu.append(float(out.split()[0]) / 100)
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def summary(self) -> dict:
        mean = lambda xs: statistics.mean(xs) if xs else None  # noqa: E731
        return {"cpu_busy_mean": mean(self.cpu), "gpu_util_mean": mean(self.gpu)}


def phase_throughput(args, cases, work: Path) -> None:
    out = args.out / "throughput.jsonl"
    have = done(out, key=lambda r: r["concurrency"])
    for n in args.concurrency:
        if n in have:
            continue
        jobs = max(args.throughput_jobs, n)
        locks = {c["name"]: threading.Lock() for c in cases}

        def one(i):
            case = cases[i % len(cases)]
            with locks[case["name"]]:  # one edit at a time per candidate folder
                cand = workdir_copy(case, work)
                edit_kernel(cand)
                snapshot = Path(tempfile.mkdtemp(prefix="tp-", dir=work)) / "cand"
                shutil.copytree(cand, snapshot)
            return judge(case, snapshot, args.device, args.judge_args)

        start = time.perf_counter()
        with Utilisation() as util, concurrent.futures.ThreadPoolExecutor(n) as pool:
            records = list(pool.map(one, range(jobs)))
        wall = time.perf_counter() - start
        judged = [r for r in records if r["reward"] is not None]
        record = {"concurrency": n, "judgements": len(records), "judged": len(judged), "wall_s": wall,
                  "per_gpu_hour": len(judged) / wall * 3600,
                  "mean_latency_s": statistics.mean(r["wall_s"] for r in records),
                  "lease_wait_mean_s": statistics.mean(r["stage_seconds"].get("lease_wait", 0) for r in records),
                  **util.summary(), **lease_timeline.summary(records)}
        append(out, record)
        for r in records:  # each judgement, to tell lease waits from re-measured baselines later
            append(args.out / "throughput_judgements.jsonl",
                   {"concurrency": n, **{k: r.get(k) for k in ("case", "wall_s", "reward", "reason", "stage_seconds",
                                                              "baseline_store", "calibration", "jobs", "leases",
                                                              "started_unix_s")}})
        print("throughput", json.dumps(record), flush=True)


def read(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []


def spread(values: list[float]) -> dict:
    if not values:
        return {}
    mean = statistics.mean(values)
    sd = statistics.pstdev(values) if len(values) > 1 else 0.0
    return {"n": len(values), "mean": mean, "median": statistics.median(values), "min": min(values),
            "max": max(values), "cv": sd / mean if mean else None}


def phase_report(args, cases, work: Path) -> None:
    ours = [r for r in read(args.out / "ours.jsonl") if r["reward"] is not None]
    ref = [r for r in read(args.out / "reference.jsonl") if "error" not in r]
    summary: dict = {"device": args.device, "cases": [c["name"] for c in cases]}
    lines = ["# Judge latency (issue 5)", ""]
    per_case = []
    for case in cases:
        mine = [r["wall_s"] for r in ours if r["case"] == case["name"]]
        theirs = [r["step_s"] for r in ref if r["case"] == case["name"]]
        if mine and theirs:
            per_case.append({"case": case["name"], "ours_s": statistics.median(mine), "reference_s": theirs[0],
                             "ratio": statistics.median(mine) / theirs[0]})
    if per_case:
        ours_p50 = statistics.median(p["ours_s"] for p in per_case)
        ref_p50 = statistics.median(p["reference_s"] for p in per_case)
        summary["step"] = {"ours_p50_s": ours_p50, "reference_p50_s": ref_p50, "ratio_of_p50": ours_p50 / ref_p50,
                           "per_case": per_case}
        lines += [f"Step p50: ours {ours_p50:.2f} s, reference {ref_p50:.2f} s, ratio {ours_p50 / ref_p50:.3f} "
                  f"over {len(per_case)} cases", "",
                  "| case | ours (s, median) | reference (s) | ratio |", "|---|---:|---:|---:|"]
        lines += [f"| {p['case']} | {p['ours_s']:.2f} | {p['reference_s']:.2f} | {p['ratio']:.3f} |" for p in per_case]
        lines.append("")
    rebuild = read(args.out / "rebuild.jsonl")
    if rebuild:
        summary["rebuild"] = {k: spread([r[k] for r in rebuild]) for k in ("unchanged_s", "kernel_edit_s", "binding_edit_s")}
        lines += ["| rebuild | median (s) | min–max |", "|---|---:|---|"]
        lines += [f"| {k} | {v['median']:.2f} | {v['min']:.2f}–{v['max']:.2f} |" for k, v in summary["rebuild"].items()]
        lines.append("")
    plain = read(args.out / "plain.jsonl")
    if plain:
        summary["plain"] = {}
        lines += ["| relu_scale's binding | rebuild after a binding edit (s): median, min–max | "
                  "candidate µs: median, min–max | rewards |", "|---|---|---|---|"]
        for style in ("torch", "plain"):
            rs = [r for r in plain if r["style"] == style]
            b = spread([r["binding_edit_s"] for r in rs])
            t = spread([r["candidate_us"] for r in rs if r["candidate_us"]])
            summary["plain"][style] = {"binding_edit_s": b, "candidate_us": t, "rewards": [r["reward"] for r in rs]}
            if b and t:
                lines.append(f"| {style} | {b['median']:.2f}, {b['min']:.2f}–{b['max']:.2f} | "
                             f"{t['median']:.2f}, {t['min']:.2f}–{t['max']:.2f} | "
                             f"{', '.join(str(r['reward']) for r in rs)} |")
        lines.append("")
    cv = read(args.out / "cv.jsonl")
    if cv:
        summary["cv"] = {}
        lines += ["| candidate | runs | candidate µs (median) | speedup vs eager: mean, CV | vs compile: mean, CV |",
                  "|---|---:|---:|---|---|"]
        for name in sorted({r["case"] for r in cv}):
            rs = [r for r in cv if r["case"] == name and r["speedup_vs_eager"]]
            e = spread([r["speedup_vs_eager"] for r in rs])
            c = spread([r["speedup_vs_compile"] for r in rs if r["speedup_vs_compile"]])
            t = spread([r["candidate_us"] for r in rs])
            summary["cv"][name] = {"speedup_vs_eager": e, "speedup_vs_compile": c, "candidate_us": t}
            if e:
                lines.append(f"| {name} | {e['n']} | {t['median']:.1f} | {e['mean']:.3f}, {100 * e['cv']:.2f}% | "
                             + (f"{c['mean']:.3f}, {100 * c['cv']:.2f}% |" if c else "– |"))
        lines.append("")
    tp = read(args.out / "throughput.jsonl")
    if tp:
        summary["throughput"] = tp
        lines += ["| concurrent | judged | wall (s) | per GPU-hour | mean latency (s) | lease wait (s) | CPU busy | GPU util "
                  "| device: exclusive / drain / shared / idle |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in sorted(tp, key=lambda r: r["concurrency"]):
            fmt = lambda v: f"{100 * v:.0f}%" if isinstance(v, float) else "–"  # noqa: E731
            line = r.get("lease_timeline") or {}
            shares = " / ".join(fmt(line.get(f"{k}_share")) for k in ("exclusive", "drain", "shared", "idle"))
            lines.append(f"| {r['concurrency']} | {r['judged']}/{r['judgements']} | {r['wall_s']:.0f} | "
                         f"{r['per_gpu_hour']:.0f} | {r['mean_latency_s']:.1f} | {r['lease_wait_mean_s']:.1f} | "
                         f"{fmt(r['cpu_busy_mean'])} | {fmt(r['gpu_util_mean'])} | {shares} |")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


PHASES = {"warmup": phase_warmup, "ours": phase_ours, "reference": phase_reference, "rebuild": phase_rebuild,
          "plain": phase_plain, "cv": phase_cv, "throughput": phase_throughput, "report": phase_report}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--suite", type=Path, help="KernelBench folder: adds the cases of bench/candidates/kernelbench.py")
    ap.add_argument("--out", type=Path, required=True, help="records and the summary")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "judge-latency-work",
                    help="the candidates' editable copies")
    ap.add_argument("--phases", default="warmup,ours,rebuild,cv,reference,throughput,report")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--warmup-jobs", type=int, default=4)
    ap.add_argument("--cv-runs", type=int, default=10)
    ap.add_argument("--cv-cases", default="", help="comma-separated case names (default: the first two)")
    ap.add_argument("--concurrency", default="1,2,4,8")
    ap.add_argument("--throughput-jobs", type=int, default=16, help="judgements per concurrency level")
    ap.add_argument("--judge-args", default="", help="extra judge flags, space-separated")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.cache_dir = Path(os.environ.get("CUDA_AGENT_CACHE_DIR", Path.home() / ".cache" / "cuda-agent"))
    args.judge_args = args.judge_args.split()
    args.cv_cases = set(filter(None, args.cv_cases.split(",")))
    args.concurrency = [int(x) for x in args.concurrency.split(",") if x]
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    cases = discover_cases(args.device, args.suite, set(filter(None, args.only.split(","))), work)
    if not cases:
        print("no cases", file=sys.stderr)
        return 2
    for name in args.phases.split(","):
        if name not in PHASES:
            print(f"unknown phase {name}", file=sys.stderr)
            return 2
        print(f"== {name}", flush=True)
        PHASES[name](args, cases, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
