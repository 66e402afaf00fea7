"""The GRPO demonstration (python/cuda_agent_rl, docs/toy_rl.md): the arms render as answers the
plug-in reads, the update learns the best arm of a known reward table, and a short run against a
real `cuda-agent serve` on the CPU device gets its rewards from the judge."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cuda_agent_rl.arms import SLOTS, TASKS, Arm, all_arms, render_answer, render_files
from cuda_agent_rl.grpo import group_advantages, policy_step
from cuda_agent_rl.plot import render
from cuda_agent_rl.policy import ArmPolicy
from cuda_agent_verl.answer import extract_files
from test_serve_e2e import has_serve, server  # noqa: F401  (the real-server fixture)

REPO = Path(__file__).resolve().parents[2]


def test_every_arm_renders_an_answer_the_plugin_reads():
    arms = list(all_arms())
    assert len(arms) == 16 and len(set(arms)) == 16
    for device in ("cuda", "cpu"):
        for arm in arms:
            files, notes = extract_files(render_answer(TASKS["swish"], arm, device))
            assert notes == []
            assert files == render_files(TASKS["swish"], arm, device)
            assert set(files) >= {"model_new.py", "kernels/toy_binding.cpp"}
    exact = render_files(TASKS["relu_scale"], Arm("exact", 32, "cover", 4), "cuda")["kernels/toy.cu"]
    flawed = render_files(TASKS["relu_scale"], Arm("flawed", 32, "cover", 4), "cuda")["kernels/toy.cu"]
    assert "* alpha" in exact and "* alpha" not in flawed
    assert "kThreads = 32" in exact and "kVector4 = true" in exact and "kFixedGrid = false" in exact


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_arms_compile(tmp_path):
    # Both extremes of the template, compiled only (no GPU needed): a template typo fails here, not
    # on the GPU machine.
    for arm in (Arm("exact", 256, "cover", 4), Arm("flawed", 32, "fixed8", 1)):
        source = tmp_path / f"{arm.threads}.cu"
        source.write_text(render_files(TASKS["softsign"], arm, "cuda")["kernels/toy.cu"])
        run = subprocess.run(["nvcc", "-c", "-arch=sm_90", str(source), "-o", str(source.with_suffix(".o"))],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr


def test_group_advantages():
    assert group_advantages([1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]
    assert group_advantages([None, 2.0]) == [0.0, 0.0]
    advantages = group_advantages([-1.0, 1.0, None])
    assert advantages[0] < 0 < advantages[1] and advantages[2] == 0.0


def test_update_learns_the_best_arm_of_a_fixed_reward_table():
    # A fake reward table stands in for the judge here: the point is the update, not the rewards.
    torch.manual_seed(0)
    torch.set_num_threads(1)
    best = Arm("exact", 256, "cover", 4)

    def fake_reward(arm: Arm) -> float:
        if arm.expr == "flawed":
            return -1.0
        return 0.2 + 0.3 * (arm.grid == "cover") + 0.2 * (arm.vector == 4) + 0.1 * (arm.threads == 256)

    policy = ArmPolicy(["swish"], seed=0)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    initial = [Arm.from_choices(tuple(int(c) for c in row)) for row in policy.sample("swish", 64)]
    for _ in range(150):
        choices = policy.sample("swish", 8)
        rewards = [fake_reward(Arm.from_choices(tuple(int(c) for c in row))) for row in choices]
        policy_step(policy, optimizer, {"swish": (choices, group_advantages(rewards))}, entropy_coef=0.0)
    greedy = Arm.from_choices(tuple(int(c) for c in policy.sample("swish", 1, greedy=True)[0]))
    final = [Arm.from_choices(tuple(int(c) for c in row)) for row in policy.sample("swish", 64)]
    assert greedy == best
    assert sum(map(fake_reward, final)) > sum(map(fake_reward, initial)) + 10


def test_log_probs_match_sampling_masks():
    policy = ArmPolicy(["relu_scale", "swish"], seed=1)
    choices = policy.sample("relu_scale", 5)
    assert choices.shape == (5, len(SLOTS))
    for slot, (_, options) in enumerate(SLOTS):
        assert int(choices[:, slot].max()) < len(options)
    log_probs, entropy = policy.log_probs("relu_scale", choices)
    # Masked to each slot's options: a probability of at most 1 per slot, and the 16 arms sum to 1.
    assert (log_probs <= 1e-6).all() and float(entropy) > 0
    every = torch.tensor([[int(c) for c in (SLOTS[0][1].index(a.expr), SLOTS[1][1].index(str(a.threads)),
                                             SLOTS[2][1].index(a.grid), SLOTS[3][1].index(str(a.vector)))]
                          for a in all_arms()])
    total, _ = policy.log_probs("relu_scale", every)
    assert abs(float(total.exp().sum()) - 1.0) < 1e-4


def test_plot_renders_an_svg():
    steps = [{"step": i, "mean_reward": i / 10, "per_task": {"swish": i / 10}} for i in range(1, 21)]
    svg = render(steps, "a <title>")
    assert svg.startswith("<svg") and "a &lt;title&gt;" in svg and svg.count("<polyline") == 3
    with pytest.raises(ValueError):
        render([{"step": 1, "mean_reward": None}], "t")


@pytest.mark.skipif(not has_serve(), reason="the binary has no `serve` command")
def test_short_run_gets_its_rewards_from_the_real_judge(server, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    run = subprocess.run([sys.executable, "-m", "cuda_agent_rl", "--server", server, "--device", "cpu",
                          "--tasks", "relu_scale", "--steps", "2", "--group", "2", "--concurrency", "2",
                          "--seed", "3", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    judged = [json.loads(line) for line in (out / "judgements.jsonl").read_text().splitlines()]
    summary = json.loads((out / "summary.json").read_text())
    assert [s["step"] for s in steps] == [1, 2]
    assert summary["rewards_served"] == 4 and summary["answers_judged"] == len(judged) >= 1
    # + the warm-up answer and the greedy arm's verdict
    assert summary["answers_judged"] + summary["verdicts_reused"] == 4 + 1 + 1
    for verdict in judged:
        # The judge tells exact from flawed arms: only its verification can.
        assert verdict["correct"] == verdict["arm"].startswith("exact"), verdict
        assert (verdict["score"] == -1.0) == (not verdict["correct"]), verdict
