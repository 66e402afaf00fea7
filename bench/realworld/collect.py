#!/usr/bin/env python3
"""Collect the real-world corpus's manifest from fetched mirrors (issue 46).

Walks the snapshots of public repositories that hold third-party KernelBench solutions (a single
Python file with `class ModelNew` building CUDA through `load_inline`), picks the solutions, maps
each to its KernelBench task, pre-classifies it (classify.py), applies the reviewed classes
(review.json) and writes manifest.json. Nothing of the third parties' code is written here: the
manifest holds ids, repositories, commits, paths, content hashes, tasks and classes only;
build_corpus.py materialises the files on a developer machine.

    python3 bench/realworld/collect.py [--mirrors /work/.mirror] [--kernelbench ../shared/kernelbench]
        [--out bench/realworld/manifest.json]

The mirrors are `fetch` snapshots: `<mirrors>/<owner>+<name>/repo` is a bare git directory (or a
clone whose `.git` is inside). Deterministic: the same snapshots give the same manifest.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import classify  # noqa: E402

LICENCE_NONE = "none (no LICENSE file: all rights reserved)"

# Per repository: licence as found in its LICENSE file at the recorded commit.
REPOS = {
    "anneouyang/KernelBenchLeaderboard": LICENCE_NONE,
    "deepreinforce-ai/CUDA-L1": "MIT (LICENSE, Copyright (c) 2021 ShannonAI)",
    "sekstini/CUDA-L1": "GPL-3.0 (LICENSE; a fork of deepreinforce-ai/CUDA-L1 at its GPL-3.0 release)",
    "ScalingIntelligence/KernelBench": "MIT (LICENSE, Copyright (c) 2023 Anne Ouyang, Simon Guo, Azalia Mirhoseini)",
    "technoabsurdist/KernelBench": "MIT (LICENSE inherited from ScalingIntelligence/KernelBench)",
    "yenhao-huang/KernelBench": "MIT (LICENSE inherited from ScalingIntelligence/KernelBench)",
    "hzeng2000/KernelBench": "MIT (LICENSE inherited from ScalingIntelligence/KernelBench)",
    "j1mk1m/Kernel-Coder": LICENCE_NONE,
    "yoenoo/eh_kernelbench": "MIT (LICENSE, Copyright (c) 2025 Yeonwoo Jang)",
}


class Mirror:
    def __init__(self, root: Path, repo: str):
        base = root / repo.replace("/", "+") / "repo"
        self.git_dir = base / ".git" if (base / ".git").is_dir() else base
        self.repo = repo
        if not self.git_dir.is_dir():
            raise FileNotFoundError(f"{repo}: no mirror at {base} (fetch github:{repo} first)")

    def git(self, *args: str, data: bytes | None = None) -> bytes:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], input=data,
                              capture_output=True, check=True).stdout

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").decode().strip()

    def tree(self, commit: str, under: str = "") -> dict[str, str]:
        """path -> blob sha of every file under `under` at `commit`."""
        args = ["ls-tree", "-r", commit] + ([under] if under else [])
        out = {}
        for line in self.git(*args).decode(errors="replace").splitlines():
            meta, path = line.split("\t", 1)
            _, kind, sha = meta.split()
            if kind == "blob":
                out[path] = sha
        return out

    def blob(self, sha: str) -> bytes:
        return self.git("cat-file", "blob", sha)

    def show(self, commit: str, path: str) -> bytes:
        return self.git("show", f"{commit}:{path}")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class TaskIndex:
    def __init__(self, root: Path):
        self.root = root
        self.by_id: dict[tuple[int, int], str] = {}
        for level in (1, 2, 3):
            for f in sorted((root / f"level{level}").glob("*.py")):
                m = re.match(r"(\d+)_", f.name)
                if m:
                    self.by_id[(level, int(m.group(1)))] = f"level{level}/{f.stem}"

    def same_model(self, task: str, source: str) -> bool:
        """Whether `source` defines the same Model class as today's `task` (docstrings ignored)."""
        def model(text):
            try:
                tree = ast.parse(text)
            except SyntaxError:
                return None
            for n in ast.walk(tree):
                if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr) \
                        and isinstance(n.body[0].value, ast.Constant) and isinstance(n.body[0].value.value, str):
                    n.body = n.body[1:] or [ast.Pass()]
            for n in tree.body:
                if isinstance(n, ast.ClassDef) and n.name == "Model":
                    return ast.dump(n, annotate_fields=False)
            return None
        now = model((self.root / (task + ".py")).read_text())
        return now is not None and now == model(source)

    def get(self, level: int, pid: int, name: str | None = None) -> str | None:
        task = self.by_id.get((level, pid))
        if task and name:
            # The name the source gives must be the task's (KernelBench renamed few problems).
            want = re.sub(r"\.py$", "", name)
            if task.split("/", 1)[1] != want:
                return None
        return task


