#!/usr/bin/env python3
"""Agreement with KernelBench's own evaluator (issue 47, part 4) and the real-world corpus on the whole
judge (issue 46, part 1), each in ONE GPU call of ≤ 540 s.

Three steps, because the GPU machine has no network, no mirrors and no ../shared:

  1. stage, here (a developer machine with the real-world corpus build/realworld, the suite
     ../shared/kernelbench and a KernelBench mirror):
       python3 bench/kernelbench/agreement.py stage --out .gpu/kb
     chooses the two samples (below) and copies into .gpu/kb (≈ 1.5 MiB, untracked, never committed;
     it travels to the GPU machine with the working tree): sample.jsonl (the agreement sample),
     realworld.jsonl (the whole-judge sample), solutions/<id>.py, tasks/levelL/<name>.py, kernelbench/
     (the four files of KernelBench's evaluation code, src/kernelbench/{eval,timing,dataset,utils}.py at
     the mirror's commit, named in kernelbench/SOURCE.json: measuring only) and wheels/ (ninja, for
     load_inline where the machine lacks it), with STAGE.json saying how the samples were chosen.
  2. on the GPU machine, one call each (bench/gpu_session.sh kb-agreement / kb-realworld):
       python3 bench/kernelbench/agreement.py run --prepared .gpu/kb --out $OUT/kb-agreement
       python3 bench/kernelbench/agreement.py realworld --prepared .gpu/kb --out $OUT/kb-realworld
  3. the report (also written by 2 after every result, so a cut-off run still has its table):
       python3 bench/kernelbench/agreement.py report --prepared .gpu/kb --results DIR
       python3 bench/kernelbench/agreement.py report-realworld --prepared .gpu/kb --results DIR

`run` is a pipeline, everything at once from t = 0 (the GPU machine: 16 CPUs, 1 GPU):
  - ours: `cuda-agent judge --task T --candidate FILE.py --json --policy kernelbench --baselines eager`,
    --jobs (3) at once; their timings take our exclusive device lease one at a time (src/gpu/lease.h).
    Every solution is judged with --policy kernelbench, honest and hybrid alike: the agreement is about
    KernelBench's rules (torch may do part of the work, KernelBench's tolerance); under `strict` every
    hybrid would be a refusal by rule and the tolerances would differ, which is no comparison.
  - KernelBench's builds: its `build_compile_cache` in --compile-jobs (8) processes, each with its own
    build folder (load_inline's TORCH_EXTENSIONS_DIR) and MAX_JOBS=2, CPU only;
  - KernelBench's evaluations: `eval_kernel_against_ref` (5 correctness trials, 20 cuda_event timing
    trials, its reference timed the same way, its excessive-speedup check) ONE at a time, each in a fresh
    process started ahead (torch imported while the previous evaluates), and each holding OUR exclusive
    device lease (the same flock files) for the whole evaluation: no KernelBench timing overlaps one of
    ours or any of our GPU work, and no two of its evaluations overlap. Its build folder is deleted right
    after. A solution KernelBench's build refused is recorded as not compiled without a GPU process.
  - disk: no job starts while the work folder's file system has less than --min-free-gib (6) free.
  - results: ours.jsonl and theirs.jsonl, one line per finished solution, appended and flushed; then
    table.md / summary.json rewritten. No job starts after --deadline-s; every process is killed at the
    hard deadline (--deadline-s + --grace-s).
`--dry-run` (a CPU machine): KernelBench's side is FAKE (`fake_kernelbench`: no torch CUDA, a verdict
made up from the solution's id, every row marked `"evaluator": "FAKE ..."`), its code is still loaded
and its signature checked; ours is the real binary with --device cpu --until build (CUDA sources cannot
build there: each is a build verdict), or FAKE too with --fake-ours.

`realworld` judges realworld.jsonl (honest solutions, default policy `strict`, issue 46) with the whole
judge (`--baselines eager`), --jobs (3) at once, JSONL per result, and report-realworld lists accepted
and refused with each refusal's reason category.

Classes (column `class`): agree_correct, agree_fail, timing_difference (both correct, speedups more
than 10% apart), we_refuse_hybrid / we_refuse_honest (ours refuses by a static rule or the converter
where KernelBench passes), we_catch (ours refuses with a run-time defence KernelBench lacks — stale or
aliased outputs, sampled/timed checks, kernel audit, ...), we_fail (ours finds it wrong where
KernelBench passes it: tolerance or inputs), they_fail (KernelBench fails it, ours passes), not_compared
(a side did not finish: deadline, internal or task error, crash). "Neither side finds a problem" means
ours did not refuse it by a rule or defence and KernelBench did not flag an excessive speedup.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import fcntl
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import queue
import re
import select
import shutil
import statistics
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MANIFEST = ROOT / "bench/realworld/manifest.json"  # the corpus's reviewed classes
KB_FILES = ["eval.py", "timing.py", "dataset.py", "utils.py"]
# Our error kinds that are a defence or a rule KernelBench's evaluation does not have.
STATIC_KINDS = {"single_file", "static_rule", "forbidden_op", "tampering", "missing_model_new"}
DEFENCE_KINDS = STATIC_KINDS | {
    "bad_output", "mutated_input", "mutated_weights", "spawned_threads", "sampled_mismatch", "timed_mismatch",
    "impossible_time", "precision_downgrade", "kernel_audit", "unjoined_stream", "global_flags",
    "patching", "process_escape", "sanitizer"}
# Our failures KernelBench sees too (a build, an exception, a wrong output).
PLAIN_FAILURES = {"build", "import", "construct", "state_dict", "forward", "mismatch", "output_type",
                  "syntax_error", "no_model_new_class", "crash", "oom", "timeout"}
INFRA_KINDS = {"internal", "task"}
TIMING_TOLERANCE = 0.10
FAKE_KB = "FAKE-KernelBench (dry run: no evaluation happened)"
FAKE_OURS = "FAKE-cuda-agent (dry run: no judgement happened)"


def jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut by a kill: the solution counts as not run
    return out


class Appender:
    """One JSONL file appended line by line (flushed and fsynced), from any thread."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()

    def add(self, row: dict):
        with self.lock, open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())


def free_gib(path: Path) -> float:
    p = path
    while not p.exists():
        p = p.parent
    return shutil.disk_usage(p).free / 2**30


# ---------------------------------------------------------------- stage


def read_mirror_file(mirror: Path, rel: str) -> tuple[bytes, str]:
    """A file of KernelBench at HEAD from a bare mirror (git dir) or a checkout."""
    if (mirror / rel).is_file():
        commit = subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD"], check=False, capture_output=True,
                                text=True).stdout.strip() or "checkout"
        return (mirror / rel).read_bytes(), commit
    git_dir = mirror / ".git" if (mirror / ".git").is_dir() else mirror
    commit = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{rel}"], capture_output=True,
                          check=True).stdout
    return data, commit


def task_mib(task_file: Path) -> float | None:
    """Inputs + parameters + outputs of one forward, in MiB, from the task built on torch's meta
    device (no memory, no compute); None where the task cannot be built there."""
    import torch
    spec = importlib.util.spec_from_file_location("kb_task_size", task_file)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
        with torch.device("meta"):
            model = mod.Model(*mod.get_init_inputs())
            inputs = mod.get_inputs()

            def nbytes(xs):
                return sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))
            total = nbytes(inputs) + nbytes(list(model.parameters()) + list(model.buffers()))
            try:
                out = model(*inputs)
                total += nbytes(out if isinstance(out, (tuple, list)) else [out])
            except Exception:  # noqa: BLE001 - an op without a meta kernel: count the inputs twice
                total += nbytes(inputs)
        return total / 2**20
    except Exception:  # noqa: BLE001
        return None


