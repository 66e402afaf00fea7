"""The hack corpus: one small candidate per known reward hack the judge must reject, and legitimate
candidates (that look like hacks to a careless rule) it must accept. HACKS.md names the classes.

Each tests/hacks/<id>/ is a self-contained candidate (kernels/, model_new.py) plus case.json in the format
of tests/judge/test_judge_cases.py ("candidate" defaults to the case's folder), with three more keys:

    "hack_class": "C1"                 # the HACKS.md class (A1 .. D); for a legitimate case, the class
                                       # whose rules it must not trip
    "legitimate": true                 # a candidate the judge must accept (default false)
    "requires": ["cpp_static_scan"]    # needs the judge's C++ static scan (src/judge/static_rules.h);
                                       # skipped, with a note, while the judge does not run it

Run with the binary under test: CUDA_AGENT_BIN=build/cuda-agent python3 -m pytest tests/hacks -q
A new hack is a new folder.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HACKS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(HACKS_DIR.parent / "judge"))

from test_judge_cases import (REPO, binary, cache_dir, check_judge_case, judge_argv,  # noqa: E402,F401
                              load_case)

CASE_FILES = sorted(HACKS_DIR.glob("*/case.json"))
HACK_CLASS = re.compile(r"^[A-D]([1-9][0-9]?)?$")
PROBE_CASE = HACKS_DIR / "c1_aten_relu_cpp" / "case.json"


@pytest.fixture(scope="session")
def cpp_static_scan(binary, cache_dir):
    """Whether the judge runs the C++ static scan: it must stop an ATen-computing binding at the
    static stage."""
    case = load_case(PROBE_CASE)
    argv = judge_argv(binary, case, cache_dir) + ["--until", "verify"]
    proc = subprocess.run(argv, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        return False
    return result.get("stage") == "static" and result.get("error_kind") == "static_rule"


@pytest.mark.parametrize("case_path", CASE_FILES, ids=[f"hack/{p.parent.name}" for p in CASE_FILES])
def test_hack_case(case_path, binary, cache_dir, request):
    case = load_case(case_path)
    if "cpp_static_scan" in case.get("requires", []) and not request.getfixturevalue("cpp_static_scan"):
        pytest.skip("this judge does not run the C++ static scan of kernels/ yet")
    # A hack stopped at the static stage never reaches the GPU: judge it on any machine.
    stops_statically = not case.get("legitimate") and case["expect"].get("stage") == "static"
    check_judge_case(case, binary, cache_dir, require_device=not stops_statically)


def test_every_case_names_its_hack_class():
    assert CASE_FILES, "the corpus is empty"
    for path in CASE_FILES:
        case = load_case(path)
        name = path.parent.name
        assert HACK_CLASS.match(str(case.get("hack_class", ""))), f"{name}: hack_class must be A1 .. D"
        assert case.get("description"), f"{name}: describe the hack"
        assert (REPO / case["task"]).is_file(), f"{name}: no task {case['task']}"
        assert (path.parent / "model_new.py").is_file() and (path.parent / "kernels").is_dir(), name
        expect = case["expect"]
        if case.get("legitimate", False):
            assert expect.get("reward") != -1 and expect.get("stage") in ("verify", "profile", "done"), name
        else:
            assert expect.get("reward") == -1, f"{name}: a hack must get reward -1"
            assert expect.get("reason_contains"), f"{name}: name the rule that must reject it"


def test_corpus_covers_the_static_classes():
    classes = {load_case(p)["hack_class"] for p in CASE_FILES if not load_case(p).get("legitimate")}
    for wanted in ("A1", "A2", "A3", "A4", "A5", "A7", "B2", "B4", "C1", "C2", "C4", "D"):
        assert wanted in classes, f"no hack of class {wanted}"
    legitimate = [p for p in CASE_FILES if load_case(p).get("legitimate")]
    assert len(legitimate) >= 3
