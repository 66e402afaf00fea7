"""`cuda-agent profile --ncu` and `utils/ncu.py` through the binary (docs/ncu.md).

Everywhere: the CPU device answers "needs a GPU" with no numbers, a missing ncu is a clear message, the
workspace's utils/ncu.py reaches the same answer, and an ncu run leaves the judgement and the baseline
store exactly as they were. Where torch sees a GPU (skipped elsewhere): the real report of
examples/relu_scale/candidates/cuda_correct, and the `ncu_target` job on its own.

The binary is <repo>/build/cuda-agent unless $CUDA_AGENT_BIN names another.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CUDA_AGENT_BIN") or REPO / "build" / "cuda-agent")
RELU = REPO / "examples" / "relu_scale"
CASES = {"cpu": RELU / "candidates" / "cpu_correct", "cuda": RELU / "candidates" / "cuda_correct"}
# What a report may answer on a GPU machine where ncu cannot run; each is a clear message.
UNAVAILABLE = ("not_permitted", "ncu_missing")


def cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.fixture(autouse=True)
def need_binary():
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    shared = os.environ.get("CUDA_AGENT_TEST_CACHE_DIR")
    return Path(shared) if shared else tmp_path_factory.mktemp("ncu-cache")


def run(*args, env=None, cwd=REPO, timeout=900):
    return subprocess.run([str(BIN), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def profile(device, *extra, cache, env=None, timeout=900):
    return run("profile", "--ncu", "--task", RELU / "model.py", "--candidate", CASES[device],
               "--device", device, "--cache-dir", cache, *extra, env=env, timeout=timeout)


def test_cpu_device_needs_a_gpu(cache_dir):
    text = profile("cpu", cache=cache_dir)
    assert text.returncode == 4, text.stderr
    assert "ncu needs a GPU" in text.stdout
    assert "us" not in text.stdout.split("needs a GPU", 1)[0]  # no duration before the message
    proc = profile("cpu", "--json", cache=cache_dir)
    assert proc.returncode == 4, proc.stderr
    report = json.loads(proc.stdout)
    assert report["tool"] == "ncu" and report["status"] == "needs_gpu"
    assert report["kernels"] == [] and report["roofline"]["available"] is False
    assert "no numbers are made up" in report["message"]


def test_usage_errors(cache_dir):
    proc = run("profile", "--task", RELU / "model.py", "--candidate", CASES["cpu"])
    assert proc.returncode == 2 and "--ncu is required" in proc.stderr
    proc = run("profile", "--ncu", "--task", RELU / "model.py", "--candidate", "/nonexistent")
    assert proc.returncode == 2 and "candidate folder not found" in proc.stderr
    proc = run("profile", "--ncu", "--task", RELU / "model.py", "--candidate", CASES["cpu"],
               "--max-launches", "0")
    assert proc.returncode == 2 and "--max-launches" in proc.stderr


def test_missing_ncu_is_a_clear_message(cache_dir):
    # An explicit path that is not there.
    proc = profile("cuda", "--json", "--ncu-path", "/nonexistent/ncu", cache=cache_dir)
    assert proc.returncode == 4, proc.stderr
    report = json.loads(proc.stdout)
    assert report["status"] == "ncu_missing"
    assert "/nonexistent/ncu" in report["message"] and "not installed" in report["message"]
    # A PATH without ncu and no CUDA folder holding one.
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "ncu").exists())
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_AGENT_NCU_PATH",)}
    env.update({"PATH": path, "CUDA_HOME": "/nonexistent", "CUDA_PATH": "/nonexistent"})
    nvcc = shutil.which("nvcc", path=path)
    homes = [Path("/usr/local/cuda")] + ([Path(nvcc).resolve().parent.parent] if nvcc else [])
    if any((h / "bin" / "ncu").exists() for h in homes):
        pytest.skip("ncu is installed in a CUDA folder here: it cannot be made missing")
    proc = profile("cuda", cache=cache_dir, env=env)
    assert proc.returncode == 4, proc.stderr
    assert "Nsight Compute (ncu) is not installed here" in proc.stdout
    assert "CUDA_AGENT_NCU_PATH" in proc.stdout


def test_no_gpu_on_a_cuda_device_says_so(tmp_path, cache_dir):
    """With ncu present (a FAKE one: it must never be reached) but no GPU, the CUDA device answers
    "needs a GPU" too, not an internal error."""
    if cuda_available():
        pytest.skip("this machine has a GPU")
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho 'the fake ncu must not run' >&2\nexit 1\n")
    fake.chmod(0o755)
    proc = profile("cuda", "--json", "--ncu-path", fake, cache=cache_dir)
    report = json.loads(proc.stdout)
    assert proc.returncode == 4, report
    assert report["status"] == "needs_gpu" and "torch sees no CUDA GPU" in report["message"]


def test_the_agent_reaches_it_through_the_judge_gateway(tmp_path, cache_dir):
    """solve's Bash tool runs utils/ncu.py in the sandbox; `cuda-agent profile` is forwarded to the
    solve process by the gateway, whose answer is the observation (and never the in-loop verdict)."""
    script = tmp_path / "script.jsonl"
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": "python3 -m utils.ncu"}}]},
             {"tool_calls": [{"name": "Bash", "arguments": {"command": "python3 -m utils.ncu --json"}}]},
             {"content": "done"}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = tmp_path / "episode"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    proc = run("solve", RELU / "model.py", "--model", f"replay:{script}", "--device", "cpu", "--out", out,
               "--cache-dir", cache_dir, "--baselines", "none", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in (out / "trajectory.jsonl").read_text().splitlines()]
    bash = [r for r in records if r["type"] == "observation" and r["tool"] == "Bash"]
    assert len(bash) == 2
    assert "ncu needs a GPU" in bash[0]["text"], bash[0]["text"]
    assert "refused" not in bash[0]["text"]
    # The gateway ran it outside, on the workspace's absolute path (utils/ncu.py itself says ".").
    report = json.loads(bash[1]["text"].split("\n[exit status")[0])
    assert report["status"] == "needs_gpu"
    assert report["candidate"] == str((out / "workspace").resolve()), report["candidate"]
    assert json.loads((out / "result.json").read_text()).get("best_in_loop") is None


def test_workspace_utility_answers_on_the_cpu(tmp_path, cache_dir):
    ws = tmp_path / "ws"
    made = run("workspace", "init", "--task", RELU / "model.py", "--device", "cpu", ws)
    assert made.returncode == 0, made.stderr
    assert (ws / "utils" / "ncu.py").exists()
    env = dict(os.environ, CUDA_AGENT_BIN=str(BIN), CUDA_AGENT_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-m", "utils.ncu"], cwd=ws, capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 4, proc.stderr
    assert "ncu needs a GPU" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "utils.ncu", "--json"], cwd=ws, capture_output=True,
                          text=True, env=env, timeout=300)
    assert json.loads(proc.stdout)["status"] == "needs_gpu"
    proc = subprocess.run([sys.executable, "-m", "utils.ncu", "--bogus"], cwd=ws, capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "unknown argument" in proc.stderr
    # The SKILL.md tells the agent when to use it and what its times are not.
    skill = (ws / "SKILL.md").read_text()
    assert "python3 -m utils.ncu" in skill and "not comparable" in skill


def keys_of(value, prefix=""):
    """Every key path of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield f"{prefix}.{k}"
            yield from keys_of(v, f"{prefix}.{k}")
    elif isinstance(value, list):
        for v in value:
            yield from keys_of(v, prefix + "[]")


