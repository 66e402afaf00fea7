#!/usr/bin/env python3
"""Agreement with KernelBench's own evaluator (issue 47, part 4): the same single-file solutions judged
by KernelBench's `eval_kernel_against_ref` and by our judge, side by side, with every disagreement
classed.

Two steps, because the GPU machine has no network and no mirrors:

  1. here (a developer machine with the real-world corpus and a KernelBench mirror):
       python3 bench/kernelbench/agreement.py prepare --kernelbench /work/.mirror/ScalingIntelligence+KernelBench/repo
     writes build/kb-agreement/ (≈ 0.5 MiB, git-ignored): sample.jsonl (the solutions chosen),
     solutions/<id>.py, tasks/levelL/<name>.py (their reference programs) and kernelbench/ — the four
     files of KernelBench's evaluation code that are needed (src/kernelbench/{eval,timing,dataset,
     utils}.py at the mirror's commit, named in kernelbench/SOURCE.json). Nothing of it is committed.
  2. on the GPU machine (carry build/kb-agreement and the bundle dist/):
       python3 bench/kernelbench/agreement.py run --prepared build/kb-agreement --out $OUT/agreement \\
           [--policy strict|kernelbench] [--deadline-s 450]
     phase A: our judge (`cuda-agent judge --task T --candidate FILE.py --json --policy P --baselines
     eager`, --jobs at once) while KernelBench's `build_compile_cache` builds every solution on the CPUs
     (--compile-jobs at once, one build folder each); phase B: KernelBench's `eval_kernel_against_ref`
     one solution at a time (each in a fresh process, started ahead so torch's import overlaps the
     previous evaluation; a crash or a CUDA error costs only that solution), with `--correct-trials`
     and `--perf-trials` (cuda_event timing, L2 cleared per trial, its reference timed the same way).
     Writes agreement.jsonl (one row per solution, both sides), table.md and summary.json.
     `--dry-run` runs the plumbing on a CPU machine: our judge with --device cpu --until build (CUDA
     sources cannot build there: each is a build verdict); KernelBench's modules imported through
     the same loader and the signature of eval_kernel_against_ref checked; its builds and its worker
     processes run as on the GPU, and its evaluation stops at its own "CUDA is not available" check
     (recorded as each solution's KernelBench error).

KernelBench's package __init__ imports utils.py, which imports LLM clients (openai, litellm, dotenv,
tqdm) that evaluation never uses; we load eval.py, timing.py, dataset.py and utils.py under a bare
`kernelbench` package and give those four clients (and pydantic / requests, only where they are not
installed) stand-in modules — the evaluation code itself runs unchanged.

Classes (column `class`): agree_correct, agree_fail, timing_difference (both correct, speedups more
than 10% apart), we_refuse_hybrid (ours refuses a solution where torch does part of the work:
the strict policy's rule, KernelBench accepts it), we_catch (ours refuses with a defence KernelBench
lacks — stale/aliased outputs, stream tricks, impossible times, ...: a hack we catch, or a false
positive of ours to review where the corpus calls it honest: we_refuse_honest), we_fail (ours finds it
wrong where KernelBench passes it: tolerance or inputs), they_fail (KernelBench fails it, ours passes),
not_compared (a side did not finish: deadline, internal error). "Neither side finds a problem" means
ours did not refuse it by a rule or defence and KernelBench did not flag an excessive speedup.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import inspect
import json
import math
import os
import select
import shutil
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KB_FILES = ["eval.py", "timing.py", "dataset.py", "utils.py"]
# Our error kinds that are a defence or a rule KernelBench's evaluation does not have.
DEFENCE_KINDS = {
    "single_file", "static_rule", "tampering", "missing_model_new", "forbidden_op", "bad_output",
    "mutated_input", "mutated_weights", "spawned_threads", "sampled_mismatch", "timed_mismatch",
    "impossible_time", "precision_downgrade", "kernel_audit", "unjoined_stream", "global_flags",
    "patching", "process_escape", "sanitizer"}
# Our failures KernelBench sees too (a build, an exception, a wrong output).
PLAIN_FAILURES = {"build", "import", "construct", "state_dict", "forward", "mismatch", "output_type",
                  "syntax_error", "no_model_new_class", "crash", "oom", "timeout"}
TIMING_TOLERANCE = 0.10


# ---------------------------------------------------------------- prepare


def read_mirror_file(mirror: Path, rel: str) -> tuple[bytes, str]:
    """A file of KernelBench at HEAD from a bare mirror (git dir) or a checkout."""
    if (mirror / rel).is_file():
        commit = subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "checkout"
        return (mirror / rel).read_bytes(), commit
    git_dir = mirror / ".git" if (mirror / ".git").is_dir() else mirror
    commit = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{rel}"], capture_output=True,
                          check=True).stdout
    return data, commit


def spread(items: list, n: int) -> list:
    if n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def choose(rows: list[dict], honest: int, hybrid: int, levels: set[int]) -> list[dict]:
    """`honest` + `hybrid` solutions of the given levels, deterministic, spread over the tasks: one per
    task first (round-robin over tasks sorted by name), then spread evenly."""
    out = []
    for cls, n in (("honest", honest), ("hybrid", hybrid)):
        pool = [r for r in rows if r["class"] == cls and int(r["task_name"].split("/")[0][5:]) in levels]
        by_task: dict[str, list] = {}
        for r in sorted(pool, key=lambda r: r["id"]):
            by_task.setdefault(r["task_name"], []).append(r)
        firsts = [v[0] for _, v in sorted(by_task.items())]
        rest = [x for _, v in sorted(by_task.items()) for x in v[1:]]
        picked = spread(firsts, n) if len(firsts) >= n else firsts + spread(rest, n - len(firsts))
        out += picked
    return out


def prepare(args) -> int:
    corpus = Path(args.corpus)
    index = corpus / "index.jsonl"
    if not index.is_file():
        sys.exit(f"{index} not found: build the corpus first (python3 bench/realworld/build_corpus.py)")
    rows = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    levels = {int(x) for x in args.levels.split(",")}
    chosen = choose(rows, args.honest, args.hybrid, levels)
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "solutions").mkdir(parents=True)
    (out / "kernelbench").mkdir()
    suite = Path(args.suite)
    sample = []
    for r in chosen:
        src = corpus / f"{r['id']}.py"
        shutil.copyfile(src, out / "solutions" / f"{r['id']}.py")
        task = suite / f"{r['task_name']}.py"
        dst = out / "tasks" / f"{r['task_name']}.py"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task, dst)
        sample.append({"id": r["id"], "task_name": r["task_name"], "class": r["class"], "repo": r["repo"],
                       "path": r["path"]})
    (out / "sample.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sample))
    mirror = Path(args.kernelbench)
    commit = None
    for name in KB_FILES:
        data, commit = read_mirror_file(mirror, f"src/kernelbench/{name}")
        (out / "kernelbench" / name).write_bytes(data)
    if args.ninja_wheel:
        # torch's load_inline (KernelBench's builds) needs ninja; the GPU machine may not have it.
        (out / "wheels").mkdir()
        shutil.copyfile(args.ninja_wheel, out / "wheels" / Path(args.ninja_wheel).name)
    (out / "kernelbench" / "SOURCE.json").write_text(json.dumps(
        {"repo": "ScalingIntelligence/KernelBench", "commit": commit,
         "files": [f"src/kernelbench/{n}" for n in KB_FILES],
         "note": "fetched for measuring only (issue 47); never committed"}, indent=2) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    counts = {c: sum(1 for s in sample if s["class"] == c) for c in ("honest", "hybrid")}
    print(f"{out}: {len(sample)} solutions ({counts['honest']} honest, {counts['hybrid']} hybrid) of "
          f"{len({s['task_name'] for s in sample})} tasks, KernelBench {commit[:7]}, {size / 1024:.0f} KiB")
    return 0


# ---------------------------------------------------------------- KernelBench's code, loaded


def load_kernelbench(folder: Path):
    """KernelBench's eval module from `folder` (eval.py, timing.py, dataset.py, utils.py) under a bare
    `kernelbench` package, so its __init__ (which pulls the LLM clients in) does not run."""
    def stand_in(name: str, **attrs):
        try:
            importlib.import_module(name)
            return
        except ImportError:
            pass
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        mod.__stand_in__ = True  # not the real package: evaluation never calls it
        sys.modules[name] = mod

    def unused(*_a, **_k):
        raise RuntimeError("a stand-in for an LLM client; KernelBench's evaluation does not use it")

    stand_in("dotenv", load_dotenv=lambda *a, **k: None)
    stand_in("tqdm", tqdm=lambda it=None, *a, **k: it)
    stand_in("openai", OpenAI=unused)
    stand_in("litellm", completion=unused)
    stand_in("requests")
    try:
        importlib.import_module("pydantic")
    except ImportError:
        class BaseModel:  # the part of pydantic's BaseModel that KernelExecResult uses
            def __init__(self, **kw):
                for cls in reversed(type(self).__mro__):
                    for k in getattr(cls, "__annotations__", {}):
                        if hasattr(cls, k):
                            v = getattr(cls, k)
                            setattr(self, k, v.copy() if isinstance(v, (dict, list)) else v)
                for k, v in kw.items():
                    setattr(self, k, v)

            def model_dump(self):
                return dict(self.__dict__)
        sys.modules["pydantic"] = types.ModuleType("pydantic")
        sys.modules["pydantic"].BaseModel = BaseModel
        sys.modules["pydantic"].__stand_in__ = True
    pkg = types.ModuleType("kernelbench")
    pkg.__path__ = [str(folder)]
    sys.modules["kernelbench"] = pkg
    mods = {}
    for name in ("utils", "timing", "dataset", "eval"):
        spec = importlib.util.spec_from_file_location(f"kernelbench.{name}", folder / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[f"kernelbench.{name}"] = mod
        setattr(pkg, name, mod)
        spec.loader.exec_module(mod)
        mods[name] = mod
    needed = {"original_model_src", "custom_model_src", "seed_num", "num_correct_trials", "num_perf_trials",
              "measure_performance", "timing_method", "build_dir", "device", "backend", "precision"}
    params = set(inspect.signature(mods["eval"].eval_kernel_against_ref).parameters)
    if not needed <= params:
        raise RuntimeError(f"eval_kernel_against_ref lacks {sorted(needed - params)}: another KernelBench "
                           "version; read its signature and adapt kb_eval()")
    if not hasattr(mods["eval"], "build_compile_cache"):
        raise RuntimeError("KernelBench's eval.py has no build_compile_cache")
    return mods["eval"]


def kb_compile(args) -> int:
    """One solution built by KernelBench's build_compile_cache into its own folder (CPU only)."""
    ev = load_kernelbench(Path(args.prepared) / "kernelbench")
    src = Path(args.solution).read_text()
    t0 = time.monotonic()
    ok, _out, err = ev.build_compile_cache(src, verbose=False, build_dir=args.build_dir)
    print(json.dumps({"compiled": bool(ok), "error": (err or "")[:500], "seconds": time.monotonic() - t0}))
    return 0


