"""Tests of the `reference` job: files written, task errors named; served, its comparisons' answers."""

import json
import os
import threading
import time

import torch
from helpers import TASK, Served, make_reference, read_strict_json, reference_spec, reference_weights_of, run, write

from cuda_agent_harness.inputs import make_input_set, timed_call_set, timing_set_seed, transformed
from cuda_agent_harness.runner import run_job
from cuda_agent_harness.task_module import import_task


def load(path):
    return torch.load(path, weights_only=True)


def test_reference_writes_expected_outputs_of_the_seeded_inputs(tmp_path):
    spec = make_reference(tmp_path)
    result = run("reference", spec)
    assert result["num_checks"] == 3
    assert result["output_signature"] == "Tensor[float32](16, 8)"
    assert result["seconds"] > 0
    data = spec["data_dir"]
    assert load(os.path.join(data, "init_inputs.pt")) == [8]
    assert result["weights_from"] == "seed"  # deterministic: no state_dict.pt, a seed file
    assert not os.path.exists(os.path.join(data, "state_dict.pt"))
    state_dict = reference_weights_of(spec)
    assert sorted(state_dict) == ["lin.bias", "lin.weight"]
    assert not [f for f in os.listdir(data) if f.startswith("inputs")]  # inputs never travel as files
    task = import_task(spec["task_path"])
    for i, seed in enumerate(spec["check_seeds"]):
        inputs = make_input_set(task, seed, "cpu")
        assert isinstance(inputs, list) and len(inputs) == 2
        x, offset = inputs
        assert x.device.type == "cpu" and x.shape == (16, 8)
        assert offset == 3 and type(offset) is int
        expected = load(os.path.join(data, f"expected_{i}.pt"))
        # recompute independently from the written weights
        recomputed = (x @ state_dict["lin.weight"].t() + state_dict["lin.bias"]) * 2 + 1 + offset
        torch.testing.assert_close(expected, recomputed)


def test_inputs_follow_the_seeds(tmp_path):
    spec = make_reference(tmp_path, seeds=(5, 6, 5))
    task = import_task(spec["task_path"])
    x0, x1, x2 = (make_input_set(task, seed, "cpu")[0] for seed in spec["check_seeds"])
    assert torch.equal(x0, x2)
    assert not torch.equal(x0, x1)
    torch.manual_seed(5)
    assert torch.equal(x0, torch.randn(16, 8))
    expected = [load(os.path.join(spec["data_dir"], f"expected_{i}.pt")) for i in range(3)]
    assert torch.equal(expected[0], expected[2]) and not torch.equal(expected[0], expected[1])


def test_spot_checked_timed_calls_get_expected_outputs(tmp_path):
    spec = make_reference(tmp_path)
    spec["timing"] = {"seed": 999, "warmup": 2, "iters": 4, "spot_check_calls": [3, 1]}
    result = run("reference", spec)
    assert result["ok"], result
    assert result["timing_input_sets"] == 6
    assert [e["call"] for e in result["spot_expected"]] == [3, 1]
    assert [e["input_set"] for e in result["spot_expected"]] == [5, 3]  # warm-up 2: call i uses set 2 + i
    task = import_task(spec["task_path"])
    state_dict = reference_weights_of(spec)
    for entry in result["spot_expected"]:
        x, offset = make_input_set(task, timing_set_seed(999, timed_call_set(entry["call"], 2, 6)), "cpu")
        recomputed = (x @ state_dict["lin.weight"].t() + state_dict["lin.bias"]) * 2 + 1 + offset
        torch.testing.assert_close(load(entry["path"]), recomputed)
    assert result["min_bytes"] == (16 * 8 + 16 * 8) * 4


def test_weights_follow_the_init_seed(tmp_path):
    a = make_reference(tmp_path / "a")
    b = make_reference(tmp_path / "b")
    wa = reference_weights_of(a)["lin.weight"]
    wb = reference_weights_of(b)["lin.weight"]
    assert torch.equal(wa, wb)


