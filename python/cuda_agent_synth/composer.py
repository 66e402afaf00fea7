"""The random composer: 1..max_ops catalog ops applied one after another, as a KernelBench-form program.

Everything is drawn from `random.Random(seed)`, so a seed always gives the same program (for the same
catalog). The number of ops follows the op-count mix; the input shape is sized from the device's element
budget; each op is drawn from a family (compute, norm, activation, pool, reduce, softmax) and then
among the family's ops that accept the current shape (the catalog's probed ranks and the op's shape
rule), so every program is shape-correct by construction.

    program = compose(composable_ops(catalog), seed=7, mix=PAPER_MIX, max_ops=5, device="cpu")
    program["code"], program["ops"]

transformers ops stay single, as published: compose_transformers makes a program of one of them on a
(batch_size, seq_len, hidden_dim) input, with the import lines the op needs.
"""

from __future__ import annotations

import math
import random
import re

from .rules import RULES, Step

# The published op-count mix of Ops-6K (../shared/PAPER.md §1), in percent; the remaining 1.2 % are
# single transformers ops (PAPER_TRANSFORMERS_SHARE).
PAPER_MIX = {1: 3.4, 2: 83.8, 3: 7.6, 4: 2.8, 5: 1.2}
PAPER_TRANSFORMERS_SHARE = 1.2

# transformers programs: (batch_size, seq_len, hidden_dim) inputs of these sizes, batch filling the
# element budget; transformers op families by weight.
TRANSFORMERS_HIDDEN = {"cpu": (32, 64, 128), "cuda": (512, 768, 1024, 2048)}
TRANSFORMERS_SEQ = {"cpu": (8, 16, 32), "cuda": (128, 256, 512, 1024)}
TRANSFORMERS_FAMILY_WEIGHTS = {"activation": 30, "norm": 20, "mlp": 30, "attention": 20}
TRANSFORMERS_DIMS = ("batch_size", "seq_len", "hidden_dim")

# Elements of the input tensor, drawn log-uniformly: small enough for the CPU, large for a GPU.
ELEMENT_BUDGET = {"cpu": (2 ** 13, 2 ** 17), "cuda": (2 ** 22, 2 ** 26)}

FIRST_FAMILY_WEIGHTS = {"compute": 50, "norm": 10, "activation": 15, "pool": 10, "softmax": 10, "reduce": 5}
NEXT_FAMILY_WEIGHTS = {"compute": 15, "norm": 20, "activation": 35, "pool": 10, "softmax": 10, "reduce": 10}

DIM_NAMES = {1: ("size",), 2: ("batch_size", "features"), 3: ("batch_size", "channels", "length"),
             4: ("batch_size", "channels", "height", "width"),
             5: ("batch_size", "channels", "depth", "height", "width")}

MAX_TRIES = 50


class ComposeError(Exception):
    """No program could be drawn (the catalog lacks ops for the requested shapes)."""


def parse_mix(text: str) -> dict[int, float]:
    """"1:3.4,2:83.8,..." → {1: 3.4, 2: 83.8, ...}; raises ValueError naming what is wrong."""
    mix: dict[int, float] = {}
    for part in text.split(","):
        if ":" not in part:
            raise ValueError(f"op-count mix entry '{part}' is not COUNT:WEIGHT")
        count, weight = part.split(":", 1)
        try:
            n, w = int(count), float(weight)
        except ValueError:
            raise ValueError(f"op-count mix entry '{part}' is not COUNT:WEIGHT") from None
        if not 1 <= n <= 5 or w < 0 or not math.isfinite(w):
            raise ValueError(f"op-count mix entry '{part}': counts are 1..5, weights non-negative")
        mix[n] = w
    if sum(mix.values()) <= 0:
        raise ValueError("op-count mix has no positive weight")
    return mix


def draw_count(rng: random.Random, mix: dict[int, float], max_ops: int) -> int:
    counts = [n for n in sorted(mix) if n <= max_ops and mix[n] > 0]
    if not counts:
        raise ComposeError(f"the op-count mix has no weight at or below --max-ops {max_ops}")
    return rng.choices(counts, weights=[mix[n] for n in counts])[0]


