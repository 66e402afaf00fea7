"""The synth modules on their own: composer determinism and mix, the AST similarity, the compile stage."""

import collections
import json

import pytest

from cuda_agent_synth.catalog import build_catalog, composable_ops
from cuda_agent_synth.composer import PAPER_MIX, compose, parse_mix
from cuda_agent_synth.filters import Candidate, FilterConfig, run_filters
from cuda_agent_synth.similarity import Corpus, similarity, tokens


@pytest.fixture(scope="module")
def catalog():
    return build_catalog()


def test_catalog_probes_ops(catalog):
    by_name = {op["name"]: op for op in catalog["ops"]}
    assert by_name["nn.Dropout"]["stochastic"] and by_name["F.dropout"]["stochastic"]
    assert not by_name["nn.ReLU"]["stochastic"] and by_name["nn.ReLU"]["ranks"] == [1, 2, 3, 4, 5]
    assert by_name["nn.Conv2d"]["ranks"] == [4] and by_name["nn.Linear"]["ranks"] == [2, 3, 4, 5]
    assert not by_name["torch.log"]["finite"] and not by_name["torch.log"]["stochastic"]
    usable = {op["name"] for op in composable_ops(catalog)}
    assert "nn.Dropout" not in usable and "torch.log" not in usable and "nn.GELU" in usable
    json.dumps(catalog, allow_nan=False)


def test_composer_is_deterministic_and_follows_the_mix(catalog):
    ops = composable_ops(catalog)
    assert compose(ops, 5, PAPER_MIX, 5, "cpu") == compose(ops, 5, PAPER_MIX, 5, "cpu")
    assert compose(ops, 5, PAPER_MIX, 5, "cpu")["code"] != compose(ops, 6, PAPER_MIX, 5, "cpu")["code"]
    counts = collections.Counter(compose(ops, s, PAPER_MIX, 5, "cpu")["n_ops"] for s in range(2000))
    for n, percent in PAPER_MIX.items():
        assert abs(100 * counts[n] / 2000 - percent) < 3, (n, counts)
    assert {compose(ops, s, PAPER_MIX, 2, "cpu")["n_ops"] for s in range(200)} <= {1, 2}
    assert {compose(ops, s, parse_mix("3:1"), 5, "cpu")["n_ops"] for s in range(50)} == {3}


@pytest.mark.parametrize("text", ["2", "0:1", "6:1", "1:-1", "1:0"])
def test_parse_mix_rejects(text):
    with pytest.raises(ValueError):
        parse_mix(text)


def test_similarity_ignores_names_sizes_and_docstrings():
    a = 'import torch\n\n\ndef get_inputs():\n    """doc"""\n    n = 4\n    return [torch.randn(n, 8)]\n'
    b = 'import torch\n\n\ndef get_inputs():\n    size = 16\n    return [torch.randn(size, 3)]\n'
    c = 'import torch\n\n\ndef get_inputs():\n    size = 16\n    return [torch.rand(size, 3).relu()]\n'
    assert similarity(tokens(a), tokens(b)) == 1.0
    assert 0.5 < similarity(tokens(a), tokens(c)) < 1.0
    corpus = Corpus([a], ["a"])
    assert corpus.max_similarity(tokens(b), 0.9) == (1.0, "a")
    assert corpus.max_similarity(tokens(c), 0.99)[1] is None  # below the threshold: not compared exactly


BRANCHY = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(256, 256)

    def forward(self, x):
        y = self.linear(x)
        if float(y.sum().item()) > 1e9:
            return y
        return torch.tanh(y)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""


UNBRANCHY = BRANCHY.replace("if float(y.sum().item()) > 1e9:\n            return y\n        ", "")


@pytest.mark.parametrize("code, stage", [(BRANCHY, "compile"), (UNBRANCHY, None)])
def test_compile_stage(tmp_path, code, stage):
    path = tmp_path / "c.py"
    path.write_text(code)
    c = Candidate(code=code, ops=["nn.Linear", "torch.tanh"], path=str(path))
    cfg = FilterConfig(min_ms=0.0, max_ms=1e6, compile_check=True, compile_backend="eager")
    got, reason = run_filters(c, cfg, Corpus(), {})
    assert got == stage, reason
    if stage is None:
        assert c.compile_ms is not None and c.log["compile"] == "pass"


def test_quotas_split_the_count_and_steering_skips_full_counts():
    from cuda_agent_synth.job import op_count_quotas, steered_count

    quotas = op_count_quotas({1: 3.4, 2: 83.8, 3: 7.6, 4: 2.8, 5: 1.2}, 5, 500)
    assert sum(quotas.values()) == 500 and quotas == {"1": 17, "2": 424, "3": 39, "4": 14, "5": 6}
    assert op_count_quotas({1: 3.4, 2: 83.8, 3: 7.6, 4: 2.8, 5: 1.2}, 2, 10) == {"1": 0, "2": 10}
    # the published mix with its transformers share: 1.2 % of 500 are single transformers ops
    with_t = op_count_quotas({1: 3.4, 2: 83.8, 3: 7.6, 4: 2.8, 5: 1.2}, 5, 500, transformers_share=1.2)
    assert with_t == {"1": 17, "2": 419, "3": 38, "4": 14, "5": 6, "transformers": 6}
    # 2-op quota full: every draw is another count; nothing open: None.
    draws = {steered_count(s, quotas, {"2": 424}, {}) for s in range(200)}
    assert draws == {"1", "3", "4", "5"}
    # in-flight candidates count against the quota, unless nothing would be left to ask for
    assert steered_count(7, {"1": 2}, {"1": 1}, {"1": 1}) == "1"
    assert steered_count(7, {"1": 2, "2": 2}, {"1": 1}, {"1": 1}) == "2"
    assert steered_count(7, {"1": 2}, {"1": 2}, {}) is None


def test_categories_and_data_sources():
    from cuda_agent_synth.job import category, data_source

    assert category(["nn.Linear", "F.gelu"]) == "2" and data_source(["nn.Linear", "F.gelu"]) == "torch#2"
    assert category(["transformers.LlamaMLP"]) == "transformers"
    assert data_source(["transformers.LlamaMLP"]) == "transformers#1"


def test_transformers_ops_are_probed_and_stay_single(catalog):
    pytest.importorskip("transformers")
    from cuda_agent_synth.catalog import transformers_ops
    from cuda_agent_synth.composer import compose_transformers

    found = {op["name"]: op for op in transformers_ops(catalog)}
    for name in ("transformers.ACT2FN[gelu_new]", "transformers.LlamaRMSNorm", "transformers.LlamaMLP",
                 "transformers.BertSelfAttention"):
        assert name in found, sorted(found)
    assert found["transformers.BertSelfAttention"]["ranks"] == [3]
    assert "transformers.ACT2FN[linear]" not in found  # the identity
    assert not any(op["source"] == "transformers" for op in composable_ops(catalog)), "never chained"
    families = collections.Counter()
    for seed in range(40):
        program = compose_transformers(list(found.values()), seed, "cpu")
        assert program == compose_transformers(list(found.values()), seed, "cpu")
        assert program["n_ops"] == 1 and program["ops"][0] in found
        families[found[program["ops"][0]]["family"]] += 1
        namespace: dict = {}
        exec(program["code"], namespace)  # noqa: S102 - our own program
        model = namespace["Model"](*namespace["get_init_inputs"]())
        out = model(*namespace["get_inputs"]())
        assert list(out.shape) == program["output_shape"] == program["input_shape"]
    assert set(families) == {"activation", "norm", "mlp", "attention"}, families
