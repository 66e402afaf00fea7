"""bench/kernelbench/agreement.py's own logic on the CPU: the disagreement classes, the summary (agreement
where neither side flags a problem, the median speedup ratio), the loader of KernelBench's evaluation
modules (here a stand-in package of our own with the same imports: LLM clients it must not need) and
the carried ninja. The GPU run itself is for the lead's GPU session; its plumbing is
`agreement.py run --dry-run` (docs/bench.md)."""

import argparse
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "kernelbench"))
import agreement  # noqa: E402

HONEST = {"class": "honest"}
HYBRID = {"class": "hybrid"}


def ours(correct, kind=None, speedup=None):
    return {"outcome": "verdict", "correct": correct, "error_kind": kind, "speedup": speedup}


def theirs(correct, runtime=1.0, ref=1.0, flagged=False):
    return {"compiled": True, "correct": correct, "runtime_ms": runtime, "ref_runtime_ms": ref,
            "excessive_speedup": flagged}


def test_classes():
    c = agreement.classify
    assert c(HONEST, ours(True, speedup=2.0), theirs(True, 1.0, 2.05)) == "agree_correct"
    assert c(HONEST, ours(True, speedup=2.0), theirs(True, 1.0, 1.5)) == "timing_difference"
    assert c(HONEST, ours(False, "build"), theirs(False)) == "agree_fail"
    assert c(HYBRID, ours(False, "static_rule"), theirs(True)) == "we_refuse_hybrid"
    assert c(HONEST, ours(False, "static_rule"), theirs(True)) == "we_refuse_honest"
    assert c(HONEST, ours(False, "timed_mismatch"), theirs(True)) == "we_catch"
    assert c(HONEST, ours(False, "mismatch"), theirs(True)) == "we_fail"
    assert c(HONEST, ours(True, speedup=1.0), theirs(False)) == "they_fail"
    assert c(HONEST, {"error": "not run: deadline"}, theirs(True)) == "not_compared"
    assert c(HONEST, ours(True), {"error": "crashed"}) == "not_compared"


def test_summary_counts_only_what_neither_side_flags(tmp_path):
    rows = []
    for sid, o, t in [("a", ours(True, speedup=2.0), theirs(True, 1.0, 2.0)),
                      ("b", ours(True, speedup=1.1), theirs(True, 1.0, 1.0)),
                      ("c", ours(False, "mismatch"), theirs(True)),
                      ("d", ours(False, "static_rule"), theirs(True)),           # ours flags it
                      ("e", ours(True, speedup=30.0), theirs(True, 1.0, 40.0, flagged=True)),  # theirs flags it
                      ("f", {"error": "not run: deadline"}, theirs(True))]:
        rows.append({"id": sid, "task_name": "level1/19_ReLU", "corpus_class": "honest", "ours": o, "theirs": t,
                     "class": agreement.classify(HONEST, o, t)})
    args = argparse.Namespace(policy="strict", dry_run=False, correct_trials=5, perf_trials=20)
    summary = agreement.write_table(tmp_path, rows, args, {"gpu": "NVIDIA H200", "kernelbench_commit": "423217d"})
    assert summary["compared"] == 5 and summary["neither_flags"] == 3
    assert summary["correctness_agreement"] == pytest.approx(2 / 3)
    assert summary["median_speedup_ratio_ours_over_theirs"] == pytest.approx((1.0 + 1.1) / 2)
    table = (tmp_path / "table.md").read_text()
    assert "| e | honest | level1/19_ReLU | correct | 30.00 | correct (excessive speedup flagged) | 40.00 |" in table
    assert json.loads((tmp_path / "summary.json").read_text())["classes"]["we_refuse_honest"] == 1


def test_kernelbench_modules_load_without_their_llm_clients(tmp_path):
    """A package shaped like KernelBench's (eval.py imports `from . import timing, dataset`, utils.py
    imports the LLM clients) loads in a fresh interpreter where those clients do not exist."""
    kb = tmp_path / "kernelbench"
    kb.mkdir()
    (kb / "utils.py").write_text("from dotenv import load_dotenv\nfrom openai import OpenAI\n"
                                 "from litellm import completion\nfrom tqdm import tqdm\n")
    (kb / "timing.py").write_text("import json\n")
    (kb / "dataset.py").write_text("import re\n")
    (kb / "eval.py").write_text(
        "from pydantic import BaseModel\nfrom . import timing, dataset\n"
        "class KernelExecResult(BaseModel):\n    compiled: bool = False\n    metadata: dict = {}\n"
        "def build_compile_cache(custom_model_src, verbose=False, build_dir=None): pass\n"
        "def eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42, num_correct_trials=1,"
        " num_perf_trials=10, measure_performance=False, timing_method='cuda_event', verbose=False,"
        " build_dir=None, device=None, backend='cuda', precision=None):\n"
        "    return KernelExecResult(compiled=True)\n")
    code = ("import sys; sys.path.insert(0, %r); import agreement\n"
            "for m in ('dotenv', 'openai', 'litellm', 'tqdm'): sys.modules[m] = None\n"  # as if not installed
            "import importlib\n"
            "ev = agreement.load_kernelbench(__import__('pathlib').Path(%r))\n"
            "r = ev.eval_kernel_against_ref('a', 'b')\n"
            "print(r.compiled, r.metadata, ev.KernelExecResult().metadata is not r.metadata)\n"
            % (str(REPO / "bench" / "kernelbench"), str(kb)))
    # sys.modules[m] = None makes `import m` fail, so the loader's stand-ins are what utils.py gets.
    code = code.replace("sys.modules[m] = None", "sys.modules.pop(m, None); sys.meta_path.insert(0, Block(m))")
    code = ("import importlib.abc\nclass Block(importlib.abc.MetaPathFinder):\n"
            "    def __init__(self, name): self.name = name\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == self.name: raise ImportError(name)\n" + code)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True {} True"
    # Another version of the function (a parameter missing) is refused with what to do.
    (kb / "eval.py").write_text((kb / "eval.py").read_text().replace(" num_perf_trials=10,", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "eval_kernel_against_ref lacks ['num_perf_trials']" in out.stderr


def test_carried_ninja_goes_on_path_only_when_missing(tmp_path, monkeypatch):
    prepared, out = tmp_path / "prepared", tmp_path / "out"
    (prepared / "wheels").mkdir(parents=True)
    with zipfile.ZipFile(prepared / "wheels" / "ninja-1.13.2-py3-none-manylinux2014_x86_64.whl", "w") as z:
        z.writestr("ninja-1.13.2.data/scripts/ninja", "#!/bin/sh\necho 1.13.2\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = agreement.ensure_ninja(prepared, out)
    assert found == str(out / "ninja-bin" / "ninja")
    assert os.environ["PATH"].split(os.pathsep)[0] == str(out / "ninja-bin")
    assert subprocess.run(["ninja"], capture_output=True, text=True).stdout.strip() == "1.13.2"
    assert agreement.ensure_ninja(prepared, tmp_path / "again") == found  # now on PATH: kept
