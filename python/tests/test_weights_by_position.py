"""Loading the reference weights by position (the policy rule weights_by_position, kernelbench's):
models.match_by_position and load_reference_weights — renamed entries paired in order, ModelNew's own
extra entries kept as it built them, BatchNorm's unmatched counters ignored, a reference entry ModelNew
lacks and an ambiguous pairing refused — and the candidate, profile and ncu_target jobs under it."""

from collections import OrderedDict

import pytest
import torch
from helpers import (
    GOOD_CANDIDATE,
    candidate_spec,
    compare_spec,
    make_reference,
    profile_spec,
    run,
    write_candidate,
)
from torch import nn

from cuda_agent_harness.errors import JobError
from cuda_agent_harness.integrity import check_weights, reference_weights
from cuda_agent_harness.jobs import ncu_target
from cuda_agent_harness.models import (
    load_reference_weights,
    match_by_position,
    renamed_state,
)

BY_POSITION = {"torch_compute": False, "weights_by_position": True}


class LinearModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)


class RenamedSubmodule(nn.Module):  # KernelBench's "bmm" for the reference's "linear"
    def __init__(self):
        super().__init__()
        self.bmm = nn.Linear(4, 3)


class OwnParameters(nn.Module):  # its own nn.Parameters instead of a Conv/Linear submodule
    def __init__(self, extra=False, bias_shape=(3,), dtype=torch.float32, with_bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(3, 4))
        if with_bias:
            self.bias = nn.Parameter(torch.zeros(bias_shape, dtype=dtype))
        if extra:
            self.scale = nn.Parameter(torch.ones(1))


class NoBiasLinear(nn.Module):  # a reference without a bias (nn.Conv3d(bias=False), l1-p66)
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3, bias=False)


class WeightAndEmptyBias(nn.Module):  # l1-p66's ModelNew: its own weight, and an empty bias parameter
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(3, 4))
        self.bias = nn.Parameter(torch.Tensor())


class ExtraOfTheBiasShape(nn.Module):  # weight, bias and one more entry of the bias's shape
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(3, 4))
        self.bias = nn.Parameter(torch.zeros(3))
        self.shift = nn.Parameter(torch.full((3,), 7.0))


class BiasFirst(nn.Module):  # the bias registered before the weight, and an extra: no in-order pairing
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(3))
        self.weight = nn.Parameter(torch.zeros(3, 4))
        self.scale = nn.Parameter(torch.ones(1))


class TwoLinears(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.shared = nn.Linear(4, 2)


class TwoLinearsRenamed(nn.Module):  # a and b under other names, registered in the other order
    def __init__(self):
        super().__init__()
        self.second = nn.Linear(4, 4)
        self.first = nn.Linear(4, 4)
        self.shared = nn.Linear(4, 2)


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.bn = nn.BatchNorm2d(3)


class ConvBNOwn(nn.Module):  # the same tensors, BatchNorm's buffers among them, under its own names
    def __init__(self, counter=True):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(3, 2, 3, 3))
        self.b = nn.Parameter(torch.zeros(3))
        self.gamma = nn.Parameter(torch.zeros(3))
        self.beta = nn.Parameter(torch.zeros(3))
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("var", torch.ones(3))
        if counter:
            self.register_buffer("tracked", torch.tensor(0, dtype=torch.long))


class ConvNorm(nn.Module):  # ConvBN with the BatchNorm called `norm`: its counter has no partner
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.norm = nn.BatchNorm2d(3)


def reference_state(model: nn.Module) -> OrderedDict:
    torch.manual_seed(0)
    for t in model.state_dict().values():
        if t.is_floating_point():
            t.copy_(torch.randn_like(t))
    return OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items())


def test_a_renamed_submodule_pairs_by_position():
    ref = reference_state(LinearModel())
    assert match_by_position(ref, RenamedSubmodule().state_dict()) == (
        {"linear.weight": "bmm.weight", "linear.bias": "bmm.bias"}, [], [])


