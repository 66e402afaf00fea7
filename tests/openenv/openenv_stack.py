"""Helpers of the OpenEnv tests (the `stack` fixture is exported by conftest.py): a real `cuda-agent serve` (CPU device, free port) and the real
OpenEnv server of python/cuda_agent_openenv in front of it, each a process of its own."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="openenv-core is not installed (scripts/setup.sh installs it)")

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
TASK = REPO / "examples" / "relu_scale" / "model.py"
CANDIDATES = REPO / "examples" / "relu_scale" / "candidates"


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDA_AGENT_", "OPENAI_", "ANTHROPIC_"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    if os.environ.get("CUDA_AGENT_CACHE_DIR"):
        env["CUDA_AGENT_CACHE_DIR"] = os.environ["CUDA_AGENT_CACHE_DIR"]
    env["PYTHONPATH"] = str(PYTHON_DIR)
    env.update(extra or {})
    return env


class Proc:
    def __init__(self, argv, pattern):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        line = self.proc.stdout.readline()
        match = re.search(pattern, line)
        if not match:
            self.proc.kill()
            raise AssertionError(f"{argv[:3]}: no URL line: {line!r}; stderr: {self.proc.stderr.read()}")
        self.port = int(match.group(1))
        self.url = f"http://127.0.0.1:{self.port}"

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=60)


@pytest.fixture
def stack(tmp_path):
    """``start(serve_flags=(), adapter_flags=())`` → (serve, adapter); everything is killed after."""
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")
    started = []

    def start_serve(*flags, port=0, state=None):
        serve = Proc([str(BIN), "serve", "--port", str(port), "--device", "cpu", "--state-dir",
                      str(state or tmp_path / "state"), "--shutdown-grace", "5", *flags],
                     r"listening on http://127\.0\.0\.1:(\d+)")
        started.append(serve)
        return serve

    def start(serve_flags=(), adapter_flags=()):
        serve = start_serve(*serve_flags)
        adapter = Proc([sys.executable, "-m", "cuda_agent_openenv.server", "--serve-url", serve.url, "--port", "0",
                        "--task", str(TASK), "--device", "cpu", *adapter_flags],
                       r"listening on http://127\.0\.0\.1:(\d+)")
        started.append(adapter)
        return serve, adapter

    start.serve = start_serve
    yield start
    for p in started:
        p.kill()


def candidate(name, salt=""):
    """The files of an example candidate as Write actions' arguments; ``salt`` (a comment in the C++
    file) makes its build miss the build cache."""
    folder = CANDIDATES / name
    files = []
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            text = f.read_text()
            if salt and f.suffix in (".cpp", ".cu"):
                text += f"\n// {salt}\n"
            files.append({"file_path": str(f.relative_to(folder)), "content": text})
    return files
