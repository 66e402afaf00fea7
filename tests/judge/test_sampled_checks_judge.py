"""The sampled checks end to end (HACKS.md B14; python/cuda_agent_harness/sampled_checks.py,
src/judge/sampled_checks.h): a candidate right on the first calls of its process and wrong after them
passes the five full checks and their repeat, and only the sampled checks, which run next, refuse it;
one wrong on a single warm-up call is refused by the fingerprints of the timed calls. Their call
counters are statics (the C++ rules refuse them as `static_state`), so they are judged with the
static rules skipped (the test-only `--test-skip-static`, honoured with CUDA_AGENT_TESTING=1): what is
tested is the run-time check alone.

Run: CUDA_AGENT_BIN=build/cuda-agent python3 -m pytest tests/judge/test_sampled_checks_judge.py -q
"""

import json
import os
import shutil
import subprocess

import pytest

from test_judge_cases import REPO, binary, cache_dir  # noqa: F401

TASK = REPO / "examples" / "relu_scale" / "model.py"
CORRECT = REPO / "examples" / "relu_scale" / "candidates" / "cpu_correct"
# Right for the first six calls of the process (five checks and the repeat of check 1), then nothing.
LATE_SKIP = """
#include <cstdint>

extern "C" void relu_scale_launcher(const float* x, float* y, int64_t n, float scale, int config) {
  (void)config;
  static int calls = 0;
  if (++calls > 6) return;
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * scale;
}
"""


# Wrong on its seventh call only: the first warm-up call of a judgement whose verification ran six
# (five checks and the repeat of check 1) and no sampled set.
ONE_WARM_UP_WRONG = LATE_SKIP.replace("if (++calls > 6) return;", "if (++calls == 7) return;")


def candidate_with(tmp_path_factory, name, source):
    folder = tmp_path_factory.mktemp(name)
    shutil.copytree(CORRECT, folder, dirs_exist_ok=True)
    (folder / "kernels" / "relu_scale.cpp").write_text(source)
    return folder


@pytest.fixture(scope="module")
def late_skip(tmp_path_factory):
    return candidate_with(tmp_path_factory, "late_skip", LATE_SKIP)


@pytest.fixture(scope="module")
def one_warm_up_wrong(tmp_path_factory):
    return candidate_with(tmp_path_factory, "one_warm_up_wrong", ONE_WARM_UP_WRONG)


def judge(binary, cache_dir, candidate, *flags, until="verify"):
    env = dict(os.environ, CUDA_AGENT_TESTING="1")
    argv = [str(binary), "judge", "--task", str(TASK), "--candidate", str(candidate), "--device", "cpu",
            "--cache-dir", str(cache_dir), "--json", "--until", until, "--test-skip-static", *flags]
    proc = subprocess.run(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_a_kernel_wrong_after_the_full_checks_is_refused_by_the_sampled_checks(binary, cache_dir, late_skip):
    result = judge(binary, cache_dir, late_skip, "--sampled-checks", "4")
    assert result["correct"] is False
    assert result["stage"] == "verify"
    assert result["error_kind"] == "sampled_mismatch"
    assert "sampled check 1/4" in result["reason"]
    assert "differs from the reference" in result["reason"]


def test_without_sampled_checks_the_same_kernel_passes_verification(binary, cache_dir, late_skip):
    result = judge(binary, cache_dir, late_skip, "--sampled-checks", "0")
    assert result["correct"] is True, result["reason"]
    assert "sampled_checks" not in result["verify"]


def test_a_correct_kernel_passes_its_sampled_checks(binary, cache_dir):
    result = judge(binary, cache_dir, CORRECT, "--sampled-checks", "4")
    assert result["correct"] is True, result["reason"]
    assert result["verify"]["sampled_checks"]["count"] == 4


def test_a_kernel_wrong_on_one_warm_up_call_is_refused_by_the_timed_calls_fingerprints(
        binary, cache_dir, one_warm_up_wrong):
    # Three fingerprinted sets, all of them the timed calls' (the first three of the profile's): no
    # sampled set, so the verification's calls are the six full ones.
    result = judge(binary, cache_dir, one_warm_up_wrong, "--sampled-checks", "3", "--baselines", "none",
                   until="done")
    assert result["correct"] is False, result["reason"]
    assert result["stage"] == "profile"
    assert result["error_kind"] == "timed_mismatch"
    assert "warm-up call 0 (input set 0)" in result["reason"]
    assert "differs from the reference" in result["reason"]
    assert result["verify"]["sampled_checks"] == {"count": 0, "timed_sets": 3,
                                                  "reference_seconds": result["verify"]["sampled_checks"]
                                                  ["reference_seconds"]}


def test_a_correct_kernel_has_every_call_on_a_fingerprinted_set_compared(binary, cache_dir):
    result = judge(binary, cache_dir, CORRECT, "--sampled-checks", "3", "--baselines", "none", until="done")
    assert result["correct"] is True, result["reason"]
    # Warm-up 5 and timed 20 over the profile's 25 input sets: calls 0, 1 and 2 are on sets 0-2.
    assert result["timing"]["fingerprinted_calls"] == 3
