"""The `synth` job (trusted: generated programs only): compose candidates and filter them into a dataset.

Spec: out_dir, device, seed, count, max_ops, mix ({"1": 3.4, ...}), tolerance (the judge's default
policy), min_ms/max_ms, compile_check, compile_backend, contamination_threshold, dedup_threshold,
max_candidates, candidate_timeout_s, suite ({"name", "tasks": [{"name", "path"}]} or null),
candidates_path (optional JSONL of {"code", "ops"} rows filtered instead of composed programs; a row
with "compose_error" instead of code is recorded as dropped at stage "compose" with that reason),
composer (optional: what config.json records for the composer, e.g. "llm:<spec>"; default "random",
or "file" with candidates_path), catalog_only (optional: check the configuration, write catalog.json
and return, filtering nothing: the LLM composer samples its ops from that file).

Candidate k has seed sha256("<seed>:<k>") (first 6 bytes): one program per (seed, k). In out_dir:
- config.json: what decides the candidates; a rerun with another configuration is refused;
- catalog.json: the op catalog (rebuilt when torch's version changed);
- decisions.jsonl: {"started": k} before each candidate, then its decision (kept or dropped, the stage
  and reason, the filter log); a rerun skips decided candidates and filters again a candidate started
  but never decided (the job was stopped); one started twice without a decision (the process died on
  it twice) is recorded as dropped at stage "crash";
- tasks.jsonl (kept rows: id, ops, data_source, code, seed, eager_ms, compile_ms, device, filters), the
  same rows as tasks.parquet when pyarrow is installed (filters as JSON text), and summary.json,
  rewritten at the end of every run.

Parallel ("workers" > 1, pool.py): the main process composes and runs the static stages; workers
run the dynamic ones, timed measurements one at a time per device. With one worker the run is
deterministic; with more, which candidates are kept depends on the order they finish in, and each row
still carries what regenerates its program (seed, n_ops).

Op-count mix: the requested mix, plus "transformers_share" (percent, optional: single transformers
ops, as published; 0 when the catalog has none, i.e. transformers is not installed, with a note in the
summary), becomes quotas per category ("1".."5": torch programs of that many ops, "transformers") by
largest remainder over `count`; each composed candidate's category is drawn, by its seed's generator,
with weights = the quotas still open (kept and in flight subtracted), so a category whose candidates are
often dropped is asked for more often; a candidate that passes every filter when its category's quota is
full is dropped at stage "mix".
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import statistics
import time
from typing import Any

import torch

from cuda_agent_harness.comparison import Tolerance
from cuda_agent_harness.errors import JobError
from cuda_agent_harness.spec import json_safe, require, require_device

from .catalog import (
    CATALOG_VERSION,
    build_catalog,
    composable_ops,
    stochastic_names,
    transformers_ops,
    transformers_version,
)
from .composer import ComposeError, compose, compose_transformers
from .filters import STAGES, Candidate, FilterConfig, check_dedup, run_static_filters
from .pool import WorkerPool
from .similarity import Corpus, tokens

CONFIG_KEYS = ("device", "seed", "max_ops", "mix", "composer", "min_ms", "max_ms", "compile_check",
               "contamination_threshold", "dedup_threshold", "suite_name", "candidates_path",
               "transformers_share")


def candidate_seed(seed: int, index: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{index}".encode()).digest()[:6], "big")


def write_json(path: str, value) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(json_safe(value), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def load_catalog(out_dir: str) -> dict:
    path = os.path.join(out_dir, "catalog.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            catalog = json.load(f)
        if (catalog.get("version"), catalog.get("torch_version"), catalog.get("transformers_version")) == \
                (CATALOG_VERSION, torch.__version__, transformers_version()):
            return catalog
    catalog = build_catalog()
    write_json(path, catalog)
    return catalog


def check_config(out_dir: str, config: dict) -> None:
    path = os.path.join(out_dir, "config.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            earlier = json.load(f)
        changed = [k for k in CONFIG_KEYS if earlier.get(k) != config.get(k)]
        if changed:
            raise JobError("task", f"{out_dir} holds a run with another configuration ({', '.join(changed)} "
                                   f"differ): use another --out or the same options")
    write_json(path, config)


def read_decisions(path: str) -> tuple[dict[int, dict], dict[int, int]]:
    """Decisions by candidate index, and for each index started without a decision, how often."""
    decided: dict[int, dict] = {}
    starts: dict[int, int] = {}
    if not os.path.exists(path):
        return decided, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # cut short by a crash
            if "started" in entry:
                starts[entry["started"]] = starts.get(entry["started"], 0) + 1
            elif "released" in entry:  # in flight when --time-limit stopped the run: not a crash
                starts[entry["released"]] = starts.get(entry["released"], 1) - 1
            elif isinstance(entry.get("index"), int):
                decided[entry["index"]] = entry
    return decided, {i: n for i, n in starts.items() if i not in decided}


TRANSFORMERS = "transformers"  # the category of single transformers ops


def category(ops: list[str]) -> str:
    """A program's mix category: "transformers" for a transformers op, else its op count ("1".."5")."""
    return TRANSFORMERS if any(o.startswith("transformers.") for o in ops) else str(len(ops))