def converts(solution: Path) -> tuple[bool, str]:
    """Whether our converter (cuda_agent_harness.single_file, static) makes a candidate of it."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        p = subprocess.run([sys.executable, "-m", "cuda_agent_harness.single_file", str(solution),
                            str(Path(d) / "c"), "--json"], check=False, capture_output=True, text=True, env=env, timeout=60)
        try:
            r = json.loads(p.stdout)
            return bool(r.get("ok")), (r.get("error") or "")[:200]
        except ValueError:
            return False, p.stderr.strip()[-200:]


def pick(pool: list[dict], n: int, avoid: set[str] = frozenset()) -> list[dict]:
    """n solutions of `pool`, deterministic, spread over the tasks: one per task (tasks sorted by name,
    ids sorted within), then a second per task, and so on; ids in `avoid` only when nothing else is
    left."""
    by_task: dict[str, list] = {}
    for r in sorted(pool, key=lambda r: (r["id"] in avoid, r["id"])):
        by_task.setdefault(r["task_name"], []).append(r)
    out: list[dict] = []
    rnd = 0
    while len(out) < n and any(len(v) > rnd for v in by_task.values()):
        for _, v in sorted(by_task.items()):
            if len(v) > rnd and len(out) < n:
                out.append(v[rnd])
        rnd += 1
    return out


def default_mirror() -> str | None:
    for p in (Path("/work/.mirror/ScalingIntelligence+KernelBench/repo"),
              Path("/work/.mirror/ScalingIntelligence+KernelBench")):
        if p.exists():
            return str(p)
    return None


def with_reviewed_classes(rows: list[dict], manifest: Path) -> list[dict]:
    """`rows` (the built corpus's index) with each solution's class as the manifest now reviews it: a
    corpus built before a review would otherwise stage its now-hybrid solutions as honest."""
    reviewed = {e["id"]: e["class"] for e in json.loads(manifest.read_text())["entries"]}
    return [r | {"class": reviewed.get(r["id"], r["class"])} for r in rows]


def stage(args) -> int:
    corpus, suite, out = Path(args.corpus), Path(args.suite), Path(args.out)
    index = corpus / "index.jsonl"
    if not index.is_file():
        sys.exit(f"{index} not found: build the corpus first (python3 bench/realworld/build_corpus.py)")
    if not args.kernelbench:
        sys.exit("no KernelBench mirror: pass --kernelbench (fetch github:ScalingIntelligence/KernelBench)")
    rows = [json.loads(line) for line in index.read_text().splitlines() if line.strip()]
    rows = with_reviewed_classes(rows, MANIFEST)
    levels = {int(x) for x in args.levels.split(",")}
    rows = [r for r in rows if int(r["task_name"].split("/")[0][5:]) in levels]
    sizes: dict[str, float | None] = {}
    for t in sorted({r["task_name"] for r in rows}):
        sizes[t] = task_mib(suite / f"{t}.py")
    small = [r for r in rows if sizes[r["task_name"]] is not None and sizes[r["task_name"]] <= args.max_task_mib]
    # The agreement sample: solutions our converter reads (those it refuses — both functions=[...] and a
    # PYBIND11_MODULE, a listed function never declared — load_inline cannot build either; the last
    # run measured that: 10 of 10 agree), so that the sample's solutions reach both evaluations.
    conv: dict[str, tuple[bool, str]] = {}

    def convertible(pool):
        for r in pool:
            if r["id"] not in conv:
                conv[r["id"]] = converts(corpus / f"{r['id']}.py")
        return [r for r in pool if conv[r["id"]][0]]

    agreement = []
    for cls, n in (("honest", args.honest), ("hybrid", args.hybrid)):
        pool = [r for r in small if r["class"] == cls]
        chosen = pick(pool, n * 2)  # converter refusals dropped below; twice as many looked at
        ok = convertible(chosen)
        if len(ok) < n:
            ok = convertible(pick(pool, len(pool)))
        agreement += pick(ok, n)
    # The whole-judge sample (issue 46.1): honest only, not already in the agreement sample where
    # possible, converter refusals kept (they are verdicts about honest code).
    taken = {r["id"] for r in agreement}
    realworld = pick([r for r in small if r["class"] == "honest"], args.realworld, avoid=taken)
    if out.exists():
        shutil.rmtree(out)
    (out / "solutions").mkdir(parents=True)
    (out / "kernelbench").mkdir()

    def entry(r):
        src = corpus / f"{r['id']}.py"
        shutil.copyfile(src, out / "solutions" / f"{r['id']}.py")
        dst = out / "tasks" / f"{r['task_name']}.py"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(suite / f"{r['task_name']}.py", dst)
        e = {"id": r["id"], "task_name": r["task_name"], "class": r["class"], "repo": r["repo"],
             "path": r["path"], "task_mib": round(sizes[r["task_name"]], 1)}
        if r["id"] in conv:
            e["converts"] = conv[r["id"]][0]
        return e
    sample = [entry(r) for r in agreement]
    rw = [entry(r) for r in realworld]
    (out / "sample.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sample))
    (out / "realworld.jsonl").write_text("".join(json.dumps(s) + "\n" for s in rw))
    mirror = Path(args.kernelbench)
    commit = None
    for name in KB_FILES:
        data, commit = read_mirror_file(mirror, f"src/kernelbench/{name}")
        (out / "kernelbench" / name).write_bytes(data)
    (out / "kernelbench" / "SOURCE.json").write_text(json.dumps(
        {"repo": "ScalingIntelligence/KernelBench", "commit": commit,
         "files": [f"src/kernelbench/{n}" for n in KB_FILES],
         "note": "fetched for measuring only (issue 47); never committed"}, indent=2) + "\n")
    wheel = args.ninja_wheel or next(iter(sorted((ROOT / "build/kb-agreement/wheels").glob("ninja-*.whl"))), None)
    if wheel:
        (out / "wheels").mkdir()
        shutil.copyfile(wheel, out / "wheels" / Path(wheel).name)
    counts = {c: sum(1 for s in sample if s["class"] == c) for c in ("honest", "hybrid")}
    (out / "STAGE.json").write_text(json.dumps({
        "staged": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "corpus": str(corpus),
        "suite": str(suite), "levels": sorted(levels), "max_task_mib": args.max_task_mib,
        "why": "small and medium tasks only (inputs + parameters + outputs of one forward ≤ max_task_mib, "
               "measured on torch's meta device): the last run's big level-1 tasks (4-16 GiB) ran the GPU "
               "out of memory and the disk out of space at 6 judgements at once, and took ~100 s each",
        "agreement": {"honest": counts["honest"], "hybrid": counts["hybrid"],
                      "rule": "per class, one solution per task (tasks by name, ids sorted), then a second; "
                              "only solutions our converter reads"},
        "realworld": {"honest": len(rw), "rule": "honest, one per task then a second, ids not in the agreement "
                                                 "sample first; converter refusals kept"},
        "kernelbench_commit": commit}, indent=2) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: agreement {len(sample)} ({counts['honest']} honest, {counts['hybrid']} hybrid) of "
          f"{len({s['task_name'] for s in sample})} tasks; realworld {len(rw)} honest of "
          f"{len({s['task_name'] for s in rw})} tasks; KernelBench {commit[:7]}; {size / 2**20:.1f} MiB")
    if size > 20 * 2**20:
        sys.exit("the staging is over 20 MiB: lower the samples")
    bench = stage_bench(out, args.bench_count, args.bench_max_task_mib)
    print(f"{out / 'bench'}: {len(bench['files'])} problems for `bench --solver kernelbench:` (kb-bench)")
    return 0


def stage_bench(prepared: Path, count: int, max_task_mib: float) -> dict:
    """A KernelBench run folder for `cuda-agent bench --solver kernelbench:` (issue 47's Done-when) made
    from the staged agreement sample, in PREPARED/bench (replaced):
      run/level_{L}_problem_{P}_sample_0_kernel.py  the layout of KernelBench's scripts/generate_samples.py
                                                    (P: the task file's number prefix), one per problem;
      suite/levelL/<task>.py                        the chosen problems' tasks only, so that no problem of
                                                    the run's levels is missing;
      BENCH.json                                    file -> solution id, task, class, and the rule.
    The rule: light problems first — the staged tasks by size (inputs + parameters + outputs of one
    forward, task_mib) up to `max_task_mib`, then by name — `count` of them, one solution per problem
    (honest before hybrid, then ids sorted), so that the bench call fits in one short GPU call."""
    sample = jsonl(prepared / "sample.jsonl")
    if not sample:
        sys.exit(f"{prepared / 'sample.jsonl'} not found or empty: run `agreement.py stage` first")
    per_task: dict[str, dict] = {}
    def lightest(r: dict) -> tuple:
        return r.get("task_mib", 0.0), r["task_name"], r["class"] != "honest", r["id"]
    for r in sorted(sample, key=lightest):
        if r.get("task_mib", 0.0) <= max_task_mib:
            per_task.setdefault(r["task_name"], r)
    chosen = list(per_task.values())[:count]
    out = prepared / "bench"
    if out.exists():
        shutil.rmtree(out)
    (out / "run").mkdir(parents=True)
    files = []
    for r in chosen:
        level_dir, name = r["task_name"].split("/", 1)
        level, problem = int(level_dir.removeprefix("level")), int(name.split("_", 1)[0])
        task = out / "suite" / r["task_name"]
        task.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(prepared / "tasks" / f"{r['task_name']}.py", task.with_suffix(".py"))
        file = f"level_{level}_problem_{problem}_sample_0_kernel.py"
        shutil.copyfile(prepared / "solutions" / f"{r['id']}.py", out / "run" / file)
        files.append({"file": file, "id": r["id"], "task_name": r["task_name"], "class": r["class"],
                      "task_mib": r.get("task_mib")})
    info = {"rule": f"the {count} smallest staged tasks (task_mib <= {max_task_mib}), one solution each "
                    "(honest first, then ids sorted), from sample.jsonl",
            "layout": "KernelBench scripts/generate_samples.py run folder (sample 0)", "files": files}
    (out / "BENCH.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def stage_bench_cmd(args) -> int:
    info = stage_bench(Path(args.prepared), args.count, args.max_task_mib)
    classes = [f["class"] for f in info["files"]]
    print(f"{Path(args.prepared) / 'bench'}: {len(classes)} problems ({classes.count('honest')} honest, "
          f"{classes.count('hybrid')} hybrid) as a KernelBench run folder (run/) with their tasks (suite/)")
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


def device_lease():
    """Our judge's exclusive device lease (src/gpu/lease.cc: the gate, then the lock, flock'ed, under
    /tmp/cuda-agent-<uid>/leases/, key cuda-<CUDA_VISIBLE_DEVICES or all>): held by this process until
    it ends, so that nothing of ours runs on the GPU while KernelBench evaluates, and the reverse."""
    d = Path(os.environ.get("KB_LEASE_DIR") or f"/tmp/cuda-agent-{os.geteuid()}/leases")
    d.mkdir(parents=True, exist_ok=True)
    key = "cuda-" + re.sub(r"[^A-Za-z0-9-]", "_", os.environ.get("CUDA_VISIBLE_DEVICES") or "all")
    gate = os.open(d / f"{key}.gate", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    lock = os.open(d / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    t0 = time.monotonic()
    fcntl.flock(gate, fcntl.LOCK_EX)  # no new shared lease of ours starts while this one waits
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.close(gate)
    return lock, time.monotonic() - t0


def kb_compile(args) -> int:
    """One solution built by KernelBench's build_compile_cache into its own folder (CPU only)."""
    src = Path(args.solution).read_text()
    t0 = time.monotonic()
    if args.fake:
        time.sleep(float(os.environ.get("KB_FAKE_SECONDS", "0")))  # tests: a build that takes time
        Path(args.build_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.build_dir) / "fake.so").write_bytes(b"\0" * 4096)
        ok = int(hashlib.sha256(src.encode()).hexdigest(), 16) % 9 != 0
        print(json.dumps({"compiled": ok, "error": "" if ok else "FAKE build error", "fake": True,
                          "seconds": time.monotonic() - t0}))
        return 0
    ev = load_kernelbench(Path(args.prepared) / "kernelbench")
    ok, _out, err = ev.build_compile_cache(src, verbose=False, build_dir=args.build_dir)
    print(json.dumps({"compiled": bool(ok), "error": (err or "")[:500], "seconds": time.monotonic() - t0}))
    return 0


def fake_kernelbench(job: dict) -> dict:
    """The dry run's stand-in for eval_kernel_against_ref: a verdict made up from the id (no torch,
    no GPU), named as a fake in every row it makes."""
    h = int(hashlib.sha256(job["id"].encode()).hexdigest(), 16)
    correct = h % 5 != 0
    out = {"evaluator": FAKE_KB, "compiled": True, "correct": correct}
    if correct:
        out.update(runtime_ms=round(1 + h % 7, 3), ref_runtime_ms=round(1 + (h >> 8) % 9, 3),
                   excessive_speedup=False)
    return out


def kb_worker(args) -> int:
    """Imports torch and KernelBench's code, says ready, evaluates the one job read from stdin under
    our exclusive device lease."""
    if args.fake:
        print(json.dumps({"ready": True}), flush=True)
        job = json.loads(sys.stdin.readline())
        print(json.dumps({"id": job["id"], **fake_kernelbench(job), "seconds": 0.0}), flush=True)
        return 0
    ev = load_kernelbench(Path(args.prepared) / "kernelbench")
    import torch
    torch.zeros(1, device="cuda:0")  # the CUDA context before the lease: not on the lease's clock
    torch.cuda.synchronize()
    print(json.dumps({"ready": True}), flush=True)
    job = json.loads(sys.stdin.readline())
    lock, waited = device_lease()
    t0 = time.monotonic()
    out = {"id": job["id"], "lease_wait_s": round(waited, 2)}
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
    out["seconds"] = round(time.monotonic() - t0, 2)
    os.close(lock)
    print(json.dumps(out), flush=True)
    return 0


# ---------------------------------------------------------------- our judge


def our_binary(given: str | None) -> str:
    for b in (given, os.environ.get("CUDA_AGENT_BIN"), ROOT / "dist/bin/cuda-agent", ROOT / "build/cuda-agent"):
        if b and Path(b).is_file():
            return str(b)
    sys.exit("no cuda-agent binary: pass --binary (dist/bin/cuda-agent from scripts/bundle.sh, or build/)")


def judge_ours(binary: str, prepared: Path, s: dict, args, policy: str, timeout: float) -> dict:
    t0 = time.monotonic()
    if args.dry_run and args.fake_ours:
        time.sleep(min(timeout, float(os.environ.get("KB_FAKE_SECONDS", "0"))))  # tests: a judgement's time
        h = int(hashlib.sha256(("ours" + s["id"]).encode()).hexdigest(), 16)
        correct = h % 4 != 0
        return {"judge": FAKE_OURS, "outcome": "verdict", "correct": correct, "stage": "profile",
                "error_kind": None if correct else ["mismatch", "static_rule", "sampled_mismatch", "build"][h % 4],
                "reason": "FAKE", "speedup": round(0.5 + (h % 11) / 4, 3) if correct else None, "seconds": 0.0}
    argv = [binary, "judge", "--task", str(prepared / "tasks" / f"{s['task_name']}.py"),
            "--candidate", str(prepared / "solutions" / f"{s['id']}.py"), "--json", "--policy", policy,
            "--baselines", "eager", "--timeout", str(int(args.candidate_timeout))]
    if args.cache_dir:
        argv += ["--cache-dir", args.cache_dir]  # else $CUDA_AGENT_CACHE_DIR (gpu_session.sh's, seeded)
    argv += ["--device", "cpu", "--until", "build"] if args.dry_run else ["--device", "cuda"]
    try:
        p = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=max(1.0, timeout))
        r = json.loads(p.stdout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s (the run's deadline or --judge-timeout)",
                "seconds": round(time.monotonic() - t0, 2)}
    except ValueError:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}", "seconds": round(time.monotonic() - t0, 2)}
    timing = r.get("timing") or {}
    viol = r.get("violations") or []
    return {"outcome": r.get("outcome"), "reward": r.get("reward"), "correct": bool(r.get("correct")),
            "stage": r.get("stage"), "error_kind": r.get("error_kind"), "reason": (r.get("reason") or "")[:300],
            "rule": (viol[0].get("rule") if viol and isinstance(viol[0], dict) else None),
            "time_us": (timing.get("candidate") or {}).get("time_us"),
            "eager_us": (timing.get("eager") or {}).get("time_us"),
            "speedup": timing.get("speedup_vs_eager"), "seconds": round(time.monotonic() - t0, 2),
            "weights": (r.get("verify") or {}).get("weights")}  # by_name or by_position (docs/policies.md)