def store_files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("store")}


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_ncu_never_reaches_the_judgement(device, tmp_path, cache_dir):
    """ncu locks clocks and replays kernels: its times must never reach a reward or a baseline."""
    if device == "cuda" and not cuda_available():
        pytest.skip("no GPU")
    store = tmp_path / "store.sqlite"
    flags = ["--device", device, "--baselines", "eager", "--warmup", "1", "--iters", "3",
             "--baseline-drift", "100", "--baseline-store", store, "--cache-dir", cache_dir]
    judge = ["judge", "--task", RELU / "model.py", "--candidate", CASES[device], "--json", *flags]
    first = run(*judge)
    assert first.returncode == 0, first.stderr[-2000:]
    before = json.loads(first.stdout)
    assert before["reward"] in (1, 2, 3), before["reason"]
    stored = store_files(tmp_path)
    assert stored, "the judgement stored no baseline"

    ncu = run("profile", "--ncu", "--task", RELU / "model.py", "--candidate", CASES[device], "--json",
              *flags, "--raw-out", tmp_path / "raw.csv")
    report = json.loads(ncu.stdout)
    assert report["tool"] == "ncu"
    if device == "cpu":
        assert report["status"] == "needs_gpu"
    else:
        assert report["status"] == "ok" or report["status"] in UNAVAILABLE, report["message"]
    assert store_files(tmp_path) == stored, "the ncu run changed the baseline store"

    second = run(*judge)
    assert second.returncode == 0, second.stderr[-2000:]
    after = json.loads(second.stdout)
    assert after["reward"] in (1, 2, 3), after["reason"]
    assert after["timing"]["baseline_store"]["eager"] == "stored"
    assert after["timing"]["eager"]["time_us"] == before["timing"]["eager"]["time_us"]
    assert not [k for k in keys_of(after) if "ncu" in k.lower()]
    assert set(after) == set(before)
    assert set(after["timing"]) == set(before["timing"])