def data_source(ops: list[str]) -> str:
    """The published column: "torch#<op count>" or "transformers#1"."""
    return f"{TRANSFORMERS}#{len(ops)}" if category(ops) == TRANSFORMERS else f"torch#{len(ops)}"


def op_count_quotas(mix: dict[int, float], max_ops: int, count: int, transformers_share: float = 0.0) -> dict[str, int]:
    """The kept tasks each category may have: `count` split by the mix and the transformers share
    (largest remainder)."""
    allowed = {str(n): w for n, w in mix.items() if n <= max_ops and w > 0}
    if transformers_share > 0:
        allowed[TRANSFORMERS] = transformers_share
    total = sum(allowed.values())
    exact = {n: count * w / total for n, w in allowed.items()}
    quotas = {n: int(v) for n, v in exact.items()}
    for n in sorted(exact, key=lambda n: (quotas[n] - exact[n], n))[:count - sum(quotas.values())]:
        quotas[n] += 1
    return quotas


def steered_count(cseed: int, quotas: dict[str, int], kept: dict[str, int], inflight: dict[str, int]) -> str | None:
    """The category of the next composed candidate (see the module docstring); None: every quota is full."""
    for busy in (inflight, {}):
        open_ = {n: q - kept.get(n, 0) - busy.get(n, 0) for n, q in quotas.items()}
        open_ = {n: v for n, v in open_.items() if v > 0}
        if open_:
            rng = random.Random(cseed ^ 0x5EED)
            counts = sorted(open_)
            return rng.choices(counts, weights=[open_[n] for n in counts])[0]
    return None


class Log:
    def __init__(self, path: str):
        needs_newline = (os.path.exists(path) and os.path.getsize(path) > 0
                         and not open(path, "rb").read().endswith(b"\n"))
        self.file = open(path, "a", encoding="utf-8")
        if needs_newline:
            self.file.write("\n")

    def append(self, entry: dict) -> None:
        self.file.write(json.dumps(json_safe(entry), allow_nan=False) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())


def task_row(d: dict, number: int) -> dict:
    return {"id": f"synth-{number:05d}", "ops": d["ops"], "data_source": data_source(d["ops"]),
            "code": d["code"], "seed": d["seed"], "index": d["index"], "eager_ms": d.get("eager_ms"),
            "compile_ms": d.get("compile_ms"), "device": d["device"], "filters": d["filters"]}