class Worker:
    """A kb-worker process started ahead: it imports while the previous one evaluates."""

    def __init__(self, args):
        self.p = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "kb-worker", "--prepared", str(args.prepared),
             "--correct-trials", str(args.correct_trials), "--perf-trials", str(args.perf_trials)]
            + (["--fake"] if args.dry_run else []),
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


def load_sample(prepared: Path, name: str) -> list[dict]:
    """The sample with its classes interleaved (honest, hybrid, honest, ...), so that a deadline cuts
    both alike; both sides take it in this order, so that a cut-off run leaves pairs."""
    sample = jsonl(prepared / name)
    rank: dict[str, int] = {}
    keyed = []
    for i, s in enumerate(sample):
        rank[s["class"]] = rank.get(s["class"], -1) + 1
        keyed.append((rank[s["class"]], s["class"], i, s))
    return [k[3] for k in sorted(keyed, key=lambda k: k[:3])]


class Clock:
    def __init__(self, args):
        self.t0 = time.monotonic()
        self.soft = self.t0 + args.deadline_s  # nothing starts after it
        self.hard = self.soft + args.grace_s  # everything is killed at it

    def left(self) -> float:
        return self.hard - time.monotonic()

    def may_start(self) -> bool:
        return time.monotonic() < self.soft

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 1)