def input_shape(rng: random.Random, rank: int, device: str) -> tuple:
    low, high = ELEMENT_BUDGET[device]
    total = math.exp(rng.uniform(math.log(low), math.log(high)))
    if rank == 1:
        return (max(64, int(total) // 64 * 64),)
    if rank == 2:
        batch = rng.choice((16, 32, 64, 128))
        return (batch, max(16, int(total / batch) // 16 * 16))
    batch = rng.choice((2, 4, 8, 16))
    channels = rng.choice((3, 8, 16, 32))
    side = max(4, round((total / (batch * channels)) ** (1 / (rank - 2))))
    return (batch, channels) + (side,) * (rank - 2)


def _pick(rng: random.Random, ops: list[dict], weights: dict[str, int], shape: tuple | None,
          avoid: str | None) -> dict | None:
    """A family by weight, then an op of it accepting `shape` (any rank when None)."""
    families = dict(weights)
    while families:
        family = rng.choices(list(families), weights=list(families.values()))[0]
        del families[family]
        fits = [op for op in ops if op["family"] == family and op["name"] != avoid
                and (shape is None or len(shape) in op["ranks"])]
        if fits:
            return rng.choice(fits)
    return None


def _draw(rng: random.Random, ops: list[dict], count: int, device: str) -> list[tuple[dict, Step]] | None:
    first = _pick(rng, ops, FIRST_FAMILY_WEIGHTS, None, None)
    if first is None:
        return None
    ranks = [r for r in first["ranks"] if r >= 2] or first["ranks"]
    shape = input_shape(rng, rng.choice(ranks), device)
    chain: list[tuple[dict, Step]] = [(first, Step(shape=shape))]  # the input, as a pseudo step
    limit = ELEMENT_BUDGET[device][1] * 8
    op: dict | None = first
    while op is not None and len(chain) <= count:
        step = RULES[op["rule"]](op["template"], shape, rng)
        if step is None or math.prod(step.shape) > limit or math.prod(step.shape) < 2:
            return None
        chain.append((op, step))
        shape = step.shape
        if len(chain) > count:
            break
        op = _pick(rng, ops, NEXT_FAMILY_WEIGHTS, shape, op["name"])
        if op is None:
            return None
    return chain


def _snake(name: str) -> str:
    """An attribute name for an op: "nn.BatchNorm2d" -> "batch_norm2d", "ACT2FN[gelu]" -> "act2fn_gelu"."""
    short = name.split(".")[-1]
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", short).lower()
    return re.sub(r"\W+", "_", snake).strip("_") or "op"


def render(chain: list[tuple[dict, Step]], dim_names: tuple | None = None) -> str:
    """The KernelBench-form program of a drawn chain (chain[0] holds the input shape)."""
    in_shape = chain[0][1].shape
    constants = list(zip(dim_names or DIM_NAMES[len(in_shape)], in_shape, strict=False))
    init_names: list[str] = []
    body_init, body_forward, used = [], [], {n for n, _ in constants}
    for j, (op, step) in enumerate(chain[1:]):
        if step.module is None:
            body_forward.append(f"        x = {step.call.format(x='x')}")
            continue
        text = step.module
        for name, value in step.params.items():
            unique = name if name not in used else f"{name}_{j}"
            used.add(unique)
            text = re.sub(rf"\b{name}\b", unique, text)
            constants.append((unique, value))
            init_names.append(unique)
        attr = _snake(op["name"])
        while attr in used:
            attr = f"{_snake(op['name'])}_{j}"
            if attr in used:
                attr += "_"
        used.add(attr)
        body_init.append(f"        self.{attr} = {text}")
        body_forward.append(f"        x = {step.call.format(m=f'self.{attr}', x='x')}")
    names = " -> ".join(op["name"] for op, _ in chain[1:])
    dims = ", ".join(n for n, _ in constants[:len(in_shape)])
    imports = list(dict.fromkeys(line for op, _ in chain[1:] for line in op.get("imports", "").splitlines()))
    lines = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F", *imports, "", "",
             "class Model(nn.Module):", f'    """{names}"""', "",
             f"    def __init__(self{''.join(', ' + n for n in init_names)}):",
             "        super().__init__()", *body_init, "",
             "    def forward(self, x):", *body_forward, "        return x", "", ""]
    lines += [f"{n} = {v}" for n, v in constants]
    lines += ["", "", "def get_inputs():", f"    return [torch.randn({dims})]", "", "",
              "def get_init_inputs():", f"    return [{', '.join(init_names)}]", ""]
    return "\n".join(lines)


def compose(ops: list[dict], seed: int, mix: dict[int, float], max_ops: int, device: str,
            count: int | None = None) -> dict:
    """The program of `seed`: {"ops", "n_ops", "code", "input_shape", "output_shape"}. The op count is
    drawn from `mix` by the seed's generator unless `count` is given; (seed, count) fixes the program."""
    if not ops:
        raise ComposeError("the op catalog has no composable op")
    rng = random.Random(seed)
    drawn = draw_count(rng, mix, max_ops)
    count = drawn if count is None else count
    for _ in range(MAX_TRIES):
        chain = _draw(rng, ops, count, device)
        if chain is not None:
            return {"ops": [op["name"] for op, _ in chain[1:]], "n_ops": count, "code": render(chain),
                    "input_shape": list(chain[0][1].shape), "output_shape": list(chain[-1][1].shape)}
    raise ComposeError(f"no {count}-op program fits the catalog after {MAX_TRIES} tries (seed {seed})")


def transformers_shape(rng: random.Random, device: str) -> tuple:
    low, high = ELEMENT_BUDGET[device]
    total = math.exp(rng.uniform(math.log(low), math.log(high)))
    hidden = rng.choice(TRANSFORMERS_HIDDEN[device])
    seq = rng.choice(TRANSFORMERS_SEQ[device])
    return (max(1, min(64, round(total / (hidden * seq)))), seq, hidden)


def compose_transformers(ops: list[dict], seed: int, device: str) -> dict:
    """The single-op transformers program of `seed` (catalog.transformers_ops): a family by weight, an
    op of it, a (batch_size, seq_len, hidden_dim) input. Same result fields as compose."""
    if not ops:
        raise ComposeError("the op catalog has no transformers op (is transformers installed?)")
    rng = random.Random(seed)
    for _ in range(MAX_TRIES):
        op = _pick(rng, ops, TRANSFORMERS_FAMILY_WEIGHTS, (0, 0, 0), None)
        if op is None:
            break
        shape = transformers_shape(rng, device)
        step = RULES[op["rule"]](op["template"], shape, rng)
        if step is None:
            continue
        chain = [(op, Step(shape=shape)), (op, step)]
        return {"ops": [op["name"]], "n_ops": 1, "code": render(chain, TRANSFORMERS_DIMS),
                "input_shape": list(shape), "output_shape": list(step.shape)}
    raise ComposeError(f"no transformers program fits the catalog after {MAX_TRIES} tries (seed {seed})")