def write_parquet(rows: list[dict], path: str) -> str:
    """tasks.parquet (for datasets/verl): the published columns ops, data_source, code, then ours;
    returns what happened, for the summary (pyarrow is optional)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return "not written: pyarrow is not installed"
    table_rows = [task_row(d, number) for number, d in enumerate(rows, 1)]
    columns = {
        "ops": pa.array([r["ops"] for r in table_rows], pa.list_(pa.string())),
        "data_source": pa.array([r["data_source"] for r in table_rows], pa.string()),
        "code": pa.array([r["code"] for r in table_rows], pa.string()),
        "id": pa.array([r["id"] for r in table_rows], pa.string()),
        "seed": pa.array([r["seed"] for r in table_rows], pa.int64()),
        "eager_ms": pa.array([r["eager_ms"] for r in table_rows], pa.float64()),
        "compile_ms": pa.array([r["compile_ms"] for r in table_rows], pa.float64()),
        "device": pa.array([r["device"] for r in table_rows], pa.string()),
        "filters": pa.array([json.dumps(r["filters"], sort_keys=True) for r in table_rows], pa.string()),
    }
    pq.write_table(pa.table(columns), path + ".tmp")
    os.replace(path + ".tmp", path)
    return f"{len(table_rows)} rows in tasks.parquet"


def summarize(decided: dict[int, dict], config: dict, count: int, catalog: dict) -> dict:
    stages: dict[str, dict[str, Any]] = {s: {"kept": 0, "dropped": 0, "skipped": 0, "reasons": {}}
                                         for s in STAGES + ("crash", "compose")}
    kept = [d for _, d in sorted(decided.items()) if d["status"] == "kept"]
    for d in decided.values():
        for stage, outcome in d.get("filters", {}).items():
            row = stages.setdefault(stage, {"kept": 0, "dropped": 0, "skipped": 0, "reasons": {}})
            if outcome == "pass":
                row["kept"] += 1
            elif outcome == "skipped":
                row["skipped"] += 1
            else:
                row["dropped"] += 1
                key = re.sub(r"\d[\d.e+-]*", "#", outcome)[:100]
                row["reasons"][key] = row["reasons"].get(key, 0) + 1
    hist: dict[str, int] = {}
    for d in kept:
        hist[category(d["ops"])] = hist.get(category(d["ops"]), 0) + 1
    times = sorted(d["eager_ms"] for d in kept if d.get("eager_ms") is not None)

    def quantile(q: float):
        return times[min(len(times) - 1, int(q * len(times)))] if times else None

    mix = dict(config["mix"])
    if config.get("transformers_share"):
        mix[TRANSFORMERS] = config["transformers_share"]
    total = sum(mix.values())
    return {"version": 1, "config": config, "torch_version": torch.__version__,
            "catalog_ops": len(catalog["ops"]), "transformers": catalog.get("transformers_note"),
            "requested": count, "candidates": len(decided), "kept": len(kept), "complete": len(kept) >= count,
            "stage_order": ["compose", "crash", *STAGES, "mix"],
            "stages": {k: v for k, v in stages.items() if v["kept"] or v["dropped"] or v["skipped"]},
            "op_count_histogram": hist,
            "op_count_percent": {k: round(100 * v / len(kept), 1) for k, v in hist.items()} if kept else {},
            "op_count_requested_percent": {k: round(100 * v / total, 1) for k, v in mix.items()},
            "eager_ms": {"min": times[0] if times else None, "p10": quantile(0.1), "median": quantile(0.5),
                         "p90": quantile(0.9), "max": times[-1] if times else None,
                         "mean": statistics.fmean(times) if times else None}}


def read_candidates(path: str) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise JobError("task", f"{path}:{n}: not JSON ({exc})") from exc
            if isinstance(row, dict) and isinstance(row.get("compose_error"), str):
                rows.append({"code": "", "ops": list(row.get("ops") or []), "name": row.get("name"),
                             "compose_error": row["compose_error"]})
                continue
            if not isinstance(row, dict) or not isinstance(row.get("code"), str):
                raise JobError("task", f"{path}:{n}: each row needs a \"code\" string")
            rows.append({"code": row["code"], "ops": list(row.get("ops") or []), "name": row.get("name")})
    return rows


def run(spec: dict, result: dict) -> None:
    device = require_device(spec)
    out_dir = require(spec, "out_dir", str)
    seed = require(spec, "seed", int)
    count = require(spec, "count", int)
    max_ops = require(spec, "max_ops", int)
    mix = {int(k): float(v) for k, v in require(spec, "mix", dict).items()}
    share = float(require(spec, "transformers_share", (int, float), default=0.0))
    suite = spec.get("suite") or None
    candidates_path = spec.get("candidates_path") or None
    max_candidates = require(spec, "max_candidates", int)
    timeout = require(spec, "candidate_timeout_s", (int, float), default=0)
    workers = require(spec, "workers", int, default=1)
    time_limit = require(spec, "time_limit_s", (int, float), default=0)
    # device_count asks NVML first: the driver is never initialised here, so the workers can fork.
    gpus = require(spec, "gpus", int, default=torch.cuda.device_count() if device == "cuda" else 1)
    if device == "cuda" and gpus < 1:
        raise JobError("task", "device cuda requested but torch sees no CUDA device (use --device cpu)")
    config = {"device": device, "seed": seed, "max_ops": max_ops, "mix": {str(k): v for k, v in sorted(mix.items())},
              "composer": spec.get("composer") or ("random" if not candidates_path else "file"),
              "min_ms": require(spec, "min_ms", (int, float)), "max_ms": require(spec, "max_ms", (int, float)),
              "compile_check": require(spec, "compile_check", bool),
              "contamination_threshold": require(spec, "contamination_threshold", (int, float)),
              "dedup_threshold": require(spec, "dedup_threshold", (int, float)),
              "suite_name": suite["name"] if suite else None, "candidates_path": candidates_path}
    if share > 0:
        config["transformers_share"] = share
    os.makedirs(out_dir, exist_ok=True)
    check_config(out_dir, config)
    catalog = load_catalog(out_dir)
    if spec.get("catalog_only"):
        result["catalog"] = os.path.join(out_dir, "catalog.json")
        result["composable"] = len(composable_ops(catalog))
        return
    ops = composable_ops(catalog)
    ops_transformers = transformers_ops(catalog)
    share_note = None
    if share > 0 and not ops_transformers:
        share_note = (f"transformers share {share:g} % requested, but the catalog has no transformers op "
                      f"({catalog.get('transformers_note')}): torch programs take its place")
        share = 0.0
    given = read_candidates(candidates_path) if candidates_path else None
    try:
        tolerance = Tolerance.from_spec(require(spec, "tolerance", dict))
    except (ValueError, AttributeError) as exc:
        raise JobError("internal", f"spec: tolerance: {exc}") from exc
    cfg = FilterConfig(device=device, tolerance=tolerance, stochastic_names=stochastic_names(catalog),
                       contamination_threshold=config["contamination_threshold"],
                       dedup_threshold=config["dedup_threshold"], min_ms=config["min_ms"],
                       max_ms=config["max_ms"], compile_check=config["compile_check"],
                       compile_backend=spec.get("compile_backend", "inductor"), seed=seed)
    suite_corpus = Corpus()
    for t in (suite or {}).get("tasks", []):
        with open(t["path"], encoding="utf-8") as f:
            code = f.read()
        try:
            suite_corpus.add(t["name"], tokens(code))
        except SyntaxError:
            continue
    decisions_path = os.path.join(out_dir, "decisions.jsonl")
    decided, orphans = read_decisions(decisions_path)
    log = Log(decisions_path)
    for orphan in sorted(i for i, n in orphans.items() if n >= 2):
        why = "the harness process ended twice while filtering this candidate (crash or out of memory)"
        entry = {"index": orphan, "seed": candidate_seed(seed, orphan), "status": "dropped", "stage": "crash",
                 "reason": why, "ops": [], "device": device, "filters": {"crash": why}}
        log.append(entry)
        decided[orphan] = entry
    kept: dict[tuple, Corpus] = {}
    kept_by_count: dict[str, int] = {}
    n_kept = 0
    for _, d in sorted(decided.items()):
        if d["status"] == "kept":
            n_kept += 1
            kept.setdefault(tuple(d["ops"]), Corpus()).add(f"synth-{n_kept:05d}", tokens(d["code"]))
            kept_by_count[category(d["ops"])] = kept_by_count.get(category(d["ops"]), 0) + 1
    quotas = op_count_quotas(mix, max_ops, count, share) if given is None else None
    work = os.path.join(out_dir, "work")
    os.makedirs(work, exist_ok=True)
    limit = len(given) if given is not None else max_candidates
    result.update({"new_candidates": 0, "resumed_candidates": len(decided), "workers": workers})
    pool = WorkerPool(workers, cfg, work, gpus=gpus, timeout_s=timeout)
    inflight: dict[int, tuple[dict, Candidate]] = {}
    inflight_by_count: dict[str, int] = {}
    started_at = time.monotonic()
    kept_at_start = n_kept

    def decide(entry: dict, c: Candidate, stage, reason) -> None:
        nonlocal n_kept
        kind = category(c.ops)
        if stage is None and quotas is not None and kept_by_count.get(kind, 0) >= quotas.get(kind, 0):
            what = "transformers" if kind == TRANSFORMERS else f"{kind}-op"
            stage, reason = "mix", f"the quota of {what} tasks is full ({quotas.get(kind, 0)})"
            c.log["mix"] = reason
        entry.update({"ops": c.ops, "status": "dropped" if stage else "kept", "stage": stage, "reason": reason,
                      "eager_ms": c.eager_ms, "compile_ms": c.compile_ms, "similarity": c.similarity,
                      "filters": c.log})
        if stage is None:
            n_kept += 1
            entry["code"] = c.code
            kept.setdefault(tuple(c.ops), Corpus()).add(f"synth-{n_kept:05d}", c.tokens)
            kept_by_count[kind] = kept_by_count.get(kind, 0) + 1
        log.append(entry)
        decided[entry["index"]] = entry
        result["new_candidates"] += 1

    index = 0
    try:
        while True:
            out_of_time = time_limit > 0 and time.monotonic() - started_at > time_limit
            if out_of_time:
                result["stopped"] = f"--time-limit {time_limit:g} s reached; rerun to resume"
                for undecided in sorted(inflight):  # a rerun filters them again
                    log.append({"released": undecided})
                break
            while n_kept < count and index < limit and pool.idle() > 0:
                if index in decided:
                    index += 1
                    continue
                cseed = candidate_seed(seed, index)
                entry = {"index": index, "seed": cseed, "device": device}
                if given is not None:
                    program = {"code": given[index]["code"], "ops": given[index]["ops"]}
                    entry["name"] = given[index]["name"]
                    if "compose_error" in given[index]:  # the composer wrote no program for this one
                        why = given[index]["compose_error"]
                        entry.update({"ops": program["ops"], "status": "dropped", "stage": "compose",
                                      "reason": why, "filters": {"compose": why}})
                        log.append(entry)
                        decided[index] = entry
                        result["new_candidates"] += 1
                        index += 1
                        continue
                else:
                    assert quotas is not None  # composed programs: quotas were set from the mix
                    kind = steered_count(cseed, quotas, kept_by_count, inflight_by_count)
                    if kind is None:
                        break
                    try:
                        program = (compose_transformers(ops_transformers, cseed, device) if kind == TRANSFORMERS
                                   else compose(ops, cseed, mix, max_ops, device, count=int(kind)))
                    except ComposeError as exc:
                        raise JobError("task", str(exc)) from exc
                    entry["n_ops"] = program["n_ops"]
                path = os.path.join(work, f"candidate_{index}.py")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(program["code"])
                c = Candidate(code=program["code"], ops=program["ops"], path=path)
                log.append({"started": index})
                stage, reason = run_static_filters(c, cfg, suite_corpus, kept)
                if stage is not None:
                    os.unlink(path)
                    decide(entry, c, stage, reason)
                else:
                    pool.submit(index, c)
                    inflight[index] = (entry, c)
                    inflight_by_count[category(c.ops)] = inflight_by_count.get(category(c.ops), 0) + 1
                index += 1
            if not inflight:
                break
            for done, outcome in pool.wait(poll_s=5.0 if time_limit > 0 else None):
                entry, c = inflight.pop(done)
                inflight_by_count[category(c.ops)] -= 1
                c.log = outcome["log"]
                c.eager_ms, c.compile_ms = outcome["eager_ms"], outcome["compile_ms"]
                entry["seconds"] = outcome["seconds"]
                stage, reason = outcome["stage"], outcome["reason"]
                if stage is None:  # a near-duplicate may have been kept while this one was in flight
                    reason = check_dedup(c, cfg, kept)
                    if reason is not None:
                        stage = "dedup"
                        c.log["dedup"] = reason
                if os.path.exists(c.path):
                    os.unlink(c.path)
                decide(entry, c, stage, reason)
    finally:
        pool.close()
    elapsed = time.monotonic() - started_at
    result["run_seconds"] = round(elapsed, 1)
    result["kept_this_run"] = n_kept - kept_at_start
    rows = [d for _, d in sorted(decided.items()) if d["status"] == "kept"]
    with open(os.path.join(out_dir, "tasks.jsonl.tmp"), "w", encoding="utf-8") as f:
        for number, d in enumerate(rows, 1):
            f.write(json.dumps(json_safe(task_row(d, number)), allow_nan=False) + "\n")
    os.replace(os.path.join(out_dir, "tasks.jsonl.tmp"), os.path.join(out_dir, "tasks.jsonl"))
    parquet = write_parquet(rows, os.path.join(out_dir, "tasks.parquet"))
    summary = summarize(decided, config, count, catalog)
    summary["run"] = {"workers": workers, "gpus": gpus, "seconds": result["run_seconds"],
                      "candidates": result["new_candidates"], "kept": result["kept_this_run"],
                      "kept_per_hour": round(3600 * result["kept_this_run"] / elapsed, 1) if elapsed > 0 else None}
    summary["parquet"] = parquet
    if result.get("stopped"):
        summary["run"]["stopped"] = result["stopped"]
    if quotas is not None:
        summary["op_count_quotas"] = dict(sorted(quotas.items()))
    if share_note:
        summary["transformers_share_note"] = share_note
    write_json(os.path.join(out_dir, "summary.json"), summary)
    result["summary"] = summary
