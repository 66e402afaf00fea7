"""A minimal GRPO loop whose every reward comes from the real judge through ``cuda-agent serve``
(docs/toy_rl.md). The policy (``policy.ArmPolicy``) picks a kernel template's arm per task; the
answer goes through the verl plug-in's single-turn reward function
(``cuda_agent_verl.reward.compute_score`` → ``POST /v1/evaluate`` → the judge), so the path is the
one stage 1 of the real training uses.

Per step: for each task, ``group`` arms are sampled; each is judged (or its verdict reused, below);
the group-normalised reward (GRPO: reward minus the group mean, over the group's standard
deviation) weighs the arms' log-probabilities; one Adam step.

Verdict reuse: an answer already judged in this run (same task, same files) is not judged again;
its first verdict is reused and counted as ``reused``. The arm space is small (16 per task), so
after the first steps almost every reward is a reused verdict; the log says how many answers the
judge actually ran each step and how long the step waited for them. ``--no-reuse`` judges every
sample (then a step costs about ``group × tasks`` judgements).

Outputs in ``--out``: ``steps.jsonl`` (one line per step), ``judgements.jsonl`` (one line per
judged answer: arm, reward, speedups, reason, seconds), ``summary.json`` (rates, judge share, the
greedy arm per task and, with ``--sweep``, every arm's verdict and the greedy arm's rank).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from cuda_agent_rl.arms import TASKS, Arm, all_arms, render_answer
from cuda_agent_rl.policy import ArmPolicy
from cuda_agent_verl.reward import compute_score


@dataclass
class Verdict:
    """One judged answer."""

    score: float | None  # None: not a verdict (server or task error) — trains nothing
    correct: bool
    reason: str
    seconds: float
    result: dict = field(default_factory=dict)


class RewardSource:
    """Judges answers through the server, at most ``concurrency`` at a time, reusing verdicts."""

    def __init__(self, server_url: str, device: str, schedule: str, concurrency: int, reuse: bool,
                 token: str | None, log_path: Path):
        self.server_url = server_url
        self.device = device
        self.schedule = schedule
        self.reuse = reuse
        self.token = token
        self.semaphore = asyncio.Semaphore(concurrency)
        self.verdicts: dict[str, asyncio.Future] = {}  # answer hash → its (future) verdict
        self.log = log_path.open("a")
        self.judged = 0
        self.reused = 0

    async def verdict(self, task_name: str, arm: Arm) -> tuple[Verdict, bool]:
        """The verdict of ``arm`` on the task, and whether the judge ran for it now. Identical
        answers asked for at the same moment share one judgement."""
        task = TASKS[task_name]
        answer = render_answer(task, arm, self.device)
        key = hashlib.sha256(f"{task_name}\0{self.device}\0{answer}".encode()).hexdigest()
        if self.reuse and key in self.verdicts:
            self.reused += 1
            return await self.verdicts[key], False
        pending: asyncio.Future = asyncio.get_running_loop().create_future()
        if self.reuse:
            self.verdicts[key] = pending
        try:
            async with self.semaphore:
                start = time.monotonic()
                score = await compute_score(
                    data_source="cuda_agent_toy", solution_str=answer, ground_truth=task_name,
                    extra_info={"task_source": task.source(), "task_name": task_name, "device": self.device},
                    server_url=self.server_url, schedule=self.schedule, device=self.device, token=self.token)
                seconds = time.monotonic() - start
        except BaseException as error:
            self.verdicts.pop(key, None)
            pending.set_exception(error)
            pending.exception()  # retrieved: waiters re-raise it, nobody else must
            raise
        verdict = Verdict(None if score.get("reward_null") else float(score["score"]), bool(score.get("correct")),
                          str(score.get("judge_reason", "")), seconds, score)
        pending.set_result(verdict)
        self.judged += 1
        self.log.write(json.dumps({"task": task_name, "arm": arm.label(), "score": verdict.score,
                                   "correct": verdict.correct, "reason": verdict.reason,
                                   "seconds": round(seconds, 3)}) + "\n")
        self.log.flush()
        return verdict, True


def group_advantages(scores: list[float | None]) -> list[float]:
    """GRPO advantages of one group: (r − mean) / std over the samples that have a verdict; 0 for
    the others and for a group whose verdicts are all equal."""
    valid = [s for s in scores if s is not None]
    if len(valid) < 2:
        return [0.0] * len(scores)
    mean = statistics.fmean(valid)
    spread = statistics.pstdev(valid)
    if spread < 1e-8:
        return [0.0] * len(scores)
    return [0.0 if s is None else (s - mean) / spread for s in scores]


def policy_step(policy: ArmPolicy, optimizer: torch.optim.Optimizer,
                batches: dict[str, tuple[torch.Tensor, list[float]]],
                entropy_coef: float) -> dict[str, float]:
    """One GRPO update over every task's group; returns the loss and mean entropy."""
    optimizer.zero_grad()
    loss = torch.zeros(())
    entropies = []
    for task, (choices, advantages) in batches.items():
        log_probs, entropy = policy.log_probs(task, choices)
        weights = torch.tensor(advantages, dtype=log_probs.dtype, device=log_probs.device)
        loss = loss.to(log_probs.device) - (weights * log_probs).mean() - entropy_coef * entropy
        entropies.append(float(entropy.detach()))
    loss = loss / max(1, len(batches))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    optimizer.step()
    return {"loss": float(loss.detach()), "entropy": statistics.fmean(entropies) if entropies else 0.0}