def kb_worker(args) -> int:
    """Imports torch and KernelBench's code, says ready, evaluates the one job read from stdin."""
    ev = load_kernelbench(Path(args.prepared) / "kernelbench")
    import torch
    print(json.dumps({"ready": True}), flush=True)
    job = json.loads(sys.stdin.readline())
    t0 = time.monotonic()
    out = {"id": job["id"]}
    try:
        r = ev.eval_kernel_against_ref(
            Path(job["task"]).read_text(), Path(job["solution"]).read_text(), seed_num=42,
            num_correct_trials=args.correct_trials, num_perf_trials=args.perf_trials,
            measure_performance=True, timing_method="cuda_event", verbose=False, build_dir=job["build_dir"],
            device=torch.device("cuda:0"), backend="cuda", precision=torch.float32,
            check_for_excessive_speedup=True)
        if r is None:
            out["error"] = "KernelBench returned None (a build lock: retry)"
        else:
            meta = {k: str(v)[:300] for k, v in (r.metadata or {}).items()}
            out.update(compiled=bool(r.compiled), correct=bool(r.correctness),
                       runtime_ms=r.runtime if r.runtime and r.runtime > 0 else None,
                       ref_runtime_ms=r.ref_runtime if r.ref_runtime and r.ref_runtime > 0 else None,
                       excessive_speedup=bool((r.metadata or {}).get("excessive_speedup")), metadata=meta)
    except Exception as e:  # noqa: BLE001 - recorded, the process ends anyway
        out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    out["seconds"] = time.monotonic() - t0
    print(json.dumps(out), flush=True)
    return 0


