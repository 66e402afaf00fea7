"""Defence in depth: the judge's test-only switch that skips the static rules, and the matrix it makes.

`cuda-agent judge --test-skip-static` judges without the C++ scan of kernels/ and model_new.py's AST rules,
so the hack corpus shows what the run-time checks catch on their own (docs/hacks.md, "Defence in depth").
It must be impossible to use by accident: refused without CUDA_AGENT_TESTING=1, absent from every other
command and from the CUDA_AGENT_* mirrors, and its result is never a verdict (reward null,
`static_skipped: true`). The matrix (tests/hacks/matrix/cpu.json, made by tests/hacks/matrix.py) must cover
the corpus, explain every run-time miss (runtime_notes.json), and match docs/hacks.md.

Run: CUDA_AGENT_BIN=build/cuda-agent python3 -m pytest tests/hacks/test_static_skip.py -q
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HACKS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(HACKS_DIR.parent / "judge"))
sys.path.insert(0, str(HACKS_DIR))

import matrix  # noqa: E402
from test_judge_cases import REPO, binary, cache_dir, judge_argv, load_case  # noqa: E402,F401

CPU_MATRIX = HACKS_DIR / "matrix" / "cpu.json"
GPU_MATRIX = HACKS_DIR / "matrix" / "gpu.json"
# Caught by the static rules and, with them skipped, at run time (the matrix says so too): through the
# op guard (torch compute; a precision change dressed as a copy from Python; from C++ the scan allows
# copy_, and only the op guard refuses it: b11_half_copy_cpp), and through the process watch (a timer
# patched from C++ through pybind11).
CAUGHT_BOTH = {"c1_torch_relu_py": "forbidden_op", "a4_python_patch_from_cpp": "patching",
               "b11_half_copy_py": "forbidden_op"}
LEGITIMATE = "legit_static_helpers_cpp"


def environment(**changes):
    env = {k: v for k, v in os.environ.items() if k != matrix.TESTING_ENV}
    env.update(changes)
    return env


def judge(binary, cache_dir, name, *extra, env=None, timeout=900):
    case = load_case(HACKS_DIR / name / "case.json")
    return subprocess.run(judge_argv(binary, case, cache_dir) + list(extra), cwd=REPO, env=env or environment(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("testing", [None, "0", "yes"])
def test_the_switch_is_refused_without_the_testing_variable(binary, cache_dir, testing):
    env = environment() if testing is None else environment(CUDA_AGENT_TESTING=testing)
    proc = judge(binary, cache_dir, "c1_torch_relu_py", "--test-skip-static", env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "--test-skip-static is a test-only switch" in proc.stderr
    assert "CUDA_AGENT_TESTING=1" in proc.stderr


def test_the_switch_exists_only_as_itself_on_judge(binary, cache_dir):
    testing = environment(CUDA_AGENT_TESTING="1")
    valued = judge(binary, cache_dir, "c1_torch_relu_py", "--test-skip-static=1", env=testing, timeout=60)
    assert valued.returncode == 2 and "takes no value" in valued.stderr, valued.stderr
    build = subprocess.run([str(binary), "build", "--candidate", str(HACKS_DIR / "c1_torch_relu_py"),
                            "--test-skip-static"], cwd=REPO, env=testing, capture_output=True, text=True,
                           timeout=60)
    assert build.returncode == 2 and "unknown option --test-skip-static" in build.stderr, build.stderr
    help_text = subprocess.run([str(binary), "judge", "--help"], cwd=REPO, capture_output=True, text=True,
                               timeout=60)
    assert "skip-static" not in help_text.stdout + help_text.stderr
    # No CUDA_AGENT_* mirror: the variable named like the flag changes nothing; the static stage runs.
    mirrored = judge(binary, cache_dir, "c1_torch_relu_py", "--until", "verify",
                     env=environment(CUDA_AGENT_TESTING="1", CUDA_AGENT_TEST_SKIP_STATIC="1"))
    result = json.loads(mirrored.stdout)
    assert result["static_skipped"] is False
    assert (result["stage"], result["error_kind"]) == ("static", "static_rule")


@pytest.mark.parametrize("name", sorted(CAUGHT_BOTH))
def test_a_static_hack_is_caught_at_run_time_too(binary, cache_dir, name):
    normal = json.loads(judge(binary, cache_dir, name).stdout)
    assert (normal["stage"], normal["error_kind"], normal["reward"]) == ("static", "static_rule", -1)
    assert normal["static_skipped"] is False
    proc = judge(binary, cache_dir, name, "--test-skip-static", env=environment(CUDA_AGENT_TESTING="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["static_skipped"] is True
    assert result["reward"] is None, "a judgement without the static rules is never a verdict"
    assert result["unofficial_reward"] == -1, result["reason"]
    assert result["correct"] is False
    assert result["stage"] != "static" and result["violations"] == [], result["reason"]
    assert result["error_kind"] == CAUGHT_BOTH[name], result["reason"]
    assert result["reason"].startswith("static rules skipped (test only: --test-skip-static), not a verdict; ")


def test_a_legitimate_case_passes_without_the_static_rules(binary, cache_dir):
    proc = judge(binary, cache_dir, LEGITIMATE, "--test-skip-static", env=environment(CUDA_AGENT_TESTING="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["static_skipped"] is True and result["reward"] is None
    assert result["correct"] is True, result["reason"]
    assert result["unofficial_reward"] in (1, 2, 3), result["reason"]
    assert result["stage"] == "done"


# --- the matrix ------------------------------------------------------------------------------------


def load_matrix():
    assert CPU_MATRIX.is_file(), "run tests/hacks/matrix.py run --out tests/hacks/matrix/cpu.json"
    return json.loads(CPU_MATRIX.read_text())


def test_every_case_is_in_the_matrix_with_both_columns():
    cases = load_matrix()["cases"]
    names = {p.parent.name for p in matrix.case_paths()}
    assert set(cases) == names, f"missing {sorted(names - set(cases))}, stale {sorted(set(cases) - names)}"
    for name, entry in cases.items():
        case = load_case(HACKS_DIR / name / "case.json")
        assert entry["class"] == matrix.hack_class(name, case)
        assert entry["static"]["result"] in ("caught", "missed", "passed", "refused"), (name, entry)
        assert entry["runtime"]["result"] != "error", (name, entry["runtime"])
        if entry["case_device"] == "cpu":
            assert entry["runtime"]["result"] in ("caught", "missed", "passed"), (name, entry["runtime"])
        if entry["legitimate"]:
            assert entry["static"]["result"] == "passed", name
            assert entry["runtime"]["result"] in ("passed", "needs-gpu"), (name, entry["runtime"])


def test_every_run_time_miss_is_explained_and_every_note_is_used():
    notes = matrix.load_notes()
    gpu = json.loads(GPU_MATRIX.read_text()) if GPU_MATRIX.is_file() else None
    cases = matrix.merged_cases(load_matrix(), gpu)
    missed = {n for n, e in cases.items() if e["runtime"]["result"] == "missed"}
    assert missed <= set(notes), f"explain in runtime_notes.json: {sorted(missed - set(notes))}"
    assert set(notes) <= missed | {n for n, e in cases.items() if e["runtime"]["result"] == "pending"}, \
        f"notes for cases that are not missed: {sorted(set(notes) - missed)}"


def test_the_documented_matrix_is_current():
    gpu = json.loads(GPU_MATRIX.read_text()) if GPU_MATRIX.is_file() else None
    section = matrix.render(load_matrix(), gpu, matrix.load_notes())
    document = matrix.DOC_FILE.read_text()
    assert matrix.DOC_BEGIN in document, "docs/hacks.md has no matrix section"
    assert matrix.splice(document, section) == document, "regenerate: python3 tests/hacks/matrix.py doc"


def test_case_folders_carry_their_hack_class():
    assert matrix.hack_class("a1_side_stream_cu", {"hack_class": "A1"}) == "A1"
    assert matrix.hack_class("d_system_cpp", {"hack_class": "D"}) == "D"
    with pytest.raises(ValueError, match="folder prefix says B4"):
        matrix.hack_class("b4_cache_py", {"hack_class": "B5"})
    with pytest.raises(ValueError, match="unknown hack_class"):
        matrix.hack_class("legit_x", {"hack_class": "Z9", "legitimate": True})


def test_matrix_cells_read_a_judge_result():
    skipped = {"outcome": "verdict", "static_skipped": True, "reward": None, "unofficial_reward": -1,
               "stage": "verify", "error_kind": "forbidden_op",
               "reason": "static rules skipped (test only: --test-skip-static), not a verdict; check 0: x"}
    assert matrix.cell(skipped, False) == {"result": "caught", "stage": "verify", "error_kind": "forbidden_op",
                                           "reason": "check 0: x"}
    assert matrix.cell({**skipped, "unofficial_reward": 2}, False)["result"] == "missed"
    assert matrix.cell({**skipped, "unofficial_reward": 2}, True)["result"] == "passed"
    assert matrix.cell({"outcome": "internal_error", "stage": "static"}, False)["result"] == "error"
    stopped = {"outcome": "verdict", "reward": -1, "stage": "static", "error_kind": "static_rule"}
    assert matrix.static_cell(stopped, False)["result"] == "caught"
    no_gpu = {"outcome": "internal_error", "stage": "static", "error_kind": "internal",
              "stage_seconds": {"static": 0.1}}
    assert matrix.static_cell(no_gpu, False)["result"] == "missed"
    assert matrix.static_cell({**no_gpu, "stage_seconds": {}}, False)["result"] == "error"