def test_own_parameters_pair_by_position_and_load():
    ref = reference_state(LinearModel())
    model = OwnParameters()
    renaming = load_reference_weights(model, ref, by_position=True).renaming
    assert renaming == {"linear.weight": "weight", "linear.bias": "bias"}
    assert torch.equal(model.weight, ref["linear.weight"]) and torch.equal(model.bias, ref["linear.bias"])
    # The weights' check compares under ModelNew's names, and still catches a change.
    frozen = reference_weights(renamed_state(ref, renaming), "cpu")
    check_weights(frozen, model, "after load_state_dict")
    with torch.no_grad():
        model.bias[0] += 1
    with pytest.raises(JobError) as err:
        check_weights(frozen, model, "after the forward")
    assert err.value.kind == "mutated_weights" and "bias holds other values" in str(err.value)


def test_only_the_unmatched_entries_pair_in_their_order():
    ref = reference_state(TwoLinears())
    model = TwoLinearsRenamed()
    renaming = load_reference_weights(model, ref, by_position=True).renaming
    # shared.* matched by name; a.* pairs with second.*, b.* with first.* (registration order).
    assert renaming == {"a.weight": "second.weight", "a.bias": "second.bias",
                        "b.weight": "first.weight", "b.bias": "first.bias"}
    assert torch.equal(model.second.weight, ref["a.weight"]) and torch.equal(model.first.bias, ref["b.bias"])
    assert torch.equal(model.shared.weight, ref["shared.weight"])


def test_buffers_pair_too_and_the_reference_counter_is_ignored():
    ref = reference_state(ConvBN())
    model = ConvBNOwn()
    loaded = load_reference_weights(model, ref, by_position=True)
    assert loaded.renaming["bn.running_mean"] == "mean" and loaded.renaming["bn.running_var"] == "var"
    assert torch.equal(model.var, ref["bn.running_var"]) and torch.equal(model.gamma, ref["bn.weight"])
    # BatchNorm's counter is no weight: the reference's is not loaded, ModelNew's `tracked` is its own.
    assert "bn.num_batches_tracked" not in loaded.renaming
    assert loaded.not_loaded == ["bn.num_batches_tracked"] and loaded.own == ["tracked"]


def test_a_model_without_the_counter_loads_by_position():
    ref = reference_state(ConvBN())
    model = ConvBNOwn(counter=False)
    loaded = load_reference_weights(model, ref, by_position=True)
    assert loaded.not_loaded == ["bn.num_batches_tracked"] and loaded.own == []
    assert loaded.record() == {"weights": "by_position", "weights_renamed": dict(list(loaded.renaming.items())[:8]),
                               "weights_not_loaded": ["bn.num_batches_tracked"]}
    assert torch.equal(model.mean, ref["bn.running_mean"])
    check_weights(reference_weights(loaded.state(ref), "cpu"), model, "after load_state_dict")


def test_modelnew_counter_the_reference_lacks_is_its_own():
    ref = reference_state(ConvBNOwn(counter=False))
    model = ConvNorm()
    loaded = load_reference_weights(model, ref, by_position=True)
    assert loaded.own == ["norm.num_batches_tracked"] and loaded.not_loaded == []
    assert loaded.renaming == {"w": "conv.weight", "b": "conv.bias", "gamma": "norm.weight", "beta": "norm.bias",
                               "mean": "norm.running_mean", "var": "norm.running_var"}
    check_weights(reference_weights(loaded.state(ref), "cpu"), model, "after load_state_dict")


def test_an_extra_parameter_is_kept_under_kernelbench_and_refused_under_strict():
    ref = reference_state(LinearModel())
    model = OwnParameters(extra=True)
    with torch.no_grad():
        model.scale.fill_(2.5)  # ModelNew's own initialisation, which it keeps
    loaded = load_reference_weights(model, ref, by_position=True)
    assert loaded.renaming == {"linear.weight": "weight", "linear.bias": "bias"} and loaded.own == ["scale"]
    assert loaded.record()["weights_own"] == ["scale"]
    assert torch.equal(model.weight, ref["linear.weight"]) and model.scale.item() == 2.5
    # The weights' checks cover ModelNew's own entry too: a forward that changes it is caught.
    frozen = reference_weights(loaded.state(ref), "cpu")
    check_weights(frozen, model, "after load_state_dict")
    with torch.no_grad():
        model.scale += 1
    with pytest.raises(JobError) as err:
        check_weights(frozen, model, "after the forward")
    assert err.value.kind == "mutated_weights" and "scale holds other values" in str(err.value)
    with pytest.raises(JobError) as err:
        load_reference_weights(OwnParameters(extra=True), ref, by_position=False)
    assert err.value.kind == "state_dict"
    assert "missing keys [bias, scale, weight]; unexpected keys [linear.bias, linear.weight]" in str(err.value)