def spread(items: list, cap: int | None) -> list:
    """`cap` items spread evenly over `items` (deterministic)."""
    if cap is None or len(items) <= cap:
        return items
    step = len(items) / cap
    return [items[int(i * step)] for i in range(cap)]


def is_candidate(data: bytes) -> bool:
    return b"load_inline" in data and b"ModelNew" in data


# ---------------------------------------------------------------- sources


def src_leaderboard(root: Path, tasks: TaskIndex):
    m = Mirror(root, "anneouyang/KernelBenchLeaderboard")
    commit = m.head()
    raw = json.loads(m.show(commit, "docs/assets/raw_data.json"))
    shown = {}  # file -> "Level L: NAME" of the leaderboard page (data.json)
    for key, rows in json.loads(m.show(commit, "docs/assets/data.json")).items():
        for r in rows:
            shown[r["file"]] = key
    # raw_data.json's problem_id is 0-based: problem_id 18 of level 1 is 19_ReLU (data.json names it)
    for r in sorted(raw, key=lambda r: (int(r["level"]), int(r["problem_id"]), r["display_name"], r["file"])):
        level, pid = int(r["level"]), int(r["problem_id"]) + 1
        path = f"docs/assets/solutions/{r['file']}.py"
        data = m.show(commit, path)
        key = shown.get(r["file"])
        # KernelBench replaced a few problems since Dec 2024: keep a solution only where today's task
        # of that number is the same program (its Model class, docstrings aside)
        task = tasks.get(level, pid)
        if task is not None:
            then = m.show(commit, f"docs/assets/problems/l{level}_p{pid}.py").decode(errors="replace")
            if not tasks.same_model(task, then):
                task = None
        if key is not None and task is not None:
            assert key == f"Level {level}: {task.split('/', 1)[1]}", (key, task)
        ev = {"listed": key is not None, "torch_speedup": float(r["torch_speedup"])}
        ev["note"] = ("shown on the leaderboard page with a speedup: passed KernelBench's eval" if key else
                      "in raw_data.json only, not shown on the leaderboard page")
        yield dict(id=f"lb-l{level}-p{pid}-{r['display_name']}-{r['file'][:6]}",
                   repo=m.repo, commit=commit, path=path, data=data, task=task,
                   author=f"{r['display_name']} (KernelBench leaderboard, Dec 2024)", their_eval=ev)


def src_cuda_l1_v1(root: Path, tasks: TaskIndex):
    m = Mirror(root, "sekstini/CUDA-L1")
    commit = m.head()
    files = m.tree(commit, "unpacked")
    keyed = []
    for path, sha in files.items():
        mm = re.match(r"unpacked/([^/]+)/(\d)/(\d+)/custom_code\.py$", path)
        if mm:
            keyed.append(((int(mm.group(2)), int(mm.group(3)), mm.group(1)), path, sha))
    for (level, pid, gpu), path, sha in sorted(keyed):
        data = m.blob(sha)
        task = tasks.get(level, pid)
        ref = files.get(path.replace("custom_code.py", "ref_code.py"))
        if task and ref and not tasks.same_model(task, m.blob(ref).decode(errors="replace")):
            task = None
        yield dict(id=f"cudal1v1-{gpu}-l{level}-p{pid}", repo=m.repo, commit=commit, path=path, data=data,
                   task=task, author=f"CUDA-L1 (contrastive RL; release 1, {gpu})",
                   their_eval={"listed": True, "note": "released as CUDA-L1's optimized code (passed its eval)"})