async def train(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = args.tasks.split(",")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise SystemExit(f"unknown task(s) {', '.join(unknown)}; choose from {', '.join(TASKS)}")
    policy_device = torch.device(args.policy_device)
    if policy_device.type == "cpu":
        torch.set_num_threads(1)  # a model this small only loses to thread hand-offs
    policy = ArmPolicy(tasks, seed=args.seed).to(policy_device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    source = RewardSource(args.server, args.device, args.schedule, args.concurrency, not args.no_reuse,
                          args.token, out / "judgements.jsonl")
    steps_log = (out / "steps.jsonl").open("w")
    torch.manual_seed(args.seed)
    start = time.monotonic()
    # One answer per task first, so that each task's baselines are measured once, before many
    # judgements of the same task ask for them at the same moment. Its verdict is kept like any
    # other (a later sample of the same arm reuses it) but trains nothing by itself.
    warmup_arm = Arm("exact", 256, "cover", 1)
    await asyncio.gather(*(source.verdict(task, warmup_arm) for task in tasks))
    warmup_s = time.monotonic() - start
    judge_wait_total = 0.0
    rewards_served = 0
    steps_done = 0
    for step in range(1, args.steps + 1):
        if args.max_minutes and time.monotonic() - start > args.max_minutes * 60:
            break
        step_start = time.monotonic()
        samples = {task: policy.sample(task, args.group).cpu() for task in tasks}
        wait_start = time.monotonic()
        jobs = {task: [source.verdict(task, Arm.from_choices(tuple(int(c) for c in row))) for row in choices]
                for task, choices in samples.items()}
        answers = {task: await asyncio.gather(*coros) for task, coros in jobs.items()}
        judged_now = sum(1 for rows in answers.values() for _, ran in rows if ran)
        waited = time.monotonic() - wait_start
        judge_wait = waited if judged_now else 0.0
        judge_wait_total += judge_wait
        batches = {}
        per_task = {}
        for task, rows in answers.items():
            scores = [verdict.score for verdict, _ in rows]
            batches[task] = (samples[task], group_advantages(scores))
            valid = [s for s in scores if s is not None]
            per_task[task] = round(statistics.fmean(valid), 4) if valid else None
            rewards_served += len(rows)
        update = policy_step(policy, optimizer, batches, args.entropy_coef)
        all_scores = [v.score for rows in answers.values() for v, _ in rows if v.score is not None]
        record = {"step": step, "mean_reward": round(statistics.fmean(all_scores), 4) if all_scores else None,
                  "per_task": per_task, "judged": judged_now, "step_s": round(time.monotonic() - step_start, 3),
                  "judge_wait_s": round(judge_wait, 3), "elapsed_s": round(time.monotonic() - start, 2), **update}
        steps_log.write(json.dumps(record) + "\n")
        steps_log.flush()
        steps_done = step
        if step % args.print_every == 0 or step == 1:
            print(json.dumps(record), flush=True)
    elapsed = time.monotonic() - start
    summary: dict[str, Any] = {
        "steps": steps_done, "tasks": tasks, "group": args.group, "device": args.device,
        "schedule": args.schedule, "reuse": not args.no_reuse, "seconds": round(elapsed, 2),
        "warmup_seconds": round(warmup_s, 2),
        "rewards_served": rewards_served, "answers_judged": source.judged, "verdicts_reused": source.reused,
        "rewards_per_second": round(rewards_served / elapsed, 2) if elapsed > 0 else None,
        "judged_per_second": round(source.judged / elapsed, 3) if elapsed > 0 else None,
        # Time the steps waited for the judge (and the warm-up's judgements) over the whole run.
        "judge_share_of_step_time": round((judge_wait_total + warmup_s) / elapsed, 4) if elapsed > 0 else None,
        "greedy": {},
    }
    for task in tasks:
        arm = Arm.from_choices(tuple(int(c) for c in policy.sample(task, 1, greedy=True)[0]))
        verdict, _ = await source.verdict(task, arm)
        summary["greedy"][task] = {"arm": arm.label(), "score": verdict.score, "reason": verdict.reason}
    if args.sweep:
        summary["sweep"] = await sweep(source, tasks, summary["greedy"])
    summary["answers_judged"] = source.judged  # the greedy and sweep verdicts included
    summary["verdicts_reused"] = source.reused
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


async def sweep(source: RewardSource, tasks: list[str], greedy: dict[str, dict]) -> dict[str, Any]:
    """Every arm of every task judged (reusing verdicts): where the greedy arm ranks."""
    report = {}
    for task in tasks:
        arms = list(all_arms())
        verdicts = await asyncio.gather(*(source.verdict(task, arm) for arm in arms))
        scored = sorted(((v.score if v.score is not None else -math.inf, arm.label())
                         for arm, (v, _) in zip(arms, verdicts, strict=False)),
                        reverse=True)
        rank = next((i + 1 for i, (_, label) in enumerate(scored) if label == greedy[task]["arm"]), None)
        report[task] = {"best_arm": scored[0][1], "best_score": scored[0][0], "greedy_rank": rank,
                        "arms": [{"arm": label, "score": score} for score, label in scored]}
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cuda_agent_rl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="URL of a running `cuda-agent serve`")
    parser.add_argument("--token", default=None, help="the server's bearer token, if it has one")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="the judge's device")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated toy tasks")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--group", type=int, default=8, help="samples per task per step (GRPO group)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--entropy-coef", type=float, default=0.0)
    parser.add_argument("--schedule", default="speedup", help="reward schedule (cuda_agent_verl.reward.SCHEDULES)")
    parser.add_argument("--concurrency", type=int, default=8, help="evaluate requests in flight")
    parser.add_argument("--no-reuse", action="store_true", help="judge every sample, even a repeated answer")
    parser.add_argument("--sweep", action="store_true", help="after training, judge every arm to rank the greedy one")
    parser.add_argument("--max-minutes", type=float, default=0, help="stop training after this long (0: no limit)")
    parser.add_argument("--policy-device", default="cpu", help="where the policy trains (cpu or cuda)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--print-every", type=int, default=25)
    parser.add_argument("--out", required=True, help="folder for steps.jsonl, judgements.jsonl, summary.json")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.group < 2 or args.concurrency < 1:
        parser.error("--steps ≥ 1, --group ≥ 2 and --concurrency ≥ 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    summary = asyncio.run(train(args))
    print(json.dumps({k: v for k, v in summary.items() if k != "sweep"}, indent=2))
    return 0