def test_gpu_report_of_the_relu_scale_candidate(tmp_path, cache_dir):
    if not cuda_available():
        pytest.skip("no GPU")
    raw = tmp_path / "raw.csv"
    proc = profile("cuda", "--json", "--raw-out", raw, cache=cache_dir)
    report = json.loads(proc.stdout)
    if report["status"] in UNAVAILABLE:
        assert proc.returncode == 4
        assert ("NVreg_RestrictProfilingToAdminUsers=0" in report["message"]
                or "not installed" in report["message"])
        pytest.skip(f"ncu cannot run here: {report['status']}: {report['message'][:200]}")
    assert proc.returncode == 0, report["message"]
    assert report["status"] == "ok" and report["gpu"]
    assert report["comparable_with_judge_times"] is False
    assert report["kernels"], report
    for k in report["kernels"]:
        assert "relu_scale" in k["name"], k["name"]  # only the candidate's own kernels
        assert k["duration_us"] > 0 and k["launches"] >= 1
        for pct in ("compute_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct",
                    "theoretical_occupancy_pct"):
            assert 0 <= k[pct] <= 100.5, (pct, k[pct])
        assert k["bound"] in ("memory", "compute", "latency") and k["hint"]
        assert k["occupancy_limiter"] in ("registers", "shared memory", "block size", "blocks per SM",
                                          "none")
        assert k["registers_per_thread"] > 0
    # 2048 x 2048 float32 in: at least 16 MiB read from DRAM. The 16 MiB written mostly stay in L2
    # when the kernel ends (50 MB on an H100: 1.6 MB reached DRAM there), so writes are only > 0.
    total_read = sum(k["dram_read_bytes"] or 0 for k in report["kernels"])
    total_written = sum(k["dram_write_bytes"] or 0 for k in report["kernels"])
    assert total_read >= 0.9 * 2048 * 2048 * 4 and total_written > 0
    assert all("relu_scale" not in name for name in report["other_kernels"])
    roof = report["roofline"]
    if roof["available"]:
        assert roof["side"] == "memory" and roof["intensity_flop_per_byte"] < roof["ridge_flop_per_byte"]
    assert raw.exists() and "Kernel Name" in raw.read_text()
    text = profile("cuda", cache=cache_dir)
    assert text.returncode == 0 and "-bound" in text.stdout and "relu_scale" in text.stdout


def test_gpu_ncu_target_job_runs_one_profiled_call(tmp_path):
    """The job on its own, without ncu: cudaProfilerStart/Stop are no-ops then."""
    if not cuda_available():
        pytest.skip("no GPU")
    built = run("build", "--candidate", CASES["cuda"], "--device", "cuda", "--out",
                tmp_path / "cuda_extension.so")
    assert built.returncode == 0, built.stdout + built.stderr
    result_path = tmp_path / "result.json"
    spec = {"device": "cuda", "task_path": str(RELU / "model.py"), "candidate_dir": str(CASES["cuda"]),
            "extension_dir": str(tmp_path), "seed": 1234, "warmup": 2, "result_path": str(result_path)}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "cuda_agent_harness", "ncu_target", "--spec",
                           str(tmp_path / "spec.json")], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(result_path.read_text())
    assert result["ok"], result
    assert result["profiled_calls"] == 1 and result["warmup"] == 2


def test_ncu_target_job_refuses_the_cpu(tmp_path):
    result_path = tmp_path / "result.json"
    (tmp_path / "spec.json").write_text(json.dumps({"device": "cpu", "result_path": str(result_path)}))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "cuda_agent_harness", "ncu_target", "--spec",
                           str(tmp_path / "spec.json")], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(result_path.read_text())
    assert result["ok"] is False and result["error_kind"] == "internal"
    assert "cuda" in result["reason"]
