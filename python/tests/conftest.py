"""pytest setup for the harness tests: the package on sys.path, import isolation, the `slow` and `gpu` marks.

Slow tests (torch.compile) run only with CUDA_AGENT_SLOW_TESTS=1; GPU tests only where CUDA is available.
"""

import os
import sys

import pytest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes long (run with CUDA_AGENT_SLOW_TESTS=1)")
    config.addinivalue_line("markers", "gpu: needs a CUDA device")


def pytest_collection_modifyitems(config, items):
    run_slow = os.environ.get("CUDA_AGENT_SLOW_TESTS") == "1"
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow; set CUDA_AGENT_SLOW_TESTS=1"))
        if "gpu" in item.keywords:
            import torch

            if not torch.cuda.is_available():
                item.add_marker(pytest.mark.skip(reason="no CUDA device"))


@pytest.fixture(autouse=True)
def isolate_imports():
    """In-process candidate jobs change sys.path and sys.modules; undo that after every test."""
    saved_path = list(sys.path)
    yield
    sys.path[:] = saved_path
    for name in ("model_new", "cuda_extension"):
        sys.modules.pop(name, None)