def judge_guarded(why, binary, prepared, s, args, clock) -> dict:
    """Our verdict on solution `s` ({"error": why} when it may not start); an exception of ours is recorded
    as that solution's error: one solution's trouble must not end the run."""
    if why:
        return {"error": why}
    try:
        return judge_ours(binary, prepared, s, args, args.policy, min(args.judge_timeout, clock.left()))
    except Exception as e:  # noqa: BLE001 - recorded, see above
        return {"error": f"agreement.py: {type(e).__name__}: {e}"[:300]}


def start_run(args, sample: list) -> tuple:
    """What a GPU call's run starts with: (the staging folder, the sample cut to --limit, the results and
    work folders made, the call's clock, our binary or the named fake)."""
    sample = sample[: args.limit] if args.limit else sample
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    binary = our_binary(args.binary) if not (args.dry_run and args.fake_ours) else FAKE_OURS
    return Path(args.prepared), sample, out, work, Clock(args), binary


# The classes in which the two sides' verdicts disagree (rejudge rule `disagreed`).
DISAGREEING = {"we_fail", "they_fail", "we_refuse_hybrid", "we_refuse_honest", "we_catch", "timing_difference"}


def rejudge_ids(spec: str, sample: list[dict], resume: Path) -> list[str]:
    """The solutions whose verdict of ours `run --resume DIR --rejudge SPEC` judges again (every other
    verdict of the earlier call is kept). SPEC is a comma-separated list of solution ids and rules:
      disagreed   the earlier call's disagreements (both sides reached a verdict and the class is one of
                  DISAGREEING: we_fail, they_fail, we_refuse_*, we_catch, timing_difference);
      kind:KIND   our earlier verdicts of that error kind (kind:state_dict: the weights' loading);
      unjudged    the solutions without an earlier verdict of ours (deadline, timeout, not run).
    In the sample's run order; an id not in the sample or an unknown rule stops the run, saying so."""
    prev_o = {r["id"]: r for r in jsonl(resume / "ours.jsonl") if r.get("outcome") == "verdict"}
    prev_t = {r["id"]: r for r in jsonl(resume / "theirs.jsonl") if "correct" in r}
    ids = {s["id"] for s in sample}
    chosen: set[str] = set()
    for token in (t.strip() for t in spec.split(",")):
        if not token:
            continue
        if token == "disagreed":
            chosen |= {s["id"] for s in sample if s["id"] in prev_o and s["id"] in prev_t
                       and classify(s, prev_o[s["id"]], prev_t[s["id"]]) in DISAGREEING}
        elif token.startswith("kind:"):
            chosen |= {i for i, o in prev_o.items() if i in ids and o.get("error_kind") == token[5:]}
        elif token == "unjudged":
            chosen |= ids - set(prev_o)
        elif token in ids:
            chosen.add(token)
        else:
            sys.exit(f"--rejudge: {token!r} is neither a solution id of the sample nor a rule (disagreed, "
                     "kind:KIND, unjudged); write ids and rules separated by commas")
    return [s["id"] for s in sample if s["id"] in chosen]