def src_cuda_l1_v2(root: Path, tasks: TaskIndex):
    m = Mirror(root, "deepreinforce-ai/CUDA-L1")
    commit = m.head()
    for gpu in ("3090", "a100", "h100", "h20", "l40"):
        path = f"optimized_cuda_code/{gpu}.json"
        for i, line in enumerate(m.show(commit, path).decode().splitlines()):
            if not line.strip():
                continue
            r = json.loads(line)
            code = r.get("custom_code") or ""
            data = code.encode()
            task = tasks.get(int(r["level_id"]), int(r["task_id"]))
            if task and not tasks.same_model(task, r.get("ref_code") or ""):
                task = None
            yield dict(id=f"cudal1v2-{gpu}-l{r['level_id']}-p{r['task_id']}", repo=m.repo, commit=commit,
                       path=path, select={"line": i, "field": "custom_code"}, data=data,
                       task=task,
                       author=f"CUDA-L1 (contrastive RL; release 2, {gpu})",
                       their_eval={"listed": True, "score_default": r.get("score_default"),
                                   "note": "released as CUDA-L1's optimized code (passed its eval)"})


def src_kernelbench(root: Path, tasks: TaskIndex):
    m = Mirror(root, "ScalingIntelligence/KernelBench")
    picks = [
        # KernelBench's own reference solutions for its eval tests (authors: the KernelBench team).
        ("src/kernelbench/tests/solutions/100_HingeLoss_CORRECT.py", 1, 100, "KernelBench maintainers (test solution)"),
        ("src/kernelbench/tests/solutions/94_MSELoss_CORRECT.py", 1, 94, "KernelBench maintainers (test solution)"),
        ("src/kernelbench/tests/solutions/96_HuberLoss_CORRECT.py", 1, 96, "KernelBench maintainers (test solution)"),
        # Sakana AI CUDA Engineer kernels that KernelBench's maintainers investigated (sakana_kernels/).
        ("sakana_kernels/level1_problem15/15_Matmul_for_lower_triangular_matrices_kernelbench.py", 1, 15,
         "Sakana AI CUDA Engineer (as investigated in KernelBench's sakana_kernels/)"),
        ("sakana_kernels/level1_problem15/15_Matmul_for_lower_triangular_matrices_fixed_2d.py", 1, 15,
         "Sakana AI CUDA Engineer, fixed by KernelBench maintainers"),
        ("sakana_kernels/level2_problem23/23_Conv3d_GroupNorm_Mean_kernelbench.py", 2, 23,
         "Sakana AI CUDA Engineer (as investigated in KernelBench's sakana_kernels/)"),
        ("sakana_kernels/level2_problem23/23_Conv3d_GroupNorm_Mean_kernelbench_o1.py", 2, 23,
         "Sakana AI CUDA Engineer kernel rewritten by o1 (KernelBench's sakana_kernels/)"),
    ]
    for path, level, pid, author in picks:
        commit = newest_commit_with(m, path)
        if commit is None:
            continue
        data = m.show(commit, path)
        stem = Path(path).stem
        yield dict(id=f"kb-{stem[:20]}-{stem[-12:]}", repo=m.repo, commit=commit, path=path, data=data,
                   task=tasks.get(level, pid), author=author, their_eval=None)
    # AIDE-style kernel search logs (gemini-2.5-flash, level 1 problem 1), on a side branch.
    commit = "01f92ad6103dc3feb1fe5b3c7e58536e9197430f"
    try:
        files = m.tree(commit, "logs/kernel_search")
    except subprocess.CalledProcessError:
        files = {}
    runs = sorted(p for p in files if re.search(r"/best_(solution|kernel)\.py$", p))
    for path in spread(runs, 8):
        data = m.blob(files[path])
        run = path.split("/")[2]
        cfg = files.get(f"logs/kernel_search/{run}/config.yaml")
        model = "gemini-2.5-flash"
        if cfg:
            mm = re.search(rb"(?m)^\s*model:\s*(\S+)", m.blob(cfg))
            model = mm.group(1).decode().split("/")[-1] if mm else model
        yield dict(id=f"kb-aide-{run.split('-')[0]}-{Path(path).stem}", repo=m.repo, commit=commit, path=path,
                   data=data, task=tasks.get(1, 1), author=f"{model} (KernelBench AIDE kernel search)",
                   their_eval=None)


def newest_commit_with(m: Mirror, path: str) -> str | None:
    head = m.head()
    try:
        m.git("cat-file", "-e", f"{head}:{path}")
        return head
    except subprocess.CalledProcessError:
        pass
    out = m.git("log", "--all", "--format=%H", "--", path).decode().split()
    for c in out:
        try:
            m.git("cat-file", "-e", f"{c}:{path}")
            return c
        except subprocess.CalledProcessError:
            continue
    return None


RUN_NAME = re.compile(r"(?:level_(\d+)_)?problem_(\d+)(?:_(?:sample|solution)_(\d+))?(?:_kernel)?\.py$")


