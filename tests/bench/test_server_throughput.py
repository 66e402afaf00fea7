"""bench/server_throughput.py on the CPU with two clients and two small candidates: both paths (serve
sessions and `cuda-agent bench --jobs 2`) judge every candidate, and the JSON and the markdown row
carry both rates and their ratio. The numbers themselves are the GPU machine's to measure
(`bash bench/gpu_session.sh serve`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")


def test_server_throughput_measures_serve_and_bench_over_the_same_candidates(tmp_path):
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")
    env = dict(os.environ)
    env.setdefault("CUDA_AGENT_CACHE_DIR", str(REPO / "build" / "test-cache"))
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "server_throughput.py"), "--binary", str(BIN), "--device", "cpu",
         "--threads", "2", "--count", "2", "--repeats", "1",
         "--pairs", "tests/queue/relu_scale_small.py=examples/relu_scale/candidates/cpu_correct",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "server_throughput.json").read_text())
    runs = {r["path"]: r for r in report["runs"]}
    assert set(runs) == {"serve", "bench"}
    for run in runs.values():
        assert run["judged"] == run["correct"] == 2 and run["not_verdicts"] == 0, run
        assert run["judged_per_hour"] == pytest.approx(3600 * 2 / run["wall_s"])
    assert runs["serve"]["mode"] == "session" and runs["serve"]["errors"] == []
    summary = report["summary"]
    ratio = runs["serve"]["judged_per_gpu_hour"] / runs["bench"]["judged_per_gpu_hour"]
    assert summary["ratio_serve_over_bench"]["median"] == pytest.approx(ratio)
    assert summary["problems"] == []
    row = (tmp_path / "server_throughput.md").read_text()
    assert "| serve ÷ bench |" in row and f"{ratio:.3f}" in row