# ---------------------------------------------------------------- run


def our_binary(given: str | None) -> str:
    for b in (given, os.environ.get("CUDA_AGENT_BIN"), ROOT / "dist/bin/cuda-agent", ROOT / "build/cuda-agent"):
        if b and Path(b).is_file():
            return str(b)
    sys.exit("no cuda-agent binary: pass --binary (dist/bin/cuda-agent from scripts/bundle.sh, or build/)")


def judge_ours(binary: str, prepared: Path, s: dict, args, cache: Path | None) -> dict:
    argv = [binary, "judge", "--task", str(prepared / "tasks" / f"{s['task_name']}.py"),
            "--candidate", str(prepared / "solutions" / f"{s['id']}.py"), "--json", "--policy", args.policy,
            "--baselines", "eager"]
    if cache is not None:  # else $CUDA_AGENT_CACHE_DIR (gpu_session.sh's, with its seeded baselines)
        argv += ["--cache-dir", str(cache)]
    argv += ["--device", "cpu", "--until", "build"] if args.dry_run else ["--device", "cuda"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=args.judge_timeout)
        r = json.loads(p.stdout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.judge_timeout} s", "seconds": time.monotonic() - t0}
    except ValueError:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}", "seconds": time.monotonic() - t0}
    timing = r.get("timing") or {}
    return {"outcome": r.get("outcome"), "reward": r.get("reward"), "correct": bool(r.get("correct")),
            "stage": r.get("stage"), "error_kind": r.get("error_kind"), "reason": (r.get("reason") or "")[:300],
            "time_us": (timing.get("candidate") or {}).get("time_us"),
            "eager_us": (timing.get("eager") or {}).get("time_us"),
            "speedup": timing.get("speedup_vs_eager"), "seconds": time.monotonic() - t0}