def run(args) -> int:
    args.prepared = Path(args.prepared).resolve()
    prepared, sample, out, work, clock, binary = start_run(args, load_sample(args.prepared, "sample.jsonl"))
    source = json.loads((prepared / "kernelbench" / "SOURCE.json").read_text())
    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "kernelbench_commit": source["commit"],
           "policy": args.policy, "dry_run": args.dry_run, "jobs": args.jobs, "compile_jobs": args.compile_jobs,
           "correct_trials": args.correct_trials, "perf_trials": args.perf_trials,
           "ninja": ensure_ninja(prepared, work)}
    # KernelBench's code must load here (and, on the GPU, find CUDA) before anything is spent on it.
    ev = load_kernelbench(prepared / "kernelbench")
    try:
        import torch
        env["torch"] = torch.__version__
    except ImportError:
        if not args.dry_run:
            raise
        torch, env["torch"] = None, "absent (dry run)"
    if not args.dry_run:
        if not torch.cuda.is_available():
            sys.exit("CUDA is not available: KernelBench's evaluation needs it (use --dry-run on a CPU machine)")
        env["gpu"] = torch.cuda.get_device_name(0)
    else:
        env["gpu"] = "none (dry run on the CPU; KernelBench's side is FAKE)"
    if args.rejudge:
        if not args.resume:
            sys.exit("--rejudge needs --resume DIR: the earlier call's results, whose other verdicts are kept")
        env["rejudge"] = {"spec": args.rejudge, "ids": rejudge_ids(args.rejudge, sample, Path(args.resume))}
    (out / "env.json").write_text(json.dumps(env, indent=2) + "\n")
    for name in ("ours.jsonl", "theirs.jsonl", "progress.log"):
        (out / name).unlink(missing_ok=True)  # one run per folder: no stale rows
    (out / "sample.jsonl").write_text("".join(json.dumps(x) + "\n" for x in sample))  # the report's, in run order
    ours_out, theirs_out = Appender(out / "ours.jsonl"), Appender(out / "theirs.jsonl")
    log_lock = threading.Lock()

    def log(msg: str):
        line = f"[{clock.now():6.1f} s, {free_gib(work):.0f} GiB free] {msg}"
        with log_lock:
            print(line, flush=True)
            with open(out / "progress.log", "a") as f:
                f.write(line + "\n")

    log(f"KernelBench {source['commit'][:7]} ({ev.__name__}) loaded; {len(sample)} solutions; ours {binary}; "
        f"deadline {args.deadline_s:.0f} s + {args.grace_s:.0f} s")
    builds = work / "kb-builds"
    report_lock = threading.Lock()

    def refresh():
        with report_lock:
            try:
                write_report(prepared, out, "sample.jsonl")
            except Exception as e:  # noqa: BLE001 - a report bug must not stop the measurements
                log(f"report failed: {type(e).__name__}: {e}")

    def blocked() -> str | None:
        if not clock.may_start():
            return "not run: deadline"
        if free_gib(work) < args.min_free_gib:
            return f"not run: disk ({free_gib(work):.1f} GiB free < {args.min_free_gib})"
        return None

    def our_job(s):
        why = blocked()
        res = judge_guarded(why, binary, prepared, s, args, clock)
        ours_out.add({"id": s["id"], "t_end_s": clock.now(), **res})
        log(f"ours {s['id']}: {'correct' if res.get('correct') else res.get('error_kind') or res.get('error')} "
            f"({res.get('seconds', 0):.0f} s)")
        refresh()

    compiled: queue.Queue = queue.Queue()

    def compile_job(s):
        try:
            compile_one(s)
        except Exception as e:  # noqa: BLE001 - the evaluation loop waits for one result per solution
            compiled.put((s, {"error": f"agreement.py: {type(e).__name__}: {e}"[:300]}))

    def compile_one(s):
        bdir = builds / s["id"]
        why = blocked()
        if why:
            compiled.put((s, {"error": why}))
            return
        # nice: KernelBench's builds only have to stay ahead of its one-at-a-time evaluations; our
        # judgements' builds get the CPUs first.
        argv = ["nice", "-n", "10", sys.executable, str(Path(__file__).resolve()), "kb-compile", "--prepared", str(prepared),
                "--solution", str(prepared / "solutions" / f"{s['id']}.py"), "--build-dir", str(bdir)]
        if args.dry_run:
            argv.append("--fake")
        env_c = dict(os.environ, MAX_JOBS=str(args.compile_threads), TORCH_EXTENSIONS_DIR=str(bdir))
        timeout = max(1.0, min(args.compile_timeout, clock.left()))
        try:
            p = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout, env=env_c,
                               start_new_session=True)
            last = [x for x in p.stdout.splitlines() if x.startswith("{")]
            res = json.loads(last[-1]) if last else {"error": f"kb-compile exit {p.returncode}: "
                                                               f"{p.stderr.strip()[-300:]}"}
        except subprocess.TimeoutExpired:
            res = {"error": f"KernelBench's build timed out after {timeout:.0f} s"}
        compiled.put((s, res))

    def eval_loop():
        """KernelBench's evaluations, one at a time, in the order the builds finish."""
        nxt = Worker(args)
        for _ in range(n_kb):
            s, pre = compiled.get()
            bdir = builds / s["id"]
            if "compiled" not in pre:
                res = {"error": pre.get("error") or "KernelBench's build did not run"}
            elif not pre["compiled"]:
                # KernelBench's own build refused it: eval_kernel_against_ref would say compiled=False.
                res = {"compiled": False, "correct": False, "error_compile": pre.get("error", "")[:300]}
            elif not clock.may_start():
                res = {"error": "not run: deadline"}
            else:
                try:
                    w, nxt = nxt, Worker(args)
                    job = {"id": s["id"], "task": str(prepared / "tasks" / f"{s['task_name']}.py"),
                           "solution": str(prepared / "solutions" / f"{s['id']}.py"), "build_dir": str(bdir)}
                    res = w.evaluate(job, max(1.0, min(args.eval_timeout, clock.left())))
                except Exception as e:  # noqa: BLE001 - recorded; the next solution goes on
                    res = {"error": f"agreement.py: {type(e).__name__}: {e}"[:300]}
            res["precompile"] = pre
            if args.dry_run:
                res["evaluator"] = FAKE_KB
            shutil.rmtree(bdir, ignore_errors=True)  # disk hygiene: its build is no longer needed
            res["build_deleted"] = not bdir.exists()
            theirs_out.add({"id": s["id"], "t_end_s": clock.now(), "free_gib": round(free_gib(work), 1), **res})
            log(f"KernelBench {s['id']}: "
                f"{'correct' if res.get('correct') else 'not compiled' if res.get('compiled') is False else 'wrong' if 'correct' in res else res.get('error')}"
                f" ({res.get('seconds', 0)} s)")
            refresh()
        nxt.kill()

    ours_todo, kb_todo = list(sample), list(sample)
    if args.resume:  # an earlier call's verdicts (carried back, e.g. .gpu/kb-results-1) are kept
        prev_o = {r["id"]: r for r in jsonl(Path(args.resume) / "ours.jsonl") if r.get("outcome") == "verdict"}
        prev_t = {r["id"]: r for r in jsonl(Path(args.resume) / "theirs.jsonl") if "correct" in r}
        again = set(env["rejudge"]["ids"]) if args.rejudge else set()
        for s in sample:
            if s["id"] in prev_o and s["id"] not in again:
                ours_out.add({**prev_o[s["id"]], "resumed_from": str(args.resume)})
            if s["id"] in prev_t:
                theirs_out.add({**prev_t[s["id"]], "resumed_from": str(args.resume)})
        if args.rejudge:  # ours judges only the chosen ones; KernelBench's side only what it lacks of them
            ours_todo = [s for s in sample if s["id"] in again]
            kb_todo = [s for s in ours_todo if s["id"] not in prev_t]
        else:
            ours_todo = [s for s in sample if s["id"] not in prev_o]
            kb_todo = [s for s in sample if s["id"] not in prev_t]
        log(f"resumed from {args.resume}: {len(prev_o) - len(again & set(prev_o))} of ours, {len(prev_t)} of "
            f"KernelBench's kept" + (f"; ours re-judges {len(again)} ({args.rejudge}): {sorted(again)}"
                                     if args.rejudge else ""))
    n_kb = len(kb_todo)
    with cf.ThreadPoolExecutor(args.jobs) as ours_pool, cf.ThreadPoolExecutor(args.compile_jobs) as kb_pool:
        evaluator = threading.Thread(target=eval_loop, daemon=True)
        evaluator.start()
        futures = [ours_pool.submit(our_job, s) for s in ours_todo] + [kb_pool.submit(compile_job, s) for s in kb_todo]
        for f in cf.as_completed(futures):
            f.result()
        evaluator.join(max(1.0, clock.left()))
    shutil.rmtree(builds, ignore_errors=True)
    summary = write_report(prepared, out, "sample.jsonl")
    log(f"done: {json.dumps({k: summary[k] for k in ('solutions', 'compared', 'neither_flags', 'correctness_agreement', 'median_speedup_ratio_ours_over_theirs')})}")
    print(f"{out / 'table.md'}; total {clock.now():.0f} s")
    return 0