# Each construction draws its own seed: a second build from the init seed gives other weights.
NONDETERMINISTIC_INIT = TASK.replace(
    "        self.lin = nn.Linear(features, features)",
    "        torch.manual_seed(__import__('time').time_ns() % 2**31)\n"
    "        self.lin = nn.Linear(features, features)")


def test_weights_that_a_seed_cannot_rebuild_travel_as_a_file(tmp_path):
    spec = make_reference(tmp_path, NONDETERMINISTIC_INIT)
    result = run("reference", spec)
    assert result["ok"] and result["weights_from"] == "file", result
    written = load(os.path.join(spec["data_dir"], "state_dict.pt"))
    assert torch.equal(reference_weights_of(spec)["lin.weight"], written["lin.weight"])
    # the expected outputs were made with the written weights, not another build's
    task = import_task(spec["task_path"])
    x, offset = make_input_set(task, spec["check_seeds"][0], "cpu")
    recomputed = (x @ written["lin.weight"].t() + written["lin.bias"]) * 2 + 1 + offset
    torch.testing.assert_close(load(os.path.join(spec["data_dir"], "expected_0.pt")), recomputed)


def test_a_rebuild_that_differs_from_the_checksums_is_an_internal_error(tmp_path):
    import json

    from cuda_agent_harness.errors import JobError
    spec = make_reference(tmp_path)
    seed_path = os.path.join(spec["data_dir"], "state_dict.seed.json")
    meta = json.load(open(seed_path))
    meta["init_seed"] += 1
    json.dump(meta, open(seed_path, "w"))
    try:
        reference_weights_of(spec)
    except JobError as exc:
        assert exc.kind == "internal" and "differ from the reference job's" in str(exc)
    else:
        raise AssertionError("weights from another seed were accepted")


def test_nested_outputs_are_written_on_cpu_with_their_types(tmp_path):
    source = TASK.replace("return self.lin(x) * 2 + 1 + offset",
                          "y = self.lin(x)\n        return (y, {'sum': y.sum(), 'n': offset})")
    spec = make_reference(tmp_path, source)
    expected = load(os.path.join(spec["data_dir"], "expected_0.pt"))
    assert type(expected) is tuple and type(expected[1]) is dict
    assert expected[1]["n"] == 3
    assert run("reference", spec)["output_signature"] == (
        "tuple(Tensor[float32](16, 8), dict{'sum': Tensor[float32](), 'n': int})")


def test_single_input_and_tuple_init_inputs_are_wrapped(tmp_path):
    source = """
    import torch
    class Model(torch.nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale
        def forward(self, x):
            return x * self.scale
    def get_inputs():
        return torch.ones(3)
    def get_init_inputs():
        return (2.5,)
    """
    spec = make_reference(tmp_path, source)
    assert load(os.path.join(spec["data_dir"], "init_inputs.pt")) == [2.5]
    inputs = make_input_set(import_task(spec["task_path"]), spec["check_seeds"][0], "cpu")
    assert isinstance(inputs, list) and len(inputs) == 1
    assert torch.equal(load(os.path.join(spec["data_dir"], "expected_0.pt")), torch.full((3,), 2.5))


def task_failure(tmp_path, source):
    task_path = write(tmp_path / "task" / "model.py", source)
    result = run("reference", reference_spec(tmp_path, task_path))
    assert not result["ok"]
    assert result["error_kind"] == "task"
    return result


def test_task_without_get_inputs(tmp_path):
    source = TASK.replace("def get_inputs():", "def get_other_inputs():")
    result = task_failure(tmp_path, source)
    assert result["reason"] == "task defines no get_inputs()"


def test_task_without_model(tmp_path):
    result = task_failure(tmp_path, TASK.replace("class Model(", "class Model2("))
    assert result["reason"] == "task defines no Model"


def test_get_init_inputs_raising(tmp_path):
    source = TASK.replace("return [8]", "raise ValueError('bad size')")
    result = task_failure(tmp_path, source)
    assert result["reason"] == "get_init_inputs() raised ValueError: bad size"
    assert "ValueError: bad size" in result["traceback"]


def test_task_import_error(tmp_path):
    result = task_failure(tmp_path, "import torch\nimport no_such_module_here\n")
    assert result["reason"].startswith("importing the task file raised ModuleNotFoundError")