def test_extra_entries_by_name_are_kept_too():
    ref = reference_state(OwnParameters())
    model = OwnParameters(extra=True)
    loaded = load_reference_weights(model, ref, by_position=True)
    assert loaded.record() == {"weights": "by_name", "weights_own": ["scale"]}
    assert torch.equal(model.bias, ref["bias"])


def test_l1_p66_an_empty_bias_beside_the_reference_weight():
    ref = reference_state(NoBiasLinear())
    model = WeightAndEmptyBias()
    loaded = load_reference_weights(model, ref, by_position=True)
    assert loaded.renaming == {"linear.weight": "weight"} and loaded.own == ["bias"]
    assert torch.equal(model.weight, ref["linear.weight"]) and model.bias.numel() == 0


def test_a_reference_entry_modelnew_lacks_is_refused_naming_the_allowed_way():
    ref = reference_state(LinearModel())
    with pytest.raises(JobError) as err:
        load_reference_weights(OwnParameters(with_bias=False), ref, by_position=True)
    assert err.value.kind == "state_dict"
    message = str(err.value)
    assert "the reference's 2 unmatched entries [linear.weight, linear.bias] against ModelNew's 1 [weight]" in message
    assert "another count" in message and "every one must have its place in ModelNew" in message
    assert "same names, or under --policy kernelbench the same shapes and dtypes in the same order" in message


def test_an_ambiguous_pairing_is_refused():
    ref = reference_state(LinearModel())
    with pytest.raises(JobError) as err:
        load_reference_weights(ExtraOfTheBiasShape(), ref, by_position=True)
    assert err.value.kind == "state_dict"
    message = str(err.value)
    assert "the reference's linear.bias (float32[3]) could pair with ModelNew's bias or shift: ambiguous" in message
    assert "give ModelNew's entry the reference's name" in message


def test_no_pairing_in_order_is_refused():
    ref = reference_state(LinearModel())
    with pytest.raises(JobError) as err:
        load_reference_weights(BiasFirst(), ref, by_position=True)
    assert "the reference's linear.bias (float32[3]) finds no entry of its shape and dtype in order among " \
           "ModelNew's 3 unmatched [bias, weight, scale]" in str(err.value)


def test_another_shape_is_refused_naming_the_first_pair():
    ref = reference_state(LinearModel())
    with pytest.raises(JobError) as err:
        load_reference_weights(OwnParameters(bias_shape=(4,)), ref, by_position=True)
    assert err.value.kind == "state_dict"
    assert "the reference's linear.bias (float32[3]) pairs with ModelNew's bias (float32[4])" in str(err.value)


def test_another_dtype_is_refused():
    ref = reference_state(LinearModel())
    with pytest.raises(JobError) as err:
        load_reference_weights(OwnParameters(dtype=torch.float64), ref, by_position=True)
    assert "(float32[3]) pairs with ModelNew's bias (float64[3])" in str(err.value)


def test_without_the_rule_a_renamed_model_is_refused():
    ref = reference_state(LinearModel())
    with pytest.raises(JobError) as err:
        load_reference_weights(RenamedSubmodule(), ref, by_position=False)
    assert err.value.kind == "state_dict"
    assert "missing keys [bmm.bias, bmm.weight]; unexpected keys [linear.bias, linear.weight]" in str(err.value)
    assert "keep the model's parameters" in str(err.value)


def test_same_names_load_by_name():
    ref = reference_state(LinearModel())
    assert load_reference_weights(LinearModel(), ref, by_position=True).record() == {"weights": "by_name"}


RENAMED = GOOD_CANDIDATE.replace("self.lin", "self.proj")


