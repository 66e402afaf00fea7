"""TRL's ``GRPOTrainer`` (unmodified) on the judge's rewards through the OpenEnv environment
(issue 48, part 3; docs/training.md).

    python -m cuda_agent_rl.trl_run --env http://127.0.0.1:8000 --device cuda --out runs/trl

**The policy** is plainly small and local (no hub weights can be fetched on the GPU machine): a
randomly initialised GPT-2 (``transformers.GPT2LMHeadModel``, 2 layers, width 64) with a word-level
tokenizer built here from the action space (``tokenizers`` WordLevel: one token per task and per
slot option of docs/toy_rl.md's kernel template — ``exact``/``flawed``, ``t32``/``t256``,
``fixed8``/``cover``, ``v1``/``v4`` — plus ``kernel:`` and ``<bos> <eos> <pad>``). The prompt is
``<bos> task:NAME kernel:`` — it ends on a word that is the same for every task, so the first
answer word is read from a fixed position and the task enters through attention (a held-out task's
untrained token is then not the direct input of the first choice). TRL samples a completion of 4
words; the answer is, per slot, the first of that slot's words.

**The decoding rule** (``decoding_rule``: TRL's own ``generation_kwargs``, and the same arguments
for the greedy answers): only slot words (``suppress_tokens``: the special, task and ``kernel:``
tokens) and no word twice (``no_repeat_ngram_size=1``). A completion is then 4 distinct slot words,
malformed only when it names both options of one slot (about 1 in 4 at a uniform start, instead
of 99 in 100 with free decoding). **A malformed answer scores −1**, as a wrong kernel does (and as
the verl plug-in's reward function scores an answer without files): no format bonus, so a flawed
but well-formed answer is not better than a malformed one and GRPO's group advantage singles out
the correct kernels only. Every reward of a well-formed answer is the judge's. ``--free-decoding``
and ``--format-shaping`` (−1.5 + 0.125 × the slots named) restore the first GPU run's recipe, which
collapsed onto a wrong kernel (docs/training.md says why).

**The reward** of a well-formed answer comes from the judge, through OpenEnv: a ``CudaAgentEnv``
(OpenEnv's ``EnvClient``) opens an episode on the adapter (``python -m cuda_agent_openenv.server``,
in front of ``cuda-agent serve``), writes the candidate's files with ``Write`` actions, and sends
``grade``; the adapter's ``--reward-schedule`` (``speedup`` for this run, as the toy loop) decides
the number. With verdict reuse (default; ``--no-reuse`` turns it off) an answer already judged in
this run reuses its verdict, as ``python -m cuda_agent_rl`` does.

Records in ``--out``: ``steps.jsonl`` (per step: mean reward, per task, judged/reused, seconds),
``judgements.jsonl`` (every episode: task, arm, reward, seconds), ``summary.json`` (device, date,
versions, command, wall time, the judge's share of the wall time — the union of the intervals in
which at least one judgement was in flight — rewards per second, greedy answers on the training
and held-out tasks before and after, with their rewards), ``reward.svg``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from cuda_agent_rl.arms import TASKS, Arm, render_files

OPTION_TOKENS = [["exact", "flawed"], ["t32", "t256"], ["fixed8", "cover"], ["v1", "v4"]]
SPECIAL = ["<pad>", "<bos>", "<eos>"]
PROMPT_END = "kernel:"  # the prompt's last word, the same for every task
MALFORMED_REWARD = -1.0  # as a wrong kernel


def prompt_of(task: str) -> str:
    return f"<bos> task:{task} {PROMPT_END}"


def build_tokenizer(tasks: list[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = SPECIAL + [f"task:{t}" for t in tasks] + [PROMPT_END] + [w for slot in OPTION_TOKENS for w in slot]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<pad>", padding_side="left")


def build_policy(tokenizer, seed: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=16, n_embd=64, n_layer=2, n_head=4,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(config)


def decoding_rule(tokenizer) -> dict[str, Any]:
    """TRL ``generation_kwargs`` (and the greedy answers' ``generate`` arguments): only slot words,
    none twice."""
    slot_words = {w for options in OPTION_TOKENS for w in options}
    banned = [i for w, i in tokenizer.get_vocab().items() if w not in slot_words]
    return {"suppress_tokens": sorted(banned), "no_repeat_ngram_size": 1}


def parse_arm(completion: str) -> Arm | None:
    """Per slot, the first of its tokens in the completion; None when a slot is missing."""
    words = completion.split()
    choices = []
    for options in OPTION_TOKENS:
        found = [options.index(w) for w in words if w in options]
        if not found:
            return None
        choices.append(found[0])
    return Arm.from_choices(tuple(choices))


def format_score(completion: str) -> float:
    """``--format-shaping``'s reward of a malformed answer (the first GPU run's): −1.5 + 0.125 per slot
    named, below any judged reward — which makes a flawed answer better than its malformed group-mates."""
    words = set(completion.split())
    return -1.5 + 0.125 * sum(1 for options in OPTION_TOKENS if words & set(options))


class JudgeThroughOpenEnv:
    """The reward function: each answer an OpenEnv episode (reset → Write files → grade)."""

    def __init__(self, env_url: str, device: str, reuse: bool, out: Path, max_wait_s: float,
                 format_shaping: bool = False):
        self.env_url, self.device, self.reuse, self.max_wait_s = env_url, device, reuse, max_wait_s
        self.format_shaping = format_shaping
        self.cache: dict[tuple[str, str], float | None] = {}
        self.intervals: list[tuple[float, float]] = []
        self.log = (out / "judgements.jsonl").open("a")
        self.step_rewards: list[tuple[str, float]] = []
        self.step_arms: list[Arm | None] = []  # this step's answers (None: malformed)
        self.judged = self.reused = self.malformed = 0
        self.__name__ = "judge_through_openenv"  # TRL names the reward after it

    async def episode(self, task: str, arm: Arm) -> float | None:
        from cuda_agent_openenv import CudaAgentAction, CudaAgentEnv

        start = time.time()
        async with CudaAgentEnv(base_url=self.env_url) as env:
            r = await env.reset_retrying(task=str(TASKS[task].path), device=self.device, max_wait_s=self.max_wait_s)
            if r.observation.error_code:
                raise RuntimeError(f"reset failed: {r.observation.error_code}: {r.observation.text}")
            for path, text in render_files(TASKS[task], arm, self.device).items():
                w = await env.step(CudaAgentAction(tool="Write", arguments={"file_path": path, "content": text}))
                if w.observation.is_error:
                    raise RuntimeError(f"Write {path} failed: {w.observation.text}")
            g = await env.step_retrying(CudaAgentAction(tool="grade"), max_wait_s=self.max_wait_s)
        end = time.time()
        self.intervals.append((start, end))
        result = g.observation.result or {}
        self.log.write(json.dumps({"task": task, "arm": arm.label(), "reward": g.reward, "seconds": end - start,
                                   "error_code": g.observation.error_code, "reason": result.get("reason")}) + "\n")
        self.log.flush()
        return g.reward

    async def reward_of(self, task: str, completion: str) -> float | None:
        arm = parse_arm(completion)
        if arm is None:
            self.malformed += 1
            return self.malformed_reward(completion)
        key = (task, arm.label())
        if self.reuse and key in self.cache:
            self.reused += 1
            return self.cache[key]
        self.judged += 1
        reward = await self.episode(task, arm)
        self.cache[key] = reward
        return reward

    async def __call__(self, prompts, completions, task, **kwargs) -> list[float | None]:
        # Answers of the same (task, arm) in one batch are judged once.
        pending: dict[tuple[str, str], asyncio.Task] = {}
        results = []
        for t, c in zip(task, completions, strict=False):
            arm = parse_arm(c)
            self.step_arms.append(arm)
            key = (t, arm.label() if arm else c)
            if self.reuse and arm is not None and key in pending:
                self.reused += 1
                results.append(pending[key])
                continue
            job = asyncio.ensure_future(self.reward_of(t, c))
            pending[key] = job
            results.append(job)
        rewards = list(await asyncio.gather(*results))
        self.step_rewards.extend((t, r) for t, r in zip(task, rewards, strict=False) if r is not None)
        return rewards

    def malformed_reward(self, completion: str) -> float:
        return format_score(completion) if self.format_shaping else MALFORMED_REWARD

    def busy_seconds(self) -> float:
        """The union of the judgement intervals: wall time with at least one judgement in flight."""
        total, end = 0.0, float("-inf")
        for a, b in sorted(self.intervals):
            if b <= end:
                continue
            total += b - max(a, end)
            end = b
        return total


def greedy_answers(model, tokenizer, tasks: list[str], rule: dict[str, Any] | None = None) -> dict[str, str]:
    model.eval()
    out = {}
    for t in tasks:
        ids = tokenizer(prompt_of(t), return_tensors="pt", add_special_tokens=False).to(model.device)
        with torch.no_grad():
            gen = model.generate(**ids, max_new_tokens=4, do_sample=False, pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=tokenizer.eos_token_id, **(rule or {}))
        out[t] = tokenizer.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    model.train()
    return out


def grpo_config(args, out: Path, rule: dict[str, Any] | None):
    """TRL's ``GRPOConfig`` of the run: TRL's defaults (loss ``dapo``, group-scaled advantages, one
    update per batch) but for the batch, the learning rate, no KL (``beta=0``) and the decoding rule."""
    from trl import GRPOConfig

    return GRPOConfig(output_dir=str(out / "trainer"), per_device_train_batch_size=args.prompts_per_step * args.group,
                      num_generations=args.group, max_completion_length=4, max_steps=args.steps,
                      learning_rate=args.lr, beta=0.0, temperature=args.temperature, logging_steps=1,
                      save_strategy="no", report_to="none", seed=args.seed, use_cpu=not torch.cuda.is_available(),
                      bf16=False, fp16=False, disable_tqdm=True, dataloader_num_workers=0,
                      shuffle_dataset=False, generation_kwargs=rule)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", required=True, help="URL of the OpenEnv adapter (python -m cuda_agent_openenv.server)")
    p.add_argument("--device", default="cuda", help="the judge's device (cuda, or cpu for a smoke test)")
    p.add_argument("--train-tasks", default="relu_scale,swish")
    p.add_argument("--heldout-tasks", default="softsign")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--group", type=int, default=8, help="generations per prompt (TRL num_generations)")
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3, help="Adam's peak learning rate (TRL's linear decay to 0)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--free-decoding", action="store_true", help="sample any token, words may repeat (no "
                   "decoding rule: the first GPU run's recipe)")
    p.add_argument("--format-shaping", action="store_true", help="a malformed answer scores -1.5 + 0.125 x the "
                   "slots it names instead of -1 (the first GPU run's recipe)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-reuse", action="store_true", help="judge every answer (no verdict reuse)")
    p.add_argument("--max-wait", type=float, default=600.0, help="seconds an episode waits out 429s")
    p.add_argument("--max-minutes", type=float, default=None, help="stop training after this long (the greedy "
                   "answers after and the summary are still made)")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = [t for t in args.train_tasks.split(",") if t]
    heldout = [t for t in args.heldout_tasks.split(",") if t]
    for t in train + heldout:
        if t not in TASKS:
            print(f"trl_run: unknown task {t!r}; choose among {', '.join(TASKS)}", file=sys.stderr)
            return 2
    tokenizer = build_tokenizer(train + heldout)
    model = build_policy(tokenizer, args.seed)
    judge = JudgeThroughOpenEnv(args.env, args.device, not args.no_reuse, out, args.max_wait, args.format_shaping)

    def judge_greedy(answers: dict[str, str]) -> dict[str, Any]:
        rows = {}
        for t, text in answers.items():
            arm = parse_arm(text)
            reward = asyncio.run(judge.episode(t, arm)) if arm else judge.malformed_reward(text)
            rows[t] = {"completion": text, "arm": arm.label() if arm else None, "reward": reward}
        return rows

    wall0 = time.time()
    rule = None if args.free_decoding else decoding_rule(tokenizer)
    before = judge_greedy(greedy_answers(model, tokenizer, train + heldout, rule))
    rows = args.steps * args.prompts_per_step
    dataset = Dataset.from_dict({"prompt": [prompt_of(train[i % len(train)]) for i in range(rows)],
                                 "task": [train[i % len(train)] for i in range(rows)]})
    config = grpo_config(args, out, rule)

    steps_file = (out / "steps.jsonl").open("w")

    max_minutes = args.max_minutes

    class Record(TrainerCallback):
        last = time.time()

        def on_step_end(self, args, state, control, **kwargs):  # args: TRL's TrainingArguments
            if max_minutes is not None and time.time() - train0 > max_minutes * 60:
                control.should_training_stop = True

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "reward" not in logs:
                return
            per_task: dict[str, list[float]] = {}
            for t, r in judge.step_rewards:
                per_task.setdefault(t, []).append(r)
            judge.step_rewards.clear()
            arms = [a for a in judge.step_arms if a is not None]
            well_formed = len(arms) / len(judge.step_arms) if judge.step_arms else None
            exact = sum(a.expr == "exact" for a in arms) / len(arms) if arms else None
            judge.step_arms.clear()
            now = time.time()
            steps_file.write(json.dumps({
                "step": state.global_step, "mean_reward": logs["reward"],
                "per_task": {t: sum(v) / len(v) for t, v in per_task.items()},
                "well_formed": well_formed, "exact_of_well_formed": exact, "entropy": logs.get("entropy"),
                "judged": judge.judged, "reused": judge.reused, "malformed": judge.malformed,
                "seconds": now - self.last}) + "\n")
            steps_file.flush()
            self.last = now

    # judge is an async reward function (TRL awaits it); TRL's annotation names only plain ones.
    trainer = GRPOTrainer(model=model, reward_funcs=[judge], args=config, train_dataset=dataset,  # type: ignore[list-item]
                          processing_class=tokenizer, callbacks=[Record()])
    train0 = time.time()
    trainer.train()
    train_wall = time.time() - train0
    steps_file.close()
    after = judge_greedy(greedy_answers(trainer.model, tokenizer, train + heldout, rule))
    wall = time.time() - wall0
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines() if line.strip()]
    rewards_served = len(steps) * args.prompts_per_step * args.group
    import transformers
    import trl

    try:
        from importlib.metadata import version

        import openenv  # noqa: F401
        openenv_version = version("openenv-core")
    except Exception:  # noqa: BLE001
        openenv_version = None
    summary = {
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable, "-m", "cuda_agent_rl.trl_run", *(argv or sys.argv[1:])]),
        "judge_device": args.device,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "trl": trl.__version__, "openenv-core": openenv_version},
        "policy": "GPT2LMHeadModel, 2 layers, width 64, random init; WordLevel tokenizer built from the action space",
        "recipe": {"lr": args.lr, "lr_schedule": config.lr_scheduler_type, "temperature": args.temperature,
                   "beta": config.beta, "loss_type": config.loss_type, "scale_rewards": config.scale_rewards,
                   "decoding_rule": "free" if rule is None else "slot words only, none twice "
                   "(suppress_tokens: all but the 8 slot words; no_repeat_ngram_size=1)",
                   "prompt": prompt_of("NAME"), "malformed_reward": "-1.5 + 0.125 x slots named"
                   if args.format_shaping else MALFORMED_REWARD},
        "steps": args.steps, "steps_done": len(steps), "group": args.group, "prompts_per_step": args.prompts_per_step,
        "train_tasks": train, "heldout_tasks": heldout, "reuse": not args.no_reuse,
        "wall_s": wall, "train_wall_s": train_wall,
        "judge_busy_s": judge.busy_seconds(), "judge_share_of_wall": judge.busy_seconds() / wall,
        "rewards_served": rewards_served, "rewards_per_s": rewards_served / train_wall,
        "judged": judge.judged, "reused": judge.reused, "malformed": judge.malformed,
        "first_mean_reward": steps[0]["mean_reward"] if steps else None,
        "last10_mean_reward": (sum(s["mean_reward"] for s in steps[-10:]) / len(steps[-10:])) if steps else None,
        "greedy_before": before, "greedy_after": after,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if steps:
        from cuda_agent_rl.plot import render

        (out / "reward.svg").write_text(render(steps, f"TRL GRPOTrainer on the judge via OpenEnv ({args.device})",
                                               window=5))
    print(json.dumps({k: summary[k] for k in ("wall_s", "judge_share_of_wall", "rewards_per_s", "judged", "reused",
                                              "first_mean_reward", "last10_mean_reward")}))
    print("greedy before:", json.dumps(before))
    print("greedy after: ", json.dumps(after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