def test_task_syntax_error(tmp_path):
    result = task_failure(tmp_path, "def broken(:\n")
    assert "SyntaxError" in result["reason"]


def test_task_forward_raising(tmp_path):
    source = TASK.replace("return self.lin(x) * 2 + 1 + offset", "raise RuntimeError('no forward')")
    result = task_failure(tmp_path, source)
    assert result["reason"] == "Model.forward (check 0) raised RuntimeError: no forward"


def test_missing_task_file(tmp_path):
    result = run("reference", reference_spec(tmp_path, str(tmp_path / "nope.py")))
    assert result["error_kind"] == "task"
    assert "does not exist" in result["reason"]


def test_missing_spec_key_is_internal(tmp_path):
    spec = reference_spec(tmp_path, str(tmp_path / "nope.py"))
    del spec["check_seeds"]
    result = run("reference", spec)
    assert result["error_kind"] == "internal"
    assert result["reason"] == "spec: missing key 'check_seeds'"


# Inputs at other scales and shifts (HACKS B7, B9), where the task allows them.

NON_NEGATIVE_RELU = """
import torch
class Model(torch.nn.Module):
    def forward(self, x, idx):
        return torch.relu(x) + idx.float().sum()
def get_inputs():
    return [torch.rand(64, 32), torch.arange(4)]
def get_init_inputs():
    return []
"""

NEEDS_PROBABILITIES = """
import torch
class Model(torch.nn.Module):
    def forward(self, p):
        return torch.nn.functional.binary_cross_entropy(p, torch.full_like(p, 0.5))
def get_inputs():
    return [torch.rand(16, 8)]
def get_init_inputs():
    return []
"""


UPPER_TRIANGULAR_MATMUL = """
import torch
class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.triu(a @ b)
def get_inputs():
    return [torch.triu(torch.rand(16, 16)), torch.triu(torch.rand(16, 16))]
def get_init_inputs():
    return []
"""


def test_the_transforms_keep_the_inputs_structure(tmp_path):
    # A kernel may rely on what get_inputs() promises (here: upper-triangular matrices, KernelBench's
    # level-1 problem 14): every transformed set keeps the zeros where they are.
    spec, result = transformed_reference(tmp_path, UPPER_TRIANGULAR_MATMUL)
    assert result["ok"], result
    assert result["input_scales"] == [1, 1, 8, 0.125, -1], result["input_scales"]
    task = import_task(spec["task_path"])
    for scale in result["input_scales"]:
        a, b = transformed(make_input_set(task, 5, "cpu"), scale, 0)
        assert torch.equal(a, torch.triu(a)) and torch.equal(b, torch.triu(b)), scale


def transformed_reference(tmp_path, source):
    spec = reference_spec(tmp_path, write(tmp_path / "task" / "model.py", source), seeds=(1, 2, 3, 4, 5))
    spec.update(input_scales=[1, 1, 8, 0.125, -1], input_shifts=[0, 0, 0, 0, 0])
    return spec, run("reference", spec)


def test_floating_inputs_are_scaled_and_negated_and_integers_kept(tmp_path):
    spec, result = transformed_reference(tmp_path, NON_NEGATIVE_RELU)
    assert result["ok"], result
    assert result["input_scales"] == [1, 1, 8, 0.125, -1] and result["input_shifts"] == [0, 0, 0, 0, 0]
    # the inputs as the candidate job makes them: the seed's set, then the check's transform
    task = import_task(spec["task_path"])
    shifted, idx = transformed(make_input_set(task, 5, "cpu"), -1, 0)
    assert shifted.max() <= 0 and shifted.min() < 0, "x * -1 gives the non-negative task negative inputs"
    assert torch.equal(idx, torch.arange(4))
    expected = load(os.path.join(spec["data_dir"], "expected_4.pt"))
    torch.testing.assert_close(expected, torch.relu(shifted) + idx.float().sum())
    big, _ = transformed(make_input_set(task, 3, "cpu"), 8, 0)
    assert big.max() > 1.0
    torch.testing.assert_close(load(os.path.join(spec["data_dir"], "expected_2.pt")), torch.relu(big) + 6)
    assert result["float_dtypes"] == ["float32"]