class Worker:
    """A kb-worker process started ahead: it imports while the previous one evaluates."""

    def __init__(self, args):
        self.p = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "kb-worker", "--prepared", str(args.prepared),
             "--correct-trials", str(args.correct_trials), "--perf-trials", str(args.perf_trials)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True)

    def line(self, deadline: float) -> dict | None:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.p.stdout], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
            if ready:
                text = self.p.stdout.readline()
                if not text:
                    return None  # the process ended
                try:
                    return json.loads(text)
                except ValueError:
                    continue  # a line the evaluated code printed
        return None

    def evaluate(self, job: dict, timeout: float) -> dict:
        if self.line(time.monotonic() + 120) is None:
            self.kill()
            return {"error": "the KernelBench worker did not start (import failed?)"}
        self.p.stdin.write(json.dumps(job) + "\n")
        self.p.stdin.flush()
        out = self.line(time.monotonic() + timeout)
        self.kill()
        return out if out is not None else {"error": f"crashed or timed out (> {timeout:.0f} s)"}

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, 9)
            except ProcessLookupError:
                pass
        self.p.wait()


def classify(s: dict, ours: dict, theirs: dict) -> str:
    if "outcome" not in ours or ours.get("outcome") != "verdict" or "correct" not in theirs:
        return "not_compared"
    ok_ours, ok_theirs = ours["correct"], theirs["correct"]
    kind = ours.get("error_kind")
    if ok_ours and ok_theirs:
        a, b = ours.get("speedup"), speedup_theirs(theirs)
        if a and b and abs(math.log(a / b)) > math.log(1 + TIMING_TOLERANCE):
            return "timing_difference"
        return "agree_correct"
    if not ok_ours and not ok_theirs:
        return "agree_fail"
    if ok_theirs:  # ours refuses or fails what KernelBench passes
        if kind in DEFENCE_KINDS:
            if s["class"] == "hybrid":
                return "we_refuse_hybrid"
            return "we_refuse_honest" if kind in ("static_rule", "single_file", "forbidden_op") else "we_catch"
        return "we_fail"
    return "they_fail"


