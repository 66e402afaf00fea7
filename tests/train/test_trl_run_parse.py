"""The TRL run's answer format and decoding rule (python/cuda_agent_rl/trl_run.py): the tokenizer
built from the action space round-trips every word, a completion names an arm only when it names
all four slots, a malformed answer scores −1 (as a wrong kernel) unless ``--format-shaping``, the
prompt ends on the same word for every task, and the decoding rule — checked with transformers'
``generate`` and inside TRL's own ``GRPOTrainer`` — yields only distinct slot words.

The TRL test's reward is a FAKE (a constant: no judge); it checks the mechanics of the recipe, not
that it learns. The real run is ``python -m cuda_agent_rl.trl_run`` against ``serve``
(docs/training.md)."""

import importlib.util
import sys
from argparse import Namespace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from cuda_agent_rl.trl_run import (  # noqa: E402
    MALFORMED_REWARD,
    OPTION_TOKENS,
    PROMPT_END,
    JudgeThroughOpenEnv,
    build_policy,
    build_tokenizer,
    decoding_rule,
    format_score,
    grpo_config,
    parse_arm,
    prompt_of,
)

SLOT_WORDS = {w for options in OPTION_TOKENS for w in options}


def test_tokenizer_round_trips_the_action_space():
    tok = build_tokenizer(["relu_scale", "swish"])
    text = "task:swish kernel: exact t256 cover v4"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 6 and tok.unk_token_id not in ids[1:]
    assert tok.decode(ids) == text
    assert len(tok) == 3 + 2 + 1 + sum(len(o) for o in OPTION_TOKENS)


def test_parse_arm_and_malformed_rewards(tmp_path):
    assert parse_arm("exact t256 cover v4").label() == "exact/t256/cover/v4"
    assert parse_arm("v1 fixed8 flawed t32 exact").label() == "flawed/t32/fixed8/v1"  # first per slot, any order
    assert parse_arm("exact t256 cover") is None and parse_arm("task:swish task:swish") is None
    assert parse_arm("exact flawed t32 cover") is None  # both options of a slot: no vector slot
    plain = JudgeThroughOpenEnv("http://unused", "cpu", True, tmp_path, 1.0)
    assert plain.malformed_reward("exact t256 cover") == MALFORMED_REWARD == -1.0  # as a wrong kernel
    shaped = JudgeThroughOpenEnv("http://unused", "cpu", True, tmp_path, 1.0, format_shaping=True)
    assert shaped.malformed_reward("exact t256 cover") == format_score("exact t256 cover") == -1.5 + 3 * 0.125
    assert format_score("task:swish") == -1.5
    assert max(format_score(c) for c in ("exact t256 cover", "v1 v4 t32", "")) < -1.0


def test_prompt_ends_on_the_same_word_for_every_task():
    assert prompt_of("swish").split()[-1] == prompt_of("softsign").split()[-1] == PROMPT_END
    assert prompt_of("swish").split()[:2] == ["<bos>", "task:swish"]


def test_decoding_rule_yields_distinct_slot_words():
    import torch

    tok = build_tokenizer(["relu_scale", "swish", "softsign"])
    rule = decoding_rule(tok)
    assert {tok.convert_ids_to_tokens(i) for i in range(len(tok)) if i not in rule["suppress_tokens"]} == SLOT_WORDS
    model = build_policy(tok, seed=0)
    ids = tok([prompt_of("softsign")] * 64, return_tensors="pt", add_special_tokens=False)
    torch.manual_seed(0)
    gen = model.generate(**ids, max_new_tokens=4, do_sample=True, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, **rule)
    completions = [tok.decode(row[ids["input_ids"].shape[1]:]).split() for row in gen]
    assert all(len(c) == 4 and len(set(c)) == 4 and set(c) <= SLOT_WORDS for c in completions)
    well_formed = sum(parse_arm(" ".join(c)) is not None for c in completions)
    assert 4 <= well_formed < 64  # about 8 in 35 at a uniform start; malformed = both options of a slot


@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed (CUDA_AGENT_TRL=1 "
                    "bash scripts/setup.sh installs trl==1.16.0)")
def test_trl_grpo_trainer_samples_under_the_rule(tmp_path):
    """Two steps of TRL's GRPOTrainer with a FAKE constant reward: TRL passes the rule to its sampler."""
    from datasets import Dataset
    from trl import GRPOTrainer

    tok = build_tokenizer(["relu_scale", "swish"])
    seen: list[str] = []

    def fake_reward(prompts, completions, **kwargs):
        seen.extend(completions)
        return [0.0] * len(completions)

    args = Namespace(prompts_per_step=2, group=4, steps=2, lr=3e-3, temperature=1.0, seed=0)
    config = grpo_config(args, tmp_path, decoding_rule(tok))
    data = Dataset.from_dict({"prompt": [prompt_of(t) for t in ("relu_scale", "swish") * 2]})
    trainer = GRPOTrainer(model=build_policy(tok, 0), reward_funcs=[fake_reward], args=config, train_dataset=data,
                          processing_class=tok)
    trainer.train()
    assert len(seen) == 2 * 2 * 4
    assert all(len(c.split()) == 4 and len(set(c.split())) == 4 and set(c.split()) <= SLOT_WORDS for c in seen)
