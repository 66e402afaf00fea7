#!/usr/bin/env python3
"""Rebuild the real-world corpus (issue 46) from fetched mirrors into an output folder.

For each entry of manifest.json it reads the solution from the mirror of its repository at the
recorded commit (a JSONL entry: the recorded line and field of that file), checks its SHA-256, and
writes

    OUT/<id>.py            the solution, byte for byte
    OUT/index.jsonl        one line per written solution: id, file, task (the KernelBench task file),
                           task_name (level1/19_ReLU), class, repo, commit, path

and prints what is missing (no mirror, commit or file absent, content changed). Nothing of the third
parties' code is committed: the output folder defaults to build/realworld/ (git-ignored).

    python3 bench/realworld/build_corpus.py [OUT] [--mirrors /work/.mirror] [--kernelbench DIR]
        [--manifest bench/realworld/manifest.json] [--class honest,hybrid,broken]

A mirror is what the search tool's `fetch github:OWNER/NAME` leaves: `<mirrors>/OWNER+NAME/repo`, a
bare git directory (or a clone whose `.git` is inside). Exit 0 when every selected entry was written,
1 when some are missing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def git_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+") / "repo"
    if (base / ".git").is_dir():
        return base / ".git"
    return base if base.is_dir() else None


def read_entry(mirrors: Path, e: dict, cache: dict) -> tuple[bytes | None, str | None]:
    gd = git_dir(mirrors, e["repo"])
    if gd is None:
        return None, f"no mirror of {e['repo']} under {mirrors} (fetch github:{e['repo']})"
    key = (str(gd), e["commit"], e["path"])
    if key not in cache:
        r = subprocess.run(["git", "--git-dir", str(gd), "show", f"{e['commit']}:{e['path']}"],
                           capture_output=True)
        if r.returncode != 0:
            # a newer snapshot may lack the commit; say so rather than silently reading HEAD
            cache[key] = (None, f"{e['repo']}: {e['commit'][:12]}:{e['path']} not in the mirror "
                                f"({r.stderr.decode(errors='replace').strip()[:120]})")
        else:
            cache[key] = (r.stdout, None)
    data, err = cache[key]
    if data is None:
        return None, err
    sel = e.get("select")
    if sel:
        lines = data.decode("utf-8").splitlines()
        try:
            data = (json.loads(lines[sel["line"]])[sel["field"]] or "").encode()
        except (IndexError, ValueError, KeyError) as ex:
            return None, f"{e['repo']}:{e['path']} line {sel['line']}: {ex}"
    if hashlib.sha256(data).hexdigest() != e["sha256"]:
        return None, f"{e['repo']}:{e['path']}: content differs from the manifest's sha256"
    return data, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default=str(ROOT / "build" / "realworld"))
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--kernelbench", default=str(ROOT.parent / "shared" / "kernelbench"))
    ap.add_argument("--manifest", default=str(HERE / "manifest.json"))
    ap.add_argument("--class", dest="classes", default="honest,hybrid,broken",
                    help="comma-separated classes to write (default: all)")
    args = ap.parse_args()

    manifest = json.loads(Path(args.manifest).read_text())
    want = set(args.classes.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kb = Path(args.kernelbench).resolve()
    cache: dict = {}
    missing, rows = [], []
    for e in manifest["entries"]:
        if e["class"] not in want:
            continue
        task = kb / (e["task"] + ".py")
        if not task.is_file():
            missing.append(f"{e['id']}: task {task} not found")
            continue
        data, err = read_entry(Path(args.mirrors), e, cache)
        if data is None:
            missing.append(f"{e['id']}: {err}")
            continue
        f = out / f"{e['id']}.py"
        f.write_bytes(data)
        rows.append({"id": e["id"], "file": str(f.resolve()), "task": str(task), "task_name": e["task"],
                     "class": e["class"], "repo": e["repo"], "commit": e["commit"], "path": e["path"]})
    with open(out / "index.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    for m in missing:
        print("missing:", m)
    print(f"{len(rows)} written to {out} ({len(missing)} missing); index: {out / 'index.jsonl'}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