def test_a_transform_the_task_does_not_allow_falls_back(tmp_path):
    spec, result = transformed_reference(tmp_path, NEEDS_PROBABILITIES)
    assert result["ok"], result
    # BCE refuses inputs outside [0, 1]: x * 8 and x * -1 fall back; x / 8 stays.
    assert result["input_scales"] == [1, 1, 1, 0.125, 1] and result["input_shifts"] == [0, 0, 0, 0, 0]
    p, = make_input_set(import_task(spec["task_path"]), 3, "cpu")
    assert 0 <= p.min() and p.max() <= 1
    bce = torch.nn.functional.binary_cross_entropy(p, torch.full_like(p, 0.5))
    torch.testing.assert_close(load(os.path.join(spec["data_dir"], "expected_2.pt")), bce)


def test_models_are_built_on_their_device_and_on_the_cpu_where_that_fails():
    from cuda_agent_harness.models import construct

    class Anywhere(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.built_on = torch.empty(0).device.type
            self.lin = torch.nn.Linear(2, 2)

    class CpuOnly(Anywhere):
        def __init__(self):
            super().__init__()
            if self.built_on != "cpu":
                raise RuntimeError("written for the CPU")

    # "meta" stands in for the GPU: parameters are made there, or on the CPU and then moved
    assert construct(Anywhere, [], "meta", "task").built_on == "meta"
    model = construct(CpuOnly, [], "meta", "task")
    assert model.built_on == "cpu" and model.lin.weight.device.type == "meta"


# --- served: the reference answers the judgement's comparisons itself (serving.py) ---

def expected_of(spec, seed_or_set, timing_seed=None):
    task = import_task(spec["task_path"])
    state_dict = reference_weights_of(spec)
    seed = seed_or_set if timing_seed is None else timing_set_seed(timing_seed, seed_or_set)
    x, offset = make_input_set(task, seed, "cpu")
    return (x @ state_dict["lin.weight"].t() + state_dict["lin.bias"]) * 2 + 1 + offset


def test_served_reference_answers_both_comparisons_from_memory(tmp_path):
    served = Served(tmp_path)
    ref = served.answer("reference")
    assert ref["ok"] and ref["num_checks"] == 3
    assert [e["key"] for e in ref["spot_expected"]] == ["call 3", "call 1"]
    assert not any("path" in e for e in ref["spot_expected"])
    assert os.listdir(tmp_path / "private") == []  # the expected outputs never touch the disk
    seeds = served.spec["check_seeds"]
    good = [expected_of(served.spec, s) for s in seeds] + [expected_of(served.spec, seeds[0])]
    bad = [g.clone() for g in good]
    bad[2][0, 0] += 1
    cmp = served.go("compare", ["check 0", "check 1", "check 2", "check 0"], bad)
    assert not cmp["ok"] and cmp["error_kind"] == "mismatch"
    assert [c["ok"] for c in cmp["checks"]] == [True, True, False, True]
    assert cmp["go_wait_seconds"] >= 0 and set(cmp["phase_seconds"]) == {"load", "compare"}
    spots = [expected_of(served.spec, e["input_set"], 999) for e in ref["spot_expected"]]
    spot = served.go("compare_spots", ["call 3", "call 1"], spots)
    assert spot["ok"], spot
    assert [c["ok"] for c in spot["checks"]] == [True, True]
    final = served.end()
    assert final["ok"] and final["answered"] == ["compare", "compare_spots"]


def test_served_reference_ends_at_stop_and_names_an_unknown_key(tmp_path):
    served = Served(tmp_path, timing=False)
    assert served.answer("reference")["ok"]
    cmp = served.go("compare", ["check 7"], [torch.zeros(16, 8)])
    assert not cmp["ok"] and cmp["error_kind"] == "internal" and "check 7" in cmp["reason"]
    (tmp_path / "served" / "stop").write_text("stop\n")
    final = served.end()
    assert final["ok"] and final["answered"] == ["compare"]
    assert not (tmp_path / "answers" / "compare_spots.json").exists()


def test_served_reference_that_fails_answers_nothing(tmp_path):
    served = Served(tmp_path, task=TASK.replace("def get_inputs():", "def other():"), start=False)
    result = run("reference", served.spec)
    assert not result["ok"] and result["error_kind"] == "task"
    assert os.listdir(tmp_path / "answers") == []


def test_served_reference_beyond_its_memory_budget_compares_from_files(tmp_path):
    served = Served(tmp_path, timing=False, start=False)
    served.spec["keep_bytes"] = 16 * 8 * 4 * 2  # two of the three checks' outputs
    served.thread.start()
    ref = served.answer("reference")
    assert ref["ok"] and ref["num_checks"] == 3
    assert sorted(os.listdir(tmp_path / "private")) == ["expected_2.pt"]  # only the one beyond it
    seeds = served.spec["check_seeds"]
    good = [expected_of(served.spec, s) for s in seeds]
    cmp = served.go("compare", ["check 2", "check 0", "check 1"], [good[2], good[0], good[1]])
    assert cmp["ok"], cmp
    (tmp_path / "served" / "stop").write_text("stop\n")
    assert served.end()["kept_in_memory_bytes"] == 16 * 8 * 4 * 2


def test_a_kept_output_that_views_a_larger_block_gets_its_own():
    from cuda_agent_harness.jobs.reference import own_storage
    block = torch.arange(16 * 8, dtype=torch.float32).reshape(16, 8)
    view = own_storage(block[:, :4])
    assert view.untyped_storage().nbytes() == 16 * 4 * 4 and torch.equal(view, block[:, :4])
    assert own_storage(block).data_ptr() == block.data_ptr()  # a whole block: no copy


# --- kept: one process serves one judgement per round (harness/kept_jobs.h) ---

class Kept:
    """A kept reference job on a thread of this process, in the folders a kept job has; the test plays
    the judges that claim it, one round each."""

    def __init__(self, tmp_path, max_rounds=10, task=TASK):
        from helpers import fixed_tolerance, write
        self.dir = tmp_path / "kept"
        (self.dir / "rounds" / "0" / "answers").mkdir(parents=True)
        (self.dir / "signals" / "0").mkdir(parents=True)
        self.spec = {"result_path": str(tmp_path / "kept.json"), "device": "cpu",
                     "task_path": write(tmp_path / "task" / "model.py", task),
                     "tolerance": fixed_tolerance(),
                     "kept": {"rounds_dir": str(self.dir / "rounds"), "signals_dir": str(self.dir / "signals"),
                              "stop": str(self.dir / "signals" / "stop"), "go": "go_reference",
                              "max_rounds": max_rounds, "idle_s": 30},
                     "wait_for": {"go": str(self.dir / "signals" / "0" / "go_reference"),
                                  "stop": str(self.dir / "signals" / "stop"), "timeout_s": 30,
                                  "ready": str(self.dir / "rounds" / "0" / "answers" / "ready")}}
        self.thread = threading.Thread(target=run_job, args=("reference", self.spec))
        self.thread.start()

    def round_dir(self, r):
        return self.dir / "rounds" / str(r)

    def wait_for(self, path):
        deadline = time.monotonic() + 60
        while not path.exists():
            assert self.thread.is_alive() or path.exists(), f"the job ended before {path}"
            assert time.monotonic() < deadline, f"no {path}"
            time.sleep(0.005)
        return read_strict_json(str(path)) if path.suffix == ".json" else None

    def give(self, r, name, fields, answer=None):
        go = self.dir / "signals" / str(r) / f"go_{name}"
        go.parent.mkdir(exist_ok=True)
        with open(f"{go}.tmp", "w") as f:
            json.dump(fields, f)
        os.replace(f"{go}.tmp", go)
        return self.wait_for(self.round_dir(r) / "answers" / f"{answer or name}.json")

    def start_round(self, r, seeds, init_seed=7, answer=None):
        self.wait_for(self.round_dir(r) / "answers" / "ready")
        rd = self.round_dir(r)
        fields = {"data_dir": str(rd / "shared"), "expected_dir": str(rd / "private"), "init_seed": init_seed,
                  "check_seeds": list(seeds), "round_end_path": str(rd / "answers" / "round_end.json"),
                  "serve": {"answers_dir": str(rd / "answers"), "go_dir": str(self.dir / "signals" / str(r)),
                            "stop": str(self.dir / "signals" / str(r) / "stop"), "timeout_s": 30,
                            "requests": ["reference", "compare"]}}
        return self.give(r, "reference", {"round": fields}, answer), fields

    def compare(self, r, keys, outputs):
        paths = []
        for i, out in enumerate(outputs):
            paths.append(str(self.dir / "signals" / str(r) / f"out_{i}.pt"))
            torch.save(out, paths[-1])
        return self.give(r, "compare", {"expected_keys": keys, "actual_paths": paths})

    def end_round(self, r):
        (self.dir / "signals" / str(r) / "stop").write_text("stop\n")
        return self.wait_for(self.round_dir(r) / "answers" / "round_end.json")

    def end(self):
        (self.dir / "signals" / "stop").write_text("stop\n")
        self.thread.join(60)
        assert not self.thread.is_alive()
        return read_strict_json(self.spec["result_path"])


def test_a_kept_reference_serves_one_judgement_per_round_each_from_its_own_seeds(tmp_path):
    kept = Kept(tmp_path)
    outputs = []
    for r, seeds in enumerate([(101, 102), (201, 202, 203)]):
        ref, fields = kept.start_round(r, seeds, init_seed=7 + r)
        assert ref["ok"] and ref["num_checks"] == len(seeds), ref
        assert ref["go_wait_seconds"] >= 0  # as a fresh job's first answer has it
        round_spec = dict(kept.spec, **fields)
        good = [expected_of(round_spec, s) for s in seeds]
        outputs.append(good[0])
        assert os.path.exists(os.path.join(fields["data_dir"], "init_inputs.pt"))
        cmp = kept.compare(r, [f"check {i}" for i in range(len(seeds))], good)
        assert cmp["ok"], cmp
        end = kept.end_round(r)
        assert end["ok"] and end["round"] == r and end["reusable"] and end["answered"] == ["compare"], end
    assert not torch.equal(outputs[0], outputs[1])  # the second round's own weights and inputs
    # A round that fails is the last: it answers nothing, its end says why, and the job ends without
    # waiting for another.
    end = kept.start_round(2, (301,), init_seed="seven", answer="round_end")[0]
    assert not end["ok"] and end["error_kind"] == "internal" and "init_seed" in end["reason"], end
    assert not end["reusable"] and not (kept.round_dir(2) / "answers" / "reference.json").exists()
    kept.thread.join(60)
    assert not kept.thread.is_alive()
    assert read_strict_json(kept.spec["result_path"])["rounds"] == 3


def test_a_kept_reference_ends_after_its_last_round_or_at_stop(tmp_path):
    kept = Kept(tmp_path / "one", max_rounds=1)
    ref, _ = kept.start_round(0, (101,))
    assert ref["ok"]
    assert kept.end_round(0)["reusable"] is False  # its only round
    kept.thread.join(60)
    assert not kept.thread.is_alive() and not kept.round_dir(1).exists()
    waiting = Kept(tmp_path / "two")
    ref, _ = waiting.start_round(0, (101,))
    assert waiting.end_round(0)["reusable"]
    waiting.wait_for(waiting.round_dir(1) / "answers" / "ready")  # it waits for the next round
    assert waiting.end()["rounds"] == 1


def test_a_kept_reference_reimports_its_task_each_round(tmp_path):
    counting = TASK + "\nimport builtins\nbuiltins.kept_task_imports = getattr(builtins, 'kept_task_imports', 0) + 1\n"
    kept = Kept(tmp_path, task=counting)
    import builtins
    before = getattr(builtins, "kept_task_imports", 0)
    for r in range(2):
        assert kept.start_round(r, (101,))[0]["ok"]
        kept.end_round(r)
    assert builtins.kept_task_imports - before == 2  # a fresh module per round, as a fresh process has
    kept.end()