def speedup_theirs(t: dict):
    if t.get("correct") and t.get("runtime_ms") and t.get("ref_runtime_ms"):
        return t["ref_runtime_ms"] / t["runtime_ms"]
    return None


def neither_flags(ours: dict, theirs: dict) -> bool:
    return ours.get("error_kind") not in DEFENCE_KINDS and not theirs.get("excessive_speedup")


def fmt(x, spec=".2f"):
    return "–" if x is None else format(x, spec)


def write_table(out: Path, rows: list[dict], args, env: dict) -> dict:
    compared = [r for r in rows if r["class"] != "not_compared"]
    clean = [r for r in compared if neither_flags(r["ours"], r["theirs"])]
    agree = [r for r in clean if r["ours"]["correct"] == r["theirs"]["correct"]]
    ratios = [r["ours"]["speedup"] / speedup_theirs(r["theirs"]) for r in clean
              if r["ours"].get("correct") and r["ours"].get("speedup") and speedup_theirs(r["theirs"])]
    classes: dict[str, int] = {}
    for r in rows:
        classes[r["class"]] = classes.get(r["class"], 0) + 1
    summary = {"solutions": len(rows), "compared": len(compared), "neither_flags": len(clean),
               "correctness_agreement": len(agree) / len(clean) if clean else None,
               "both_correct_timed": len(ratios),
               "median_speedup_ratio_ours_over_theirs": statistics.median(ratios) if ratios else None,
               "classes": classes, "policy": args.policy, "dry_run": args.dry_run, **env}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [f"# Agreement with KernelBench's evaluator ({'dry run, CPU' if args.dry_run else env.get('gpu', '')})",
             "", f"{env.get('date', '')}; KernelBench {env.get('kernelbench_commit', '')[:7]} "
             f"`eval_kernel_against_ref` (num_correct_trials={args.correct_trials}, "
             f"num_perf_trials={args.perf_trials}, cuda_event); ours `--policy {args.policy} --baselines eager`.", "",
             f"- solutions: {len(rows)}, compared: {len(compared)}, neither side flags a problem: {len(clean)}",
             f"- correctness agreement where neither flags a problem: "
             f"{fmt(summary['correctness_agreement'] * 100 if clean else None, '.1f')}% ({len(agree)}/{len(clean)})",
             f"- median speedup ratio (ours / KernelBench's, both correct): "
             f"{fmt(summary['median_speedup_ratio_ours_over_theirs'], '.3f')} over {len(ratios)}",
             "- classes: " + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())), "",
             "| solution | corpus class | task | ours | ours speedup | KernelBench | KB speedup | class | our reason |",
             "|---|---|---|---|---:|---|---:|---|---|"]
    for r in rows:
        o, t = r["ours"], r["theirs"]
        ours_v = ("correct" if o.get("correct") else f"fail: {o.get('error_kind') or o.get('error', '?')}")
        kb_v = ("correct" if t.get("correct") else
                "not compiled" if t.get("compiled") is False else
                "wrong" if "correct" in t else t.get("error", "?"))
        if t.get("excessive_speedup"):
            kb_v += " (excessive speedup flagged)"
        reason = (o.get("reason") or o.get("error") or "").replace("|", "\\|").replace("\n", " ")[:140]
        lines.append(f"| {r['id']} | {r['corpus_class']} | {r['task_name']} | {ours_v} | {fmt(o.get('speedup'))} | "
                     f"{kb_v} | {fmt(speedup_theirs(t))} | {r['class']} | {reason} |")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    return summary


def ensure_ninja(prepared: Path, out: Path) -> str:
    """torch's load_inline needs `ninja`; put the carried wheel's binary on PATH where there is none."""
    found = shutil.which("ninja")
    if found:
        return found
    import zipfile
    for wheel in sorted((prepared / "wheels").glob("ninja-*.whl")):
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.endswith("/scripts/ninja") or name.endswith("/bin/ninja"):
                    dst = out / "ninja-bin" / "ninja"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.write_bytes(z.read(name))
                    dst.chmod(0o755)
                    os.environ["PATH"] = f"{dst.parent}{os.pathsep}{os.environ.get('PATH', '')}"
                    return str(dst)
    sys.exit("ninja not found and no ninja wheel in PREPARED/wheels: KernelBench's load_inline builds need it "
             "(prepare --ninja-wheel FILE)")