def run_files(m: Mirror, commit: str, folder: str, level: int | None):
    files = m.tree(commit, folder)
    out = []
    for path, sha in files.items():
        if path.count("/") != folder.count("/") + 1:
            continue
        mm = RUN_NAME.search(path.rsplit("/", 1)[1])
        if not mm:
            continue
        lv = int(mm.group(1)) if mm.group(1) else level
        out.append((lv, int(mm.group(2)), int(mm.group(3) or 0), path, sha))
    return sorted(out)


def eval_lookup_kernelbench_json(m: Mirror, commit: str, path: str):
    """KernelBench's eval_results.json: {problem_id: {...}} or {problem_id: [{sample_id, ...}]}."""
    try:
        d = json.loads(m.show(commit, path))
    except (subprocess.CalledProcessError, ValueError):
        return {}
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            for r in (v if isinstance(v, list) else [v]):
                if isinstance(r, dict) and "compiled" in r:
                    out[(int(k), int(r.get("sample_id", 0)))] = r
    elif isinstance(d, list):  # Kernel-Coder's list form
        for r in d:
            mm = re.match(r"level_\d+_problem_(\d+)_solution_(\d+)", r.get("evaluation_id", ""))
            if mm:
                out[(int(mm.group(1)), int(mm.group(2)))] = r
    return out


def their(r) -> dict | None:
    if not r:
        return None
    meta = r.get("metadata") or {}
    note = ""
    for k in ("compilation_error", "runtime_error", "other_error", "correctness_issue"):
        if meta.get(k):
            note = f"{k}: {str(meta[k])[:160]}"
            break
    return {"compiled": bool(r.get("compiled")), "correct": bool(r.get("correctness")),
            **({"note": note} if note else {})}


def src_runs(root: Path, tasks: TaskIndex, repo: str, runs: list, prefix: str, commit: str | None = None):
    """runs: [(folder, level or None, cap, author, eval_json_path or None)]"""
    m = Mirror(root, repo)
    commit = commit or m.head()
    for folder, level, cap, author, eval_path in runs:
        files = run_files(m, commit, folder, level)
        evals = eval_lookup_kernelbench_json(m, commit, eval_path) if eval_path else {}
        # one file per problem (the lowest sample), then spread over problems
        per_problem = {}
        for lv, pid, sample, path, sha in files:
            per_problem.setdefault((lv, pid), (lv, pid, sample, path, sha))
        problems = {}
        for p, sha in m.tree(commit, "KernelBench").items():
            mm = re.match(r"KernelBench/level(\d)/(\d+)_[^/]*\.py$", p)
            if mm:
                problems[(int(mm.group(1)), int(mm.group(2)))] = sha
        # a problem that KernelBench has since replaced is left out (its task differs from today's)
        keep = {}
        for k, v in per_problem.items():
            task = tasks.get(k[0], k[1])
            if task and k in problems and not tasks.same_model(task, m.blob(problems[k]).decode(errors="replace")):
                continue
            keep[k] = v
        chosen = spread(sorted(keep.values()), cap)
        for lv, pid, sample, path, sha in chosen:
            data = m.blob(sha)
            ev = their(evals.get((pid, sample)))
            if ev is None and folder.endswith("generated_kernels/level_%d" % lv):
                pp = folder.replace("generated_kernels", "per_problem") + f"/problem_{pid}.json"
                try:
                    ev = their(json.loads(m.show(commit, pp)).get("eval_result"))
                except (subprocess.CalledProcessError, ValueError):
                    ev = None
            if ev is None and "opus4" in folder:
                ev = opus_eval(m, commit, folder, pid)
            run = folder.rstrip("/").split("/")[1] if folder.startswith("runs/") else folder
            yield dict(id=f"{prefix}-{run}-l{lv}-p{pid}-s{sample}", repo=repo, commit=commit, path=path,
                       data=data, task=tasks.get(lv, pid), author=author, their_eval=ev)


def opus_eval(m: Mirror, commit: str, folder: str, pid: int):
    try:
        d = json.loads(m.show(commit, f"{folder}/detailed_results.json"))
    except (subprocess.CalledProcessError, ValueError):
        return None
    for r in d.get("results", []):
        if int(r.get("problem_id", -1)) == pid:
            return their(r.get("eval_result"))
    return None