def test_candidate_job_by_position(tmp_path):
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, RENAMED)
    spec = candidate_spec(tmp_path, ref, cand_dir, ext_dir)
    refused = run("candidate", spec)
    assert refused["error_kind"] == "state_dict", refused
    spec["policy_rules"] = BY_POSITION
    result = run("candidate", spec)
    assert result["ok"], result
    assert result["weights"] == "by_position"
    assert result["weights_renamed"] == {"lin.weight": "proj.weight", "lin.bias": "proj.bias"}
    compared = run("compare", compare_spec(tmp_path, ref, spec))
    assert compared["ok"], compared


def test_candidate_job_by_name_says_so(tmp_path):
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, GOOD_CANDIDATE)
    spec = candidate_spec(tmp_path, ref, cand_dir, ext_dir)
    spec["policy_rules"] = BY_POSITION
    result = run("candidate", spec)
    assert result["ok"], result
    assert result["weights"] == "by_name" and "weights_renamed" not in result


def test_renamed_weights_changed_by_the_forward_are_caught(tmp_path):
    ref = make_reference(tmp_path)
    changes = "        self.proj.bias.detach().numpy()[0] += 1  # no aten op\n"
    source = RENAMED.replace("        w = self.proj.weight", changes + "        w = self.proj.weight")
    cand_dir, ext_dir = write_candidate(tmp_path, source)
    spec = candidate_spec(tmp_path, ref, cand_dir, ext_dir)
    spec["policy_rules"] = BY_POSITION
    result = run("candidate", spec)
    assert result["error_kind"] == "mutated_weights", result
    assert "proj.bias holds other values" in result["reason"]


def test_profile_job_by_position(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, RENAMED)
    spec = profile_spec(tmp_path, ref, "candidate", candidate, iters=2)
    assert run("profile", spec)["error_kind"] == "state_dict"
    spec["policy_rules"] = BY_POSITION
    result = run("profile", spec)
    assert result.get("ok", True) and result["weights"] == "by_position", result
    assert result["median_wall_us"] is not None


EXTRA = GOOD_CANDIDATE.replace("        self.lin = nn.Linear(features, features)\n",
                               "        self.lin = nn.Linear(features, features)\n"
                               "        self.extra = nn.Parameter(torch.full((2,), 3.0))  # never read\n")


def test_candidate_job_keeps_an_extra_parameter_under_the_rule_only(tmp_path):
    assert EXTRA != GOOD_CANDIDATE
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, EXTRA)
    spec = candidate_spec(tmp_path, ref, cand_dir, ext_dir)
    refused = run("candidate", spec)
    assert refused["error_kind"] == "state_dict" and "missing keys [extra]" in refused["reason"], refused
    spec["policy_rules"] = BY_POSITION
    result = run("candidate", spec)
    assert result["ok"], result
    assert result["weights"] == "by_name" and result["weights_own"] == ["extra"]
    assert run("compare", compare_spec(tmp_path, ref, spec))["ok"]


def test_profile_job_records_the_extra_parameter(tmp_path):
    ref = make_reference(tmp_path)
    candidate = write_candidate(tmp_path, EXTRA)
    spec = profile_spec(tmp_path, ref, "candidate", candidate, iters=2)
    spec["policy_rules"] = BY_POSITION
    result = run("profile", spec)
    assert result.get("ok", True) and result["weights_own"] == ["extra"], result


def test_ncu_target_loads_under_the_policy_rules(tmp_path):
    ref = make_reference(tmp_path)
    cand_dir, ext_dir = write_candidate(tmp_path, RENAMED)
    spec = {"device": "cuda", "task_path": ref["task_path"], "candidate_dir": cand_dir, "extension_dir": ext_dir,
            "seed": 7}
    try:
        with pytest.raises(JobError) as err:
            ncu_target.target(spec, "cpu")  # no policy_rules: the paper's, by name
        assert err.value.kind == "state_dict"
        spec["policy_rules"] = BY_POSITION
        model, inputs, loaded = ncu_target.target(spec, "cpu")
        assert loaded.record()["weights"] == "by_position"
        assert loaded.renaming == {"lin.weight": "proj.weight", "lin.bias": "proj.bias"}
        assert model(*inputs) is not None
    finally:
        ncu_target.set_policy_rules(None)