def run(args) -> int:
    t_start = time.monotonic()
    deadline = t_start + args.deadline_s
    prepared = Path(args.prepared).resolve()
    args.prepared = prepared
    sample = [json.loads(x) for x in (prepared / "sample.jsonl").read_text().splitlines() if x.strip()]
    # Classes interleaved (honest, hybrid, honest, ...), so that a deadline cuts both alike.
    rank: dict[str, int] = {}
    keyed = []
    for s in sample:
        rank[s["class"]] = rank.get(s["class"], -1) + 1
        keyed.append((rank[s["class"]], s["class"], s))
    sample = [s for _, _, s in sorted(keyed, key=lambda k: (k[0], k[1]))]
    if args.limit:
        sample = sample[: args.limit]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    binary = our_binary(args.binary)
    source = json.loads((prepared / "kernelbench" / "SOURCE.json").read_text())
    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "kernelbench_commit": source["commit"],
           "ninja": ensure_ninja(prepared, Path(args.work))}
    # KernelBench's code must load here (and, on the GPU, find CUDA) before anything is spent on it.
    ev = load_kernelbench(prepared / "kernelbench")
    import torch
    if not args.dry_run:
        if not torch.cuda.is_available():
            sys.exit("CUDA is not available: KernelBench's evaluation needs it (use --dry-run on a CPU machine)")
        env["gpu"] = torch.cuda.get_device_name(0)
    env["torch"] = torch.__version__
    print(f"KernelBench {source['commit'][:7]}: {ev.__name__} loaded; {len(sample)} solutions; ours {binary}",
          flush=True)
    work = Path(args.work)
    cache = None if os.environ.get("CUDA_AGENT_CACHE_DIR") else work / "cache"
    builds = work / "kb-builds"
    ours: dict[str, dict] = {}
    compiled: dict[str, dict] = {}

    def our_job(s):
        if time.monotonic() > deadline_a:
            return ours, s["id"], {"error": "not run: deadline"}
        return ours, s["id"], judge_ours(binary, prepared, s, args, cache)

    def compile_job(s):
        if time.monotonic() > deadline_a:
            return compiled, s["id"], {"error": "not run: deadline"}
        argv = [sys.executable, str(Path(__file__).resolve()), "kb-compile", "--prepared", str(prepared),
                "--solution", str(prepared / "solutions" / f"{s['id']}.py"),
                "--build-dir", str(builds / s["id"])]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=args.compile_timeout)
            last = [x for x in p.stdout.splitlines() if x.startswith("{")]
            return compiled, s["id"], json.loads(last[-1]) if last else {"error": p.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            return compiled, s["id"], {"error": f"build timed out after {args.compile_timeout} s"}

    theirs: dict[str, dict] = {}

    def finish() -> dict:
        """agreement.jsonl, table.md and summary.json from what is known now (rewritten as results come
        in, so that a run stopped from outside still leaves its table)."""
        rows = []
        for s in sample:
            o, t = ours.get(s["id"], {"error": "not run"}), theirs.get(s["id"], {"error": "not run"})
            rows.append({"id": s["id"], "task_name": s["task_name"], "corpus_class": s["class"], "ours": o,
                         "theirs": t, "class": classify(s, o, t)})
        with open(out / "agreement.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return write_table(out, rows, args, env)

    # Phase A: ours (GPU timings serialised by our device leases) and KernelBench's builds (CPU only);
    # nothing new starts after 55% of the deadline, so that phase B has its share.
    deadline_a = t_start + 0.55 * args.deadline_s
    with cf.ThreadPoolExecutor(args.jobs) as ours_pool, cf.ThreadPoolExecutor(args.compile_jobs) as kb_pool:
        futures = [ours_pool.submit(our_job, s) for s in sample]
        futures += [kb_pool.submit(compile_job, s) for s in sample]
        for f in cf.as_completed(futures):
            into, sid, res = f.result()
            into[sid] = res
    print(f"phase A (ours + KernelBench's builds): {time.monotonic() - t_start:.0f} s", flush=True)
    finish()

    # Phase B: KernelBench's evaluation, one solution at a time on the GPU.
    # (In a dry run the workers start and take their job too; KernelBench's evaluation then stops at
    # its own check that CUDA is available, which is recorded as the error.)
    nxt = Worker(args)
    for i, s in enumerate(sample):
        if time.monotonic() > deadline:
            theirs[s["id"]] = {"error": "not run: deadline"}
            continue
        w, nxt = nxt, (Worker(args) if i + 1 < len(sample) else None)
        job = {"id": s["id"], "task": str(prepared / "tasks" / f"{s['task_name']}.py"),
               "solution": str(prepared / "solutions" / f"{s['id']}.py"), "build_dir": str(builds / s["id"])}
        theirs[s["id"]] = w.evaluate(job, args.eval_timeout)
        theirs[s["id"]]["precompile"] = compiled.get(s["id"])
        finish()
    if nxt is not None:
        nxt.kill()
    print(f"phase B (KernelBench's evaluations): {time.monotonic() - t_start:.0f} s", flush=True)

    summary = finish()
    print(json.dumps(summary, indent=2))
    print(f"{out / 'table.md'}; total {time.monotonic() - t_start:.0f} s")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="choose the solutions and copy what the GPU machine needs")
    p.add_argument("--kernelbench", required=True, help="KernelBench mirror (git dir or checkout)")
    p.add_argument("--corpus", default=str(ROOT / "build/realworld"))
    p.add_argument("--suite", default=str(ROOT.parent / "shared/kernelbench"))
    p.add_argument("--honest", type=int, default=30)
    p.add_argument("--hybrid", type=int, default=20)
    p.add_argument("--levels", default="1,2", help="level 3's models make KernelBench's trials slow")
    p.add_argument("--out", default=str(ROOT / "build/kb-agreement"))
    p.add_argument("--ninja-wheel", help="ninja's wheel (pip download ninja --no-deps --only-binary=:all: "
                   "--platform manylinux2014_x86_64): carried for load_inline where ninja is missing")
    r = sub.add_parser("run", help="judge the prepared solutions with both evaluators")
    r.add_argument("--prepared", default=str(ROOT / "build/kb-agreement"))
    r.add_argument("--out", required=True, help="agreement.jsonl, table.md, summary.json")
    r.add_argument("--work", default="/tmp/kb-agreement-work",
                   help="KernelBench's build folders, the carried ninja and, without $CUDA_AGENT_CACHE_DIR, "
                   "our judge's cache (not results)")
    r.add_argument("--policy", default="strict", help="our judge's --policy (kernelbench once merged)")
    r.add_argument("--binary", help="cuda-agent (default: $CUDA_AGENT_BIN, dist/bin, build/)")
    r.add_argument("--jobs", type=int, default=6, help="our judgements at once")
    r.add_argument("--compile-jobs", type=int, default=8, help="KernelBench's builds at once")
    r.add_argument("--correct-trials", type=int, default=5, help="KernelBench's num_correct_trials")
    r.add_argument("--perf-trials", type=int, default=20, help="KernelBench's num_perf_trials")
    r.add_argument("--deadline-s", type=float, default=400,
                   help="no new work after this many seconds (ours and KernelBench's builds: 55%% of it)")
    r.add_argument("--judge-timeout", type=float, default=240)
    r.add_argument("--compile-timeout", type=float, default=240)
    r.add_argument("--eval-timeout", type=float, default=60)
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--dry-run", action="store_true", help="CPU: ours --until build, KernelBench loaded, not run")
    c = sub.add_parser("kb-compile")
    c.add_argument("--prepared", required=True)
    c.add_argument("--solution", required=True)
    c.add_argument("--build-dir", required=True)
    w = sub.add_parser("kb-worker")
    w.add_argument("--prepared", required=True)
    w.add_argument("--correct-trials", type=int, default=5)
    w.add_argument("--perf-trials", type=int, default=20)
    args = ap.parse_args()
    return {"prepare": prepare, "run": run, "kb-compile": kb_compile, "kb-worker": kb_worker}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