def all_sources(root: Path, tasks: TaskIndex):
    yield from src_leaderboard(root, tasks)
    yield from src_cuda_l1_v2(root, tasks)
    yield from src_cuda_l1_v1(root, tasks)
    yield from src_kernelbench(root, tasks)
    cap = 12
    yield from src_runs(root, tasks, "technoabsurdist/KernelBench", [
        ("runs/gemini_level1_run", 1, cap, "gemini-2.5-pro (one shot)", "runs/gemini_level1_run/eval_results.json"),
        ("runs/gemini_level2_run", 2, cap, "gemini-2.5-pro (one shot)", "runs/gemini_level2_run/eval_results.json"),
        ("runs/gemini_level3_run", 3, cap, "gemini-2.5-pro (one shot)", "runs/gemini_level3_run/eval_results.json"),
        ("runs/qwen3_level1_run", 1, cap, "qwen3 (one shot)", "runs/qwen3_level1_run/eval_results.json"),
        ("runs/qwencoder_level1_run", 1, cap, "qwen-coder (one shot)", "runs/qwencoder_level1_run/eval_results.json"),
        ("runs/qwencoder_level2_run", 2, cap, "qwen-coder (one shot)", "runs/qwencoder_level2_run/eval_results.json"),
        ("runs/qwencoder_level3_run", 3, cap, "qwen-coder (one shot)", "runs/qwencoder_level3_run/eval_results.json"),
        ("runs/opus4_level2_20250903_065424", 2, cap, "claude-opus-4-1 (one shot)", None),
        ("runs/opus4_level3_20250903_035524", 3, cap, "claude-opus-4-1 (one shot)", None),
    ], "tab")
    yield from src_runs(root, tasks, "yenhao-huang/KernelBench", [
        ("runs/ralph_codex_cuda_all/generated_kernels/level_1", 1, cap, "codex gpt-5.5 (agentic loop)", None),
        ("runs/ralph_codex_cuda_all/generated_kernels/level_2", 2, cap, "codex gpt-5.5 (agentic loop)", None),
        ("runs/ralph_codex_cuda_all/generated_kernels/level_3", 3, cap, "codex gpt-5.5 (agentic loop)", None),
        ("runs/ralph_qwen36_cuda_all_gpu1_server/generated_kernels/level_1", 1, cap, "qwen3.6 (agentic loop)", None),
        ("runs/ralph_qwen36_cuda_all_gpu1_server/generated_kernels/level_2", 2, cap, "qwen3.6 (agentic loop)", None),
        ("runs/ralph_qwen36_cuda_all_gpu1_server_isolated/generated_kernels/level_3", 3, cap,
         "qwen3.6 (agentic loop)", None),
        ("runs/ralph_gemma4_cuda_all/generated_kernels/level_1", 1, 8, "gemma4 (agentic loop)", None),
        ("runs/ralph_gemma4_cuda_all/generated_kernels/level_2", 2, 8, "gemma4 (agentic loop)", None),
        ("runs/ralph_gemma4_cuda_all/generated_kernels/level_3", 3, 8, "gemma4 (agentic loop)", None),
        ("runs/openrouter_deepseek_v4_pro_leaderboard_l1", 1, 8, "deepseek-v4-pro (one shot)",
         "runs/openrouter_deepseek_v4_pro_leaderboard_l1/eval_results.json"),
        ("runs/openrouter_deepseek_v4_pro_leaderboard_l2", 2, 8, "deepseek-v4-pro (one shot)",
         "runs/openrouter_deepseek_v4_pro_leaderboard_l2/eval_results.json"),
        ("runs/openrouter_deepseek_v4_pro_leaderboard_l3", 3, 8, "deepseek-v4-pro (one shot)",
         "runs/openrouter_deepseek_v4_pro_leaderboard_l3/eval_results.json"),
    ], "yhh")
    yield from src_runs(root, tasks, "hzeng2000/KernelBench", [
        ("runs/level_2_backend_cuda_model_Kimi-K2-0905", 2, cap, "Kimi-K2-0905 (one shot)", None),
        ("runs/level_2_backend_cuda_model_grok-code-fast-1", 2, cap, "grok-code-fast-1 (one shot)", None),
    ], "hz")
    kc = "2b16b23026c415f782675790abf28026d97cfba3"  # the runs/ folders were removed from HEAD later
    q = "runs/test_time_scaling_%s_level%d"
    yield from src_runs(root, tasks, "j1mk1m/Kernel-Coder", [
        (q % ("best_of_n_Qwen2.5-Coder-7B-Instruct", 1), 1, 10, "Qwen2.5-Coder-7B-Instruct (best of n)",
         (q % ("best_of_n_Qwen2.5-Coder-7B-Instruct", 1)) + "/eval_results.json"),
        (q % ("best_of_n_Qwen2.5-Coder-7B-Instruct", 2), 2, 10, "Qwen2.5-Coder-7B-Instruct (best of n)",
         (q % ("best_of_n_Qwen2.5-Coder-7B-Instruct", 2)) + "/eval_results.json"),
        (q % ("base_Qwen2.5-Coder-7B-Instruct-kernel-only-sft-lora", 1), 1, 10,
         "Qwen2.5-Coder-7B-Instruct, kernel-only SFT LoRA",
         (q % ("base_Qwen2.5-Coder-7B-Instruct-kernel-only-sft-lora", 1)) + "/eval_results.json"),
        (q % ("iterative_refinement_Qwen2.5-Coder-7B-Instruct", 2), 2, 10,
         "Qwen2.5-Coder-7B-Instruct (iterative refinement)",
         (q % ("iterative_refinement_Qwen2.5-Coder-7B-Instruct", 2)) + "/eval_results.json"),
    ], "kc", commit=kc)
    eh = "3d3526ea85fc2d8f21fd48b812fe8151e018ff1c"  # results/ was removed from HEAD later
    yield from src_runs(root, tasks, "yoenoo/eh_kernelbench", [
        ("results", None, 24, "unknown open model (eh_kernelbench pass@16 samples; its README lists Kevin-32B, "
         "Qwen3 and gpt-oss)", None),
    ], "eh", commit=eh)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", default=os.environ.get("CUDA_AGENT_MIRRORS", "/work/.mirror"))
    ap.add_argument("--kernelbench", default=str(HERE.parents[1].parent / "shared" / "kernelbench"))
    ap.add_argument("--out", default=str(HERE / "manifest.json"))
    ap.add_argument("--review", default=str(HERE / "review.json"))
    args = ap.parse_args()

    tasks = TaskIndex(Path(args.kernelbench))
    review = json.loads(Path(args.review).read_text()) if Path(args.review).exists() else {}
    seen: dict[str, str] = {}
    entries, skipped = [], []
    for e in all_sources(Path(args.mirrors), tasks):
        data = e.pop("data")
        if not is_candidate(data):
            continue
        digest = sha256(data)
        if digest in seen:
            skipped.append(f"{e['id']}: same content as {seen[digest]}")
            continue
        if e["task"] is None:
            skipped.append(f"{e['id']}: no matching task in {args.kernelbench}")
            continue
        seen[digest] = e["id"]
        pre = classify.classify(data.decode("utf-8", errors="replace"))
        e["sha256"] = digest
        e["licence"] = REPOS[e["repo"]]
        e["class"], e["why"] = pre.cls, pre.why
        te = e.get("their_eval") or {}
        if te.get("compiled") is False and "timeout" not in te.get("note", ""):
            # the source's own KernelBench eval could not build (or load) it: broken by definition
            e["class"] = "broken"
            e["why"] = ("did not build in its source's own KernelBench eval" +
                        (f" ({te['note'][:100]})" if te.get("note") else "") + f"; structurally: {pre.why}")
        e["preclass"] = pre.cls
        r = review.get(e["id"])
        if r:
            e["class"], e["why"] = r["class"], r["why"]
            e["reviewed"] = True
        entries.append(e)
    order = ["id", "repo", "commit", "path", "select", "sha256", "licence", "task", "author", "class", "why",
             "preclass", "reviewed", "their_eval"]
    entries = [{k: e[k] for k in order if k in e} for e in entries]
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "duplicate ids"
    Path(args.out).write_text(json.dumps({
        "schema": 1,
        "about": "Third-party KernelBench solutions (single-file load_inline CUDA) for judging our static "
                 "rules on real code; docs/realworld.md. Files are not committed: build_corpus.py reads them "
                 "from fetched mirrors.",
        "kernelbench": "ScalingIntelligence/KernelBench@423217d9fda91e0c2d67e4a43bf62f96f6d104f1 "
                       "(../shared/kernelbench)",
        "entries": entries}, indent=1) + "\n")
    for s in skipped:
        print("skipped:", s, file=sys.stderr)
    print(f"{len(entries)} entries -> {args.out} ({len(skipped)} skipped)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