def realworld(args) -> int:
    """Issue 46.1's whole-judge numbers: realworld.jsonl's honest solutions through the whole judge."""
    args.prepared = Path(args.prepared).resolve()
    prepared, sample, out, work, clock, binary = start_run(args, jsonl(args.prepared / "realworld.jsonl"))
    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "policy": args.policy,
           "dry_run": args.dry_run, "jobs": args.jobs}
    if args.dry_run:
        env["gpu"] = "none (dry run on the CPU)"
    else:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], check=False, capture_output=True,
                           text=True)
        env["gpu"] = p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else "?"
    (out / "env.json").write_text(json.dumps(env, indent=2) + "\n")
    (out / "realworld.jsonl").unlink(missing_ok=True)
    (out / "realworld.jsonl.sample").write_text("".join(json.dumps(x) + "\n" for x in sample))  # the report's
    rows = Appender(out / "realworld.jsonl")
    lock = threading.Lock()

    def job(s):
        if not clock.may_start():
            why = "not run: deadline"
        elif free_gib(work) < args.min_free_gib:
            why = f"not run: disk ({free_gib(work):.1f} GiB free)"
        else:
            why = None
        res = judge_guarded(why, binary, prepared, s, args, clock)
        rows.add({"id": s["id"], "t_end_s": clock.now(), **res})
        print(f"[{clock.now():6.1f} s] {s['id']}: "
              f"{'accepted' if res.get('correct') else res.get('error_kind') or res.get('error')}", flush=True)
        with lock:
            write_realworld_report(prepared, out)

    todo = list(sample)
    if args.resume:
        prev = {r["id"]: r for r in jsonl(Path(args.resume) / "realworld.jsonl") if r.get("outcome") == "verdict"}
        for s in sample:
            if s["id"] in prev:
                rows.add({**prev[s["id"]], "resumed_from": str(args.resume)})
        todo = [s for s in sample if s["id"] not in prev]
        print(f"resumed from {args.resume}: {len(prev)} verdicts kept", flush=True)
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        for f in cf.as_completed([pool.submit(job, s) for s in todo]):
            f.result()
    summary = write_realworld_report(prepared, out)
    print(json.dumps(summary))
    print(f"{out / 'realworld.md'}; total {clock.now():.0f} s")
    return 0


# ---------------------------------------------------------------- report


def classify(s: dict, ours: dict, theirs: dict) -> str:
    if ours.get("outcome") != "verdict" or "correct" not in theirs:
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
        if kind in STATIC_KINDS:
            return "we_refuse_hybrid" if s["class"] == "hybrid" else "we_refuse_honest"
        if kind in DEFENCE_KINDS:
            return "we_catch"
        return "we_fail"
    return "they_fail"


# Each disagreement's cause category (issue 47: a hack we catch, a false positive of ours, a timing
# difference, a task/infrastructure error), as far as the verdicts alone say; the lead reviews each.
CAUSE = {
    "timing_difference": "timing difference (whose is right: see both times)",
    "we_refuse_honest": "false positive of ours? (a static rule or the converter refuses what KernelBench runs)",
    "we_refuse_hybrid": "false positive of ours? under --policy kernelbench unless the rule is one KernelBench's "
                        "own checker has (compilers, backend switches, try/except fallback)",
    "we_catch": "a hack we catch? (a run-time defence KernelBench lacks: review the kernel)",
    "we_fail": "ours finds it wrong, KernelBench passes it (more and fresher inputs, or tolerance: review)",
    "they_fail": "KernelBench fails it, ours passes it (review)",
    "not_compared": "task/infrastructure error or not run",
}


# Our static rules that KernelBench's own rules have too (issue 47.3: no try/except fallback to torch,
# no backend switches): a refusal by one of them is no false positive of ours.
KB_SHARED_RULES = {"try_except", "backend_flags", "global_flags"}


def cause_of(r: dict) -> str:
    if r["class"] in ("we_refuse_hybrid", "we_refuse_honest") and r["ours"].get("rule") in KB_SHARED_RULES:
        return f"KernelBench's rules forbid it too ({r['ours']['rule']}): its evaluator does not check them"
    if r["class"] == "not_compared":
        o, t = r["ours"], r["theirs"]
        side = []
        if o.get("outcome") != "verdict":
            side.append(f"ours: {o.get('error_kind') or o.get('error') or o.get('outcome')}")
        if "correct" not in t:
            side.append(f"KernelBench: {t.get('error')}")
        return "task/infrastructure error (" + "; ".join(str(x)[:80] for x in side) + ")"
    return CAUSE.get(r["class"], "?")


def speedup_theirs(t: dict):
    if t.get("correct") and t.get("runtime_ms") and t.get("ref_runtime_ms"):
        return t["ref_runtime_ms"] / t["runtime_ms"]
    return None


def neither_flags(ours: dict, theirs: dict) -> bool:
    return ours.get("error_kind") not in DEFENCE_KINDS and not theirs.get("excessive_speedup")


def fmt(x, spec=".2f"):
    return "–" if x is None else format(x, spec)


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)


def pct_of(frac, n) -> str:
    return "–" if frac is None else f"{frac * 100:.1f}% of {n}"


def cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdict_ours(o: dict) -> str:
    if o.get("outcome") == "verdict":
        return "correct" if o.get("correct") else f"fail: {o.get('error_kind')}"
    return f"no verdict: {o.get('error_kind') or o.get('error') or o.get('outcome') or 'not run'}"


def verdict_theirs(t: dict) -> str:
    if t.get("correct"):
        v = "correct"
    elif t.get("compiled") is False:
        v = "not compiled"
    elif "correct" in t:
        v = "wrong" if not (t.get("metadata") or {}).get("runtime_error") else "runtime error"
    else:
        v = f"no verdict: {t.get('error', 'not run')}"
    return v + (" (excessive speedup flagged)" if t.get("excessive_speedup") else "")


def summarise(rows: list[dict]) -> dict:
    compared = [r for r in rows if r["class"] != "not_compared"]
    clean = [r for r in compared if neither_flags(r["ours"], r["theirs"])]
    agree = [r for r in clean if r["ours"]["correct"] == r["theirs"]["correct"]]
    built = [r for r in clean if r["ours"].get("error_kind") != "build" and r["theirs"].get("compiled") is not False]
    agree_built = [r for r in built if r["ours"]["correct"] == r["theirs"]["correct"]]
    ratios = [r["ours"]["speedup"] / speedup_theirs(r["theirs"]) for r in clean
              if r["ours"].get("correct") and r["ours"].get("speedup") and speedup_theirs(r["theirs"])]
    classes: dict[str, int] = {}
    for r in rows:
        classes[r["class"]] = classes.get(r["class"], 0) + 1
    within = [x for x in ratios if abs(math.log(x)) <= math.log(1 + TIMING_TOLERANCE)]
    return {
        "solutions": len(rows), "compared": len(compared), "neither_flags": len(clean),
        "correctness_agreement": len(agree) / len(clean) if clean else None, "agree": len(agree),
        "both_built": len(built), "correctness_agreement_both_built": len(agree_built) / len(built) if built else None,
        "both_correct_timed": len(ratios),
        "median_speedup_ratio_ours_over_theirs": statistics.median(ratios) if ratios else None,
        "ratio_p25": quantile(ratios, 0.25) if ratios else None, "ratio_p75": quantile(ratios, 0.75) if ratios else None,
        "ratio_min": min(ratios) if ratios else None, "ratio_max": max(ratios) if ratios else None,
        "ratios_within_10pct": len(within), "classes": classes}


