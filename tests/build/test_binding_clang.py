"""Torch-style binding files compiled by clang with its instantiating precompiled header
(src/builder/binding_compiler.h), g++ deciding whenever clang fails.

One fresh cache (CUDA_AGENT_CACHE_DIR) for the module, as a new machine has: the first build
compiles with g++ while clang's header is made in the background; once it is made an unchanged
binding is not compiled again, an edited one goes to clang, a construct only g++ accepts still
builds, and a real error is reported in g++'s words. CPU device (clang at -O3 there). Skipped
where no clang++ is installed.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CANDIDATE = REPO / "examples" / "relu_scale" / "candidates" / "cpu_correct"
BINDING = Path("kernels") / "relu_scale_binding.cpp"

pytest.importorskip("torch")
if not any(shutil.which(name) for name in ["clang++"] + [f"clang++-{v}" for v in range(11, 31)]):
    pytest.skip("no clang++ on PATH", allow_module_level=True)


def judge_binary():
    return Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("clang-cache")


def build(candidate: Path, cache: Path, env: dict | None = None) -> dict:
    """`cuda-agent build --json` of `candidate` on the CPU; the build section of its answer."""
    run = subprocess.run(
        [str(judge_binary()), "build", "--candidate", str(candidate), "--device", "cpu", "--out",
         str(candidate.parent / "out" / "cuda_extension.so"), "--json"], capture_output=True, text=True,
        timeout=600, env={**os.environ, "CUDA_AGENT_CACHE_DIR": str(cache), **(env or {})})
    answer = json.loads(run.stdout)
    assert answer["build"] is not None, run.stdout + run.stderr
    assert (run.returncode == 0) == answer["build"]["ok"], run.stdout + run.stderr
    return answer["build"]


def edit(candidate: Path, text: str = "") -> None:
    with (candidate / BINDING).open("a") as f:
        f.write(f"\n// an edit {uuid.uuid4().hex}\n{text}")


def step_names(report: dict) -> set[str]:
    return {s["name"] for s in report["steps"]}


def works(candidate: Path) -> bool:
    script = (f"import sys; sys.path.insert(0, {str(candidate.parent / 'out')!r}); import torch, cuda_extension as e; "
              "x = torch.randn(64); assert torch.allclose(e.relu_scale_forward(x, 2.0), torch.relu(x) * 2)")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120).returncode == 0


def wait_for_clang_header(cache: Path, timeout_s: float = 300) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if list((cache / "pch").glob("*/cuda_agent_pch.h.pch")):
            return True
        if list((cache / "pch").glob("*/failed")):
            return False
        time.sleep(1)
    return False


@pytest.fixture(scope="module")
def warm(cache, tmp_path_factory):
    """A candidate built once on the fresh cache (g++; clang's header started), and the header made."""
    candidate = tmp_path_factory.mktemp("warm") / "candidate"
    shutil.copytree(CANDIDATE, candidate)
    edit(candidate)
    first = build(candidate, cache)
    assert first["ok"], first
    assert wait_for_clang_header(cache), "clang could not precompile torch's headers"
    return candidate, first


def test_the_first_build_uses_gcc_while_clangs_header_is_made(warm):
    candidate, first = warm
    assert first["objects_clang"] == 0 and first["clang_fallbacks"] == 0
    assert f"{BINDING}: compile" in step_names(first)
    assert works(candidate)


def test_an_unchanged_binding_is_not_compiled_again_once_clang_is_ready(warm, cache):
    candidate, _ = warm
    shutil.rmtree(candidate.parent / "out")
    report = build(candidate, cache)
    assert report["ok"] and report["objects_compiled"] == 0, report
    assert f"{BINDING}: cached" in step_names(report)


def test_an_edited_binding_goes_to_clang(warm, cache):
    candidate, _ = warm
    edit(candidate)
    report = build(candidate, cache)
    assert report["ok"], report
    assert (report["objects_clang"], report["clang_fallbacks"]) == (1, 0), report
    assert f"{BINDING}: clang" in step_names(report)
    assert works(candidate)


def test_a_construct_only_gcc_accepts_still_builds(warm, cache):
    candidate, _ = warm
    # An attribute between `namespace` and the name: g++ takes it, clang refuses it.
    edit(candidate, 'namespace __attribute__((visibility("hidden"))) gcc_only { int one() { return 1; } }\n')
    report = build(candidate, cache)
    assert report["ok"], report
    assert (report["objects_clang"], report["clang_fallbacks"]) == (0, 1), report
    assert {f"{BINDING}: clang", f"{BINDING}: g++ after clang failed"} <= step_names(report)
    assert works(candidate)


def test_a_real_error_is_reported_in_gccs_words(warm, cache):
    candidate, _ = warm
    edit(candidate, "static int broken() { return undefined_name; }\n")
    report = build(candidate, cache)
    assert not report["ok"] and report["clang_fallbacks"] == 1, report
    assert report["errors"][0]["file"] == str(BINDING)
    assert "\u2018undefined_name\u2019 was not declared in this scope" in report["errors"][0]["message"], report


def test_the_switch_keeps_gcc(warm, cache):
    candidate, _ = warm
    (candidate / BINDING).write_text((CANDIDATE / BINDING).read_text())
    edit(candidate)
    report = build(candidate, cache, {"CUDA_AGENT_BINDING_CLANG": "0"})
    assert report["ok"] and report["objects_clang"] == 0 and report["clang_fallbacks"] == 0, report
    assert f"{BINDING}: compile" in step_names(report)
