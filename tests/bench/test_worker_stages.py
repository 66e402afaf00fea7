"""bench/worker_stages.py: a worker's judged-job lines give, per GPU, each job's total and stages,
including the hyphenated ones (`verify set-up wait`); other lines are ignored."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import worker_stages  # noqa: E402


def test_stages_per_gpu_with_the_set_up_waits(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text(
        "12:00:01 worker: host/gpu0.1: job ab12 (relu_scale) judged in 7.5 s [build 1.2 s, verify set-up "
        "wait 0.7 s, verify 2.0 s, lease wait 3.1 s, profile 0.5 s]: correct\n"
        "12:00:02 worker: host/gpu1.0: job cd34 (relu_scale) judged in 9.0 s [build 1.4 s]: correct\n"
        "12:00:03 worker: host/gpu1.0: heartbeat\n")
    per_gpu = worker_stages.parse(str(log))
    assert per_gpu["0"] == [{"total": 7.5, "build": 1.2, "verify set-up wait": 0.7, "verify": 2.0,
                             "lease wait": 3.1, "profile": 0.5}]
    assert per_gpu["1"] == [{"total": 9.0, "build": 1.4}]
    assert worker_stages.summarize(per_gpu["0"] + per_gpu["1"])["verify set-up wait"] == pytest.approx(0.35)
