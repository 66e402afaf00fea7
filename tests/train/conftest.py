"""Shared set-up of the plug-in tests: python/ on the path, verl required, one tokenizer."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

pytest.importorskip("verl", reason="verl is not installed (scripts/setup.sh installs verl==0.9.1)")


@pytest.fixture(scope="session")
def tokenizer():
    from fakes import make_tokenizer

    return make_tokenizer()
