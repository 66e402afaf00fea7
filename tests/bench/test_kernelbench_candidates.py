"""bench/candidates/kernelbench.py: every candidate it writes declares the task's weights (same names
and shapes, so the reference state_dict loads strictly) and carries its epilogue into the CUDA source."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO.parent / "shared" / "kernelbench"
sys.path.insert(0, str(REPO / "bench" / "candidates"))
import kernelbench  # noqa: E402


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    return out, kernelbench.write(out, set())


@pytest.mark.skipif(not SUITE.is_dir(), reason="../shared/kernelbench is not beside the checkout")
@pytest.mark.parametrize("name", sorted(kernelbench.TASKS))
def test_candidate_declares_the_task_weights(written, name, monkeypatch):
    out, _ = written
    monkeypatch.setitem(sys.modules, "cuda_extension", types.ModuleType("cuda_extension"))
    task = load(SUITE / f"{name}.py", "kb_task")
    cand = load(out / name / "model_new.py", "kb_model_new")
    init = task.get_init_inputs()
    with torch.device("meta"):  # the published sizes, without allocating them
        want = {k: tuple(v.shape) for k, v in task.Model(*init).state_dict().items()}
        got = {k: tuple(v.shape) for k, v in cand.ModelNew(*init).state_dict().items()}
    assert got == want


def test_sources_carry_the_epilogue_and_no_placeholder(written):
    out, paths = written
    assert sorted(str(p.relative_to(out)) for p in paths) == sorted(kernelbench.TASKS)
    for name, task in kernelbench.TASKS.items():
        source = (out / name / "kernels" / "kb_epilogue.cu").read_text()
        assert "@TASK@" not in source and "@EXPR@" not in source
        assert f"return {task.expr};" in source and name in source


def test_unknown_task_is_refused(tmp_path, capsys):
    sys_argv = sys.argv
    sys.argv = ["kernelbench.py", str(tmp_path), "--only", "level9/nothing"]
    try:
        assert kernelbench.main() == 2
    finally:
        sys.argv = sys_argv
    assert "no candidate for level9/nothing" in capsys.readouterr().err
