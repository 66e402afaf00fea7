"""Declarative judge scenarios, run through the `cuda-agent` binary.

Each file in cases/ is one scenario: a task, a candidate, a device, extra
arguments for `cuda-agent judge`, and the verdict the judge must give:

    {"description": "...",
     "task": "examples/relu_scale/model.py",          # relative to the repository
     "candidate": "examples/relu_scale/candidates/cpu_correct",
     "device": "cpu" | "cuda",
     "args": ["--baselines", "eager"],
     "timeout_s": 600,                                # optional, for the whole judge run
     "expect": {
       "exit_code": 0,
       "reward": -1 | [1, 2, 3] | null,               # a list means any of
       "correct": true | false | null,
       "stage": "done" | ["static", "verify"],        # a list means any of
       "reason_contains": "..." | ["...", "..."],     # case-insensitive; a list means all of
       "reason_contains_any": ["...", "..."],         # case-insensitive; any of
       "error_kind": "..." | ["...", "..."],
       "build_error": {"file_endswith": "relu_scale.cpp", "line": 9}
                                                      # some entry of build.errors matches
     }}

Any other key of "expect" is compared with the JudgeResult key of the same
name (a list in the case means any of). A new scenario is a new file.
"candidate" may be left out: it is then the folder holding the case file
(the hack corpus, tests/hacks/<id>/case.json, keeps each candidate next to its
case; tests/hacks/test_hack_corpus.py runs it with check_judge_case below).

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
CUDA cases run only where torch sees a GPU. All cases share one --cache-dir
per test session ($CUDA_AGENT_TEST_CACHE_DIR keeps it across sessions), so
identical sources compile once.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES_DIR = Path(__file__).resolve().parent / "cases"
CASE_FILES = sorted(CASES_DIR.glob("*.json"))
DEFAULT_TIMEOUT_S = 600


def judge_binary():
    return Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")


def cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def load_case(path):
    with open(path, encoding="utf-8") as f:
        case = json.load(f)
    case.setdefault("candidate", str(Path(path).resolve().parent.relative_to(REPO)))
    return case


@pytest.fixture(scope="session")
def binary():
    path = judge_binary()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"judge binary not built: {path}")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    configured = os.environ.get("CUDA_AGENT_TEST_CACHE_DIR")
    if configured:
        Path(configured).mkdir(parents=True, exist_ok=True)
        return Path(configured)
    return tmp_path_factory.mktemp("judge-cache")


def judge_argv(binary, case, cache_dir, json_output=True):
    argv = [str(binary), "judge",
            "--task", str(REPO / case["task"]),
            "--candidate", str(REPO / case["candidate"]),
            "--device", case.get("device", "cpu"),
            "--cache-dir", str(cache_dir)]
    if json_output:
        argv.append("--json")
    return argv + list(case.get("args", []))


def run_judge(binary, case, cache_dir, json_output=True):
    timeout = case.get("timeout_s", DEFAULT_TIMEOUT_S)
    try:
        return subprocess.run(judge_argv(binary, case, cache_dir, json_output), cwd=REPO,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"judge did not finish within {timeout} s")


def skip_unless_device(case):
    if case.get("device") == "cuda" and not cuda_available():
        pytest.skip("needs a CUDA GPU")


def describe(proc):
    return (f"exit {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-3000:]}"
            f"\n--- stderr (tail)\n{proc.stderr[-3000:]}")


def matches(actual, expected):
    """A list in the case means "any of"; everything else must be equal."""
    if isinstance(expected, list) and not isinstance(actual, list):
        return actual in expected
    return actual == expected


def check_reason(result, expect):
    reason = (result.get("reason") or "").lower()
    wanted = expect.get("reason_contains")
    if wanted is not None:
        for part in wanted if isinstance(wanted, list) else [wanted]:
            assert part.lower() in reason, f"reason lacks {part!r}: {result.get('reason')!r}"
    any_of = expect.get("reason_contains_any")
    if any_of is not None:
        assert any(part.lower() in reason for part in any_of), \
            f"reason has none of {any_of!r}: {result.get('reason')!r}"


def check_build_error(result, wanted):
    errors = (result.get("build") or {}).get("errors") or []
    suffix = wanted.get("file_endswith", "")
    for error in errors:
        if not str(error.get("file") or "").endswith(suffix):
            continue
        if "line" in wanted and error.get("line") != wanted["line"]:
            continue
        return
    pytest.fail(f"no build error matching {wanted!r} in {errors!r}")


def check_invariants(result):
    """What every JudgeResult must satisfy, whatever the scenario."""
    assert result.get("schema_version") == 1
    reward = result.get("reward")
    if reward is not None:
        assert reward in (-1, 1, 2, 3)
        if result.get("correct") is not None:
            assert (reward > 0) == bool(result["correct"]), "reward and correct disagree"
    if result.get("stage") == "done" and result.get("correct"):
        candidate = (result.get("timing") or {}).get("candidate") or {}
        assert isinstance(candidate.get("time_us"), (int, float)) and candidate["time_us"] > 0


SPECIAL_KEYS = {"exit_code", "reason_contains", "reason_contains_any", "build_error"}


def check_judge_case(case, binary, cache_dir, require_device=True):
    """Judges `case` (a loaded case file) and asserts everything its "expect" says. A case that must
    stop before the device is used (at the static stage) may pass require_device=False."""
    if require_device:
        skip_unless_device(case)
    expect = case["expect"]
    proc = run_judge(binary, case, cache_dir)
    assert proc.returncode == expect.get("exit_code", 0), describe(proc)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("stdout is not one JSON object\n" + describe(proc))
    assert isinstance(result, dict), describe(proc)
    check_invariants(result)
    for key, expected in expect.items():
        if key in SPECIAL_KEYS:
            continue
        assert key in result, f"JudgeResult has no {key!r}"
        assert matches(result[key], expected), \
            f"{key}: expected {expected!r}, got {result[key]!r} (reason: {result.get('reason')!r})"
    check_reason(result, expect)
    if "build_error" in expect:
        check_build_error(result, expect["build_error"])


@pytest.mark.parametrize("case_path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_case(case_path, binary, cache_dir):
    check_judge_case(load_case(case_path), binary, cache_dir)


def test_text_output_names_reward_and_reason(binary, cache_dir):
    """Without --json the judge prints text that names the reward and the reason."""
    case = load_case(CASES_DIR / "relu_scale_cpu_compile_error.json")
    skip_unless_device(case)
    as_json = run_judge(binary, case, cache_dir)
    reason = json.loads(as_json.stdout)["reason"]
    assert reason
    as_text = run_judge(binary, case, cache_dir, json_output=False)
    assert as_text.returncode == as_json.returncode, describe(as_text)
    text = as_text.stdout + as_text.stderr
    assert "reward" in text.lower(), describe(as_text)
    # The first line of the reason, shortened: wrapped or trimmed output still matches.
    assert reason.splitlines()[0][:60] in text, describe(as_text)
