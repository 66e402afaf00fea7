#!/usr/bin/env python3
"""Judge the real-world corpus (issue 46) through our static stage and record every verdict.

For each solution that build_corpus.py wrote (OUT/index.jsonl), this

  1. converts the KernelBench single file into our candidate folder:
         python3 -m cuda_agent_harness.single_file FILE.py CAND_DIR --json
     (a refusal there is recorded as `convert_refused`, with the converter's reason and line);
  2. judges it up to the build:
         cuda-agent judge --task TASK.py --candidate CAND_DIR --until build --device D --json
     and records the JudgeResult's stage, outcome, error_kind, reason and violations. The static
     verdict is read from the stage: `static` = refused by a static rule, anything later = passed;
     the build's own verdict is kept apart (on a CPU-only machine CUDA sources cannot be built).

Results go to RESULTS/results.jsonl (one line per solution; a rerun skips the ids already there, so
the run resumes) and RESULTS/summary.md (per class: how many pass the static stage; every honest
solution refused, with the rule, file:line, the message and the offending source line).

    python3 bench/realworld/judge_corpus.py [--corpus build/realworld] [--results build/realworld-results]
        [--jobs 2] [--device cpu] [--binary build/cuda-agent] [--class honest,hybrid,broken] [--limit N]
        [--policy strict|kernelbench|...] [--force] [--summary-only]

`--policy` is passed to the judge (docs/policies.md); a policy other than strict writes to
build/realworld-results-POLICY unless --results is given.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run(cmd, env=None, timeout=None):
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        return r.returncode, r.stdout, r.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", f"timed out after {timeout} s", time.monotonic() - t0


def source_line(cand: Path, file: str | None, line: int | None) -> str | None:
    if not file or not line:
        return None
    p = cand / file
    try:
        lines = p.read_text(errors="replace").splitlines()
        return lines[line - 1].strip()[:200] if 0 < line <= len(lines) else None
    except OSError:
        return None


def judge_one(row: dict, args, work: Path) -> dict:
    cand = work / row["id"]
    shutil.rmtree(cand, ignore_errors=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = {"id": row["id"], "class": row["class"], "task": row["task_name"], "repo": row["repo"]}
    rc, so, se, sec = run([sys.executable, "-m", "cuda_agent_harness.single_file", row["file"], str(cand),
                           "--json"], env=env, timeout=120)
    try:
        conv = json.loads(so)
    except ValueError:
        conv = {"ok": False, "error": (se or so).strip()[-400:] or f"exit {rc}", "line": None, "notes": []}
    out["convert"] = {"rc": rc, "ok": bool(conv.get("ok")) and rc == 0, "error": conv.get("error"),
                      "line": conv.get("line"), "notes": conv.get("notes", [])[:8]}
    if not out["convert"]["ok"]:
        out["static"] = "convert_refused"
        out["seconds"] = round(sec, 3)
        return out
    cmd = [str(args.binary), "judge", "--task", row["task"], "--candidate", str(cand), "--until", "build",
           "--device", args.device, "--policy", args.policy, "--json"]
    out["policy"] = args.policy
    rc, so, se, sec2 = run(cmd, timeout=args.timeout)
    res = None
    try:
        res = json.loads(so)
    except ValueError:
        pass
    j = {"rc": rc}
    if res is None:
        j["error"] = (se or so).strip()[-600:]
        out["static"] = "error"
    else:
        viol = []
        for v in res.get("violations") or []:
            viol.append({**v, "text": source_line(cand, v.get("file"), v.get("line"))})
        j.update({k: res.get(k) for k in ("stage", "outcome", "error_kind", "reason")})
        j["violations"] = viol
        b = res.get("build") or {}
        j["build_ok"] = b.get("ok")
        j["build_errors"] = [{k: e.get(k) for k in ("file", "line", "message")} for e in (b.get("errors") or [])][:4]
        stage = res.get("stage")
        if res.get("outcome") != "verdict":
            out["static"] = "task_error" if res.get("outcome") == "task_error" else "error"
        elif stage == "static" and res.get("error_kind") == "internal":
            out["static"] = "error"
        elif stage == "static":
            out["static"] = "refused"
        else:
            out["static"] = "pass"
    out["judge"] = j
    out["seconds"] = round(sec + sec2, 3)
    return out


def retry(r: dict) -> bool:
    j = r.get("judge") or {}
    return r.get("static") == "error" or j.get("error_kind") == "internal"


def load_results(path: Path) -> dict:
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
                done[r["id"]] = r
            except (ValueError, KeyError):
                continue
    return done


def summarise(results: list[dict], manifest: dict | None) -> str:
    why = {e["id"]: e for e in (manifest or {}).get("entries", [])}
    out = []
    classes = ["honest", "hybrid", "broken"]
    out.append("| class | solutions | static pass | static refused | converter refused | other (task/internal error) |")
    out.append("|---|---:|---:|---:|---:|---:|")
    tot = collections.Counter()
    for c in classes:
        rs = [r for r in results if r["class"] == c]
        n = collections.Counter(r["static"] for r in rs)
        other = len(rs) - n["pass"] - n["refused"] - n["convert_refused"]
        out.append(f"| {c} | {len(rs)} | {n['pass']} | {n['refused']} | {n['convert_refused']} | {other} |")
        tot.update(n)
        tot["all"] += len(rs)
    other = tot["all"] - tot["pass"] - tot["refused"] - tot["convert_refused"]
    out.append(f"| all | {tot['all']} | {tot['pass']} | {tot['refused']} | {tot['convert_refused']} | {other} |")

    out.append("")
    out.append("First violation's rule, per class (a solution counts once, under its first rule):")
    out.append("")
    out.append("| rule | honest | hybrid | broken |")
    out.append("|---|---:|---:|---:|")
    rules = collections.defaultdict(collections.Counter)
    for r in results:
        if r["static"] == "refused":
            v = (r["judge"].get("violations") or [{"rule": r["judge"].get("error_kind")}])[0]
            rules[v["rule"]][r["class"]] += 1
        elif r["static"] == "convert_refused":
            rules["(converter)"][r["class"]] += 1
    for rule, c in sorted(rules.items(), key=lambda kv: -sum(kv[1].values())):
        out.append(f"| `{rule}` | {c['honest']} | {c['hybrid']} | {c['broken']} |")

    honest_ref = [r for r in results if r["class"] == "honest" and r["static"] in ("refused", "convert_refused")]
    out.append("")
    out.append(f"Honest solutions refused: {len(honest_ref)} (every violation, grouped by rule):")
    by_rule = collections.defaultdict(list)
    for r in honest_ref:
        if r["static"] == "convert_refused":
            by_rule["(converter)"].append((r, {"file": "(solution)", "line": r["convert"].get("line"),
                                               "message": r["convert"].get("error"), "text": None}))
            continue
        seen = set()
        for v in r["judge"].get("violations") or []:
            key = (v["rule"], v.get("file"), v.get("line"))
            if key in seen:
                continue
            seen.add(key)
            by_rule[v["rule"]].append((r, v))
    for rule, items in sorted(by_rule.items(), key=lambda kv: -len({r["id"] for r, _ in kv[1]})):
        ids = {r["id"] for r, _ in items}
        out.append("")
        out.append(f"### `{rule}` — {len(ids)} honest solutions, {len(items)} violations")
        out.append("")
        out.append("| solution | task | file:line | message | source line |")
        out.append("|---|---|---|---|---|")
        for r, v in items:
            msg = (v.get("message") or "").replace("|", "\\|").replace("\n", " ")[:160]
            text = (v.get("text") or "").replace("|", "\\|").replace("`", "'")[:100]
            out.append(f"| {r['id']} | {r['task']} | {v.get('file')}:{v.get('line')} | {msg} | "
                       f"{'`' + text + '`' if text else ''} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT / "build" / "realworld"))
    ap.add_argument("--results", default=None,
                    help="default build/realworld-results (build/realworld-results-POLICY for another policy)")
    ap.add_argument("--policy", default="strict", help="the judge's --policy (strict, kernelbench, ...)")
    ap.add_argument("--manifest", default=str(HERE / "manifest.json"))
    ap.add_argument("--binary", default=str(ROOT / "build" / "cuda-agent"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--timeout", type=int, default=900, help="seconds for one judgement")
    ap.add_argument("--class", dest="classes", default="honest,hybrid,broken")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="judge again what results.jsonl already holds")
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args()
    if args.results is None:
        suffix = "" if args.policy == "strict" else f"-{args.policy}"
        args.results = str(ROOT / "build" / f"realworld-results{suffix}")

    index = Path(args.corpus) / "index.jsonl"
    if not index.exists():
        print(f"no {index}: run bench/realworld/build_corpus.py first", file=sys.stderr)
        return 2
    rows = [json.loads(l) for l in index.read_text().splitlines() if l.strip()]
    rows = [r for r in rows if r["class"] in set(args.classes.split(","))]
    res_dir = Path(args.results)
    res_dir.mkdir(parents=True, exist_ok=True)
    res_path = res_dir / "results.jsonl"
    if args.force and res_path.exists() and not args.summary_only:
        res_path.unlink()
    done = load_results(res_path)
    # what failed for reasons of ours (the harness or the binary unavailable, a judge's internal error)
    # is judged again by the next run; the latest line of an id wins
    todo = [r for r in rows if r["id"] not in done or retry(done[r["id"]])]
    if args.limit:
        todo = todo[:args.limit]
    if not args.summary_only and todo:
        if not Path(args.binary).exists():
            print(f"no {args.binary}: build cuda-agent first", file=sys.stderr)
            return 2
        work = res_dir / "candidates"
        work.mkdir(exist_ok=True)
        lock = threading.Lock()
        t0 = time.monotonic()
        with open(res_path, "a") as fh, cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futs = {pool.submit(judge_one, r, args, work): r for r in todo}
            for i, fut in enumerate(cf.as_completed(futs), 1):
                r = futs[fut]
                try:
                    res = fut.result()
                    if retry(res):  # once more after a pause: a binary being rebuilt, a harness mid-edit
                        time.sleep(5)
                        res = judge_one(r, args, work)
                except Exception as ex:  # noqa: BLE001 - record and go on
                    res = {"id": r["id"], "class": r["class"], "task": r["task_name"], "repo": r["repo"],
                           "static": "error", "judge": {"error": repr(ex)}}
                with lock:
                    fh.write(json.dumps(res) + "\n")
                    fh.flush()
                    done[res["id"]] = res
                print(f"[{i}/{len(todo)} {time.monotonic() - t0:.0f}s] {res['id']}: {res['static']}"
                      + (f" ({(res.get('judge') or {}).get('reason', '')[:100]})" if res["static"] == "refused"
                         else ""), file=sys.stderr)
    wanted = {r["id"] for r in rows}
    results = [done[i] for i in sorted(done) if i in wanted]
    manifest = json.loads(Path(args.manifest).read_text()) if Path(args.manifest).exists() else None
    if manifest:  # the manifest's (reviewed) class wins over the one recorded when the corpus was built
        cls = {e["id"]: e["class"] for e in manifest["entries"]}
        results = [{**r, "class": cls.get(r["id"], r["class"])} for r in results]
    text = summarise(results, manifest)
    (res_dir / "summary.md").write_text(text)
    print(text)
    print(f"{len(results)} judged of {len(rows)}; results: {res_path}; summary: {res_dir / 'summary.md'}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