def write_report(prepared: Path, results: Path, sample_name: str = "sample.jsonl") -> dict:
    """table.md and summary.json in `results` from its ours.jsonl and theirs.jsonl (the last line per
    id wins) and the prepared sample; solutions without a line are `not run`."""
    sample = jsonl(results / sample_name) or jsonl(Path(prepared) / sample_name)  # the run's own copy first
    ours = {r["id"]: r for r in jsonl(results / "ours.jsonl")}
    theirs = {r["id"]: r for r in jsonl(results / "theirs.jsonl")}
    env = json.loads((results / "env.json").read_text()) if (results / "env.json").is_file() else {}
    rows = []
    for s in sample:
        o, t = ours.get(s["id"], {"error": "not run"}), theirs.get(s["id"], {"error": "not run"})
        rows.append({"id": s["id"], "task_name": s["task_name"], "corpus_class": s["class"], "ours": o,
                     "theirs": t, "class": classify(s, o, t)})
    summary = summarise(rows)
    fake = env.get("dry_run") or any(FAKE_KB == r["theirs"].get("evaluator") for r in rows)
    summary.update(env=env, fake=bool(fake))
    (results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    with open(results / "agreement.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    n_h = sum(1 for s in sample if s["class"] == "honest")
    pct = summary["correctness_agreement"]
    lines = []
    if fake:
        lines += ["**DRY RUN: KernelBench's side is a FAKE (no evaluation happened); these are not measurements.**", ""]
    lines += [
        f"### KernelBench's evaluator beside ours: {len(rows)} public solutions ({n_h} honest, {len(rows) - n_h} hybrid)",
        "",
        f"{env.get('gpu', '?')}, {env.get('date', '?')}; KernelBench {str(env.get('kernelbench_commit', '?'))[:7]} "
        f"`eval_kernel_against_ref` (num_correct_trials={env.get('correct_trials', '?')}, "
        f"num_perf_trials={env.get('perf_trials', '?')}, cuda_event, one at a time under our exclusive device "
        f"lease); ours `cuda-agent judge --policy {env.get('policy', '?')} --baselines eager`, "
        f"{env.get('jobs', '?')} at once. `bash bench/gpu_session.sh kb-agreement`."
        + (f" Verdicts of an earlier call kept; ours judged again for {len(env['rejudge']['ids'])} "
           f"(`--rejudge {env['rejudge']['spec']}`): {', '.join(env['rejudge']['ids'])}."
           if env.get("rejudge") else ""),
        "",
        "| measure | value |", "|---|---|",
        f"| solutions / compared (both sides reached a verdict) | {len(rows)} / {summary['compared']} |",
        f"| neither side finds a problem (no rule or defence of ours, no excessive-speedup flag of theirs) | {summary['neither_flags']} |",
        f"| **correctness agreement** on those | **{fmt(pct * 100 if pct is not None else None, '.1f')}%** "
        f"({summary['agree']}/{summary['neither_flags']}; target ≥ 95%) |",
        f"| correctness agreement where both built it | {pct_of(summary['correctness_agreement_both_built'], summary['both_built'])} |",
        f"| **median speedup ratio** ours / KernelBench's (both correct) | **{fmt(summary['median_speedup_ratio_ours_over_theirs'], '.3f')}** "
        f"over {summary['both_correct_timed']} (target within 10%) |",
        "| spread of the ratio: p25–p75, min–max | " + (
            f"{summary['ratio_p25']:.3f}–{summary['ratio_p75']:.3f}, {summary['ratio_min']:.3f}–{summary['ratio_max']:.3f}"
            if summary["both_correct_timed"] else "–") + " |",
        f"| ratios within 10% | {summary['ratios_within_10pct']}/{summary['both_correct_timed']} |",
        "| classes | " + ", ".join(f"{k} {v}" for k, v in sorted(summary["classes"].items())) + " |",
        "", "#### Every solution", "",
        "| solution | class | task | ours | ours × eager | KernelBench | KB × ref | agreement |",
        "|---|---|---|---|---:|---|---:|---|"]
    for r in rows:
        o, t = r["ours"], r["theirs"]
        lines.append(f"| {r['id']} | {r['corpus_class']} | {r['task_name']} | {cell(verdict_ours(o))} | "
                     f"{fmt(o.get('speedup'))} | {cell(verdict_theirs(t))} | {fmt(speedup_theirs(t))} | {r['class']} |")
    def unrun(x):
        return str(x.get("error", "")).startswith("not run")
    dis = [r for r in rows if r["class"] not in ("agree_correct", "agree_fail")
           and not (r["class"] == "not_compared" and (unrun(r["ours"]) or unrun(r["theirs"])))]
    n_unrun = sum(1 for r in rows if r["class"] == "not_compared" and (unrun(r["ours"]) or unrun(r["theirs"])))
    lines += ["", f"#### Every disagreement ({len(dis)}), with its cause category", "",
              f"({n_unrun} solution(s) not run by a side — deadline or disk — are not listed.)", "",
              "| solution | class | cause | ours: reason | KernelBench: what it says |", "|---|---|---|---|---|"]
    for r in dis:
        o, t = r["ours"], r["theirs"]
        why_o = o.get("reason") or o.get("error") or ""
        if o.get("rule"):
            why_o = f"[{o['rule']}] {why_o}"
        if r["class"] == "timing_difference":
            why_o = f"{fmt(o.get('time_us'), '.1f')} µs vs eager {fmt(o.get('eager_us'), '.1f')} µs"
            why_t = f"{fmt(t.get('runtime_ms'), '.4f')} ms vs ref {fmt(t.get('ref_runtime_ms'), '.4f')} ms"
        else:
            meta = t.get("metadata") or {}
            why_t = (t.get("error") or t.get("error_compile") or meta.get("runtime_error") or
                     meta.get("correctness_issue") or meta.get("max_difference") or verdict_theirs(t))
        lines.append(f"| {r['id']} | {r['class']} | {cell(cause_of(r))} | {cell(str(why_o)[:200])} | "
                     f"{cell(str(why_t)[:160])} |")
    (results / "table.md").write_text("\n".join(lines) + "\n")
    return summary


# The reason category of a refusal by the whole judge (issue 46.1's list of honest refusals).
def refusal_category(o: dict) -> str:
    kind = o.get("error_kind")
    if o.get("outcome") != "verdict":
        return "infrastructure (no verdict: " + str(kind or o.get("error") or o.get("outcome") or "not run")[:60] + ")"
    if kind == "single_file":
        return "converter: load_inline could not build it either"
    if kind in ("static_rule", "forbidden_op", "tampering", "missing_model_new"):
        return "static rule (false positive? review)"
    if kind in ("build", "syntax_error"):
        return "build: the solution does not compile here"
    if kind in ("mismatch", "output_type"):
        return "wrong output (the full checks)"
    if kind in ("sampled_mismatch", "timed_mismatch"):
        return "wrong on some inputs (sampled / timed-call checks: flaky or racy)"
    if kind in ("import", "construct", "state_dict", "forward", "crash", "oom", "timeout"):
        return f"runtime failure ({kind})"
    if kind in DEFENCE_KINDS:
        return f"run-time defence ({kind})"
    return f"other ({kind})"


def write_realworld_report(prepared: Path, results: Path) -> dict:
    sample = jsonl(results / "realworld.jsonl.sample") or jsonl(Path(prepared) / "realworld.jsonl")
    got = {r["id"]: r for r in jsonl(results / "realworld.jsonl")}
    env = json.loads((results / "env.json").read_text()) if (results / "env.json").is_file() else {}
    rows = [(s, got.get(s["id"], {"error": "not run"})) for s in sample]
    judged = [(s, o) for s, o in rows if o.get("outcome") == "verdict"]
    accepted = [(s, o) for s, o in judged if o.get("correct")]
    static_pass = [(s, o) for s, o in judged if o.get("error_kind") not in STATIC_KINDS]
    cats: dict[str, int] = {}
    for s, o in rows:
        if not o.get("correct"):
            c = refusal_category(o)
            cats[c] = cats.get(c, 0) + 1
    fake = bool(env.get("dry_run"))
    summary = {"solutions": len(rows), "verdicts": len(judged), "accepted": len(accepted),
               "static_pass": len(static_pass), "refusal_categories": cats, "env": env, "fake": fake}
    (results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = []
    if fake:
        lines += ["**DRY RUN (CPU, --until build or FAKE): not measurements.**", ""]
    lines += [f"### Honest real-world solutions through the whole judge ({env.get('gpu', '?')}, {env.get('date', '?')})", "",
              f"`cuda-agent judge --policy {env.get('policy', '?')} --baselines eager`, {env.get('jobs', '?')} at once "
              "(`bash bench/gpu_session.sh kb-realworld`); honest = our corpus's class (issue 46: our kernels do all the work).", "",
              "| measure | n |", "|---|---:|",
              f"| honest solutions in the sample | {len(rows)} |",
              f"| reached a verdict | {len(judged)} |",
              f"| passed the static stage (of the verdicts) | {len(static_pass)} |",
              f"| **accepted by the whole judge** (correct, timed) | **{len(accepted)}** |", "",
              "| refusal category | n |", "|---|---:|"]
    lines += [f"| {cell(k)} | {v} |" for k, v in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))]
    lines += ["", "| solution | task | verdict | reward | × eager | category | reason |", "|---|---|---|---:|---:|---|---|"]
    for s, o in rows:
        v = "accepted" if o.get("correct") else verdict_ours(o)
        cat = "" if o.get("correct") else refusal_category(o)
        reason = o.get("reason") or o.get("error") or ""
        if o.get("rule"):
            reason = f"[{o['rule']}] {reason}"
        lines.append(f"| {s['id']} | {s['task_name']} | {cell(v)} | {fmt(o.get('reward'), '')} | {fmt(o.get('speedup'))} | "
                     f"{cell(cat)} | {cell('' if o.get('correct') else str(reason)[:180])} |")
    (results / "realworld.md").write_text("\n".join(lines) + "\n")
    return summary


def report(args) -> int:
    results = Path(args.results)
    if args.realworld:
        s = write_realworld_report(Path(args.prepared), results)
        print((results / "realworld.md").read_text())
    else:
        s = write_report(Path(args.prepared), results)
        print((results / "table.md").read_text())
    return 0 if s["solutions"] else 1


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("stage", "prepare"):
        p = sub.add_parser(name, help="choose the samples and copy what the GPU machine needs into --out"
                           + (" (the old name of stage)" if name == "prepare" else ""))
        p.add_argument("--kernelbench", default=default_mirror(), help="KernelBench mirror (git dir or checkout)")
        p.add_argument("--corpus", default=str(ROOT / "build/realworld"))
        p.add_argument("--suite", default=str(ROOT.parent / "shared/kernelbench"))
        p.add_argument("--honest", type=int, default=28, help="honest solutions in the agreement sample")
        p.add_argument("--hybrid", type=int, default=24, help="hybrid solutions in the agreement sample")
        p.add_argument("--realworld", type=int, default=48, help="honest solutions for the whole-judge run")
        p.add_argument("--levels", default="1,2", help="level 3's models make KernelBench's trials slow")
        p.add_argument("--max-task-mib", type=float, default=1024,
                       help="largest task: inputs + parameters + outputs of one forward (meta device)")
        p.add_argument("--out", default=str(ROOT / ".gpu/kb"))
        p.add_argument("--ninja-wheel", help="ninja's wheel (default: build/kb-agreement/wheels/ninja-*.whl)")
        p.add_argument("--bench-count", type=int, default=16, help="problems of the kb-bench run folder")
        p.add_argument("--bench-max-task-mib", type=float, default=300, help="largest task of the kb-bench run")

    def common(p, jobs, deadline, policy):
        p.add_argument("--prepared", default=str(ROOT / ".gpu/kb"))
        p.add_argument("--out", required=True)
        p.add_argument("--work", default="/tmp/kb-agreement-work", help="build folders, the carried ninja")
        p.add_argument("--binary", help="cuda-agent (default: $CUDA_AGENT_BIN, dist/bin, build/)")
        p.add_argument("--cache-dir", help="our judge's --cache-dir (default: $CUDA_AGENT_CACHE_DIR)")
        p.add_argument("--policy", default=policy)
        p.add_argument("--jobs", type=int, default=jobs, help="our judgements at once")
        p.add_argument("--deadline-s", type=float, default=deadline, help="nothing starts after this")
        p.add_argument("--grace-s", type=float, default=30, help="everything still running is killed this much later")
        p.add_argument("--judge-timeout", type=float, default=240)
        p.add_argument("--candidate-timeout", type=float, default=120, help="our judge's --timeout")
        p.add_argument("--min-free-gib", type=float, default=6)
        p.add_argument("--limit", type=int, default=0)
        p.add_argument("--dry-run", action="store_true",
                       help="CPU: ours --device cpu --until build, KernelBench's side FAKE")
        p.add_argument("--fake-ours", action="store_true", help="with --dry-run: ours FAKE too")
        p.add_argument("--resume", help="a results folder of an earlier call (carried back): its verdicts are kept, "
                       "the rest judged")

    r = sub.add_parser("run", help="the agreement run: both evaluators on sample.jsonl")
    common(r, 3, 470, "kernelbench")
    r.add_argument("--rejudge", help="with --resume: judge only these again on our side, keep every other earlier "
                   "verdict: solution ids and rules, comma-separated (disagreed, kind:KIND, unjudged)")
    r.add_argument("--compile-jobs", type=int, default=8, help="KernelBench's builds at once")
    r.add_argument("--compile-threads", type=int, default=2, help="MAX_JOBS of each KernelBench build")
    r.add_argument("--compile-timeout", type=float, default=240)
    r.add_argument("--correct-trials", type=int, default=5, help="KernelBench's num_correct_trials")
    r.add_argument("--perf-trials", type=int, default=20, help="KernelBench's num_perf_trials")
    r.add_argument("--eval-timeout", type=float, default=90)
    w = sub.add_parser("realworld", help="the honest real-world sample through the whole judge")
    common(w, 3, 480, "strict")
    for name in ("report", "report-realworld"):
        p = sub.add_parser(name, help="the markdown table from a results folder's JSONL")
        p.add_argument("--prepared", default=str(ROOT / ".gpu/kb"), help="where the sample is (else the results folder's copy)")
        p.add_argument("--results", required=True)
        p.set_defaults(realworld=name == "report-realworld")
    b = sub.add_parser("stage-bench", help="the kb-bench run folder (bench/run, bench/suite) from a staging's sample")
    b.add_argument("--prepared", default=str(ROOT / ".gpu/kb"))
    b.add_argument("--count", type=int, default=16, help="problems (light ones first)")
    b.add_argument("--max-task-mib", type=float, default=300)
    c = sub.add_parser("kb-compile")
    c.add_argument("--prepared", required=True)
    c.add_argument("--solution", required=True)
    c.add_argument("--build-dir", required=True)
    c.add_argument("--fake", action="store_true")
    k = sub.add_parser("kb-worker")
    k.add_argument("--prepared", required=True)
    k.add_argument("--correct-trials", type=int, default=5)
    k.add_argument("--perf-trials", type=int, default=20)
    k.add_argument("--fake", action="store_true")
    args = ap.parse_args()
    return {"stage": stage, "prepare": stage, "stage-bench": stage_bench_cmd, "run": run, "realworld": realworld,
            "report": report, "report-realworld": report, "kb-compile": kb_compile,
            "kb-worker": kb_worker}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
