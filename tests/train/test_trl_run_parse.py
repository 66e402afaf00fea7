"""The TRL run's answer format (python/cuda_agent_rl/trl_run.py), without TRL: the tokenizer built
from the action space round-trips every token, a completion names an arm only when it names all
four slots, and a malformed answer's format score stays below every judged reward (−1)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from cuda_agent_rl.trl_run import OPTION_TOKENS, build_tokenizer, format_score, parse_arm  # noqa: E402


def test_tokenizer_round_trips_the_action_space():
    tok = build_tokenizer(["relu_scale", "swish"])
    text = "task:swish exact t256 cover v4"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 5 and tok.unk_token_id not in ids[1:]
    assert tok.decode(ids) == text
    assert len(tok) == 3 + 2 + sum(len(o) for o in OPTION_TOKENS)


def test_parse_arm_and_format_score():
    assert parse_arm("exact t256 cover v4").label() == "exact/t256/cover/v4"
    assert parse_arm("v1 fixed8 flawed t32 exact").label() == "flawed/t32/fixed8/v1"  # first per slot, any order
    assert parse_arm("exact t256 cover") is None and parse_arm("task:swish task:swish") is None
    assert format_score("task:swish") == -1.5
    assert format_score("exact t256 cover cover") == -1.5 + 3 * 0.125
    assert max(format_score(c) for c in ("exact t256 cover", "v1 v4 t32", "")) < -1.0
