"""The op catalog of `cuda-agent synth`: torch ops the composer may use, each probed with sample inputs.

Two sources: a curated table (ops with hyperparameters: linear, convolutions, norms, pooling,
reductions, softmax-like, a few tensor ops) and a crawl of `torch.nn` (module classes that construct
without arguments) and `torch.nn.functional` (functions whose only required argument is the input). A
crawled op is kept when it maps a float tensor to a tensor of the same shape. Every op is probed on
inputs of rank 1 to 5: the ranks it accepts (with the output shape its rule predicts), the dtypes it
accepts, whether it is stochastic (two calls on the same input under different seeds differ), whether it
returns its input unchanged, and whether its output is finite on standard-normal input.

transformers is optional: when it is installed, its activations (ACT2CLS, crawled) and a table of its
norms, MLP and attention blocks (TRANSFORMERS) are probed the same way, on (..., hidden) inputs. They
carry source "transformers" and the import lines their programs need; the composer never chains them
with other ops ("transformers ops stay single", as published: composer.compose_transformers).

    catalog = build_catalog()          # {"version", "torch_version", "ops": [...], ...}
    usable = composable_ops(catalog)   # what the random composer draws from
"""

from __future__ import annotations

import inspect
import random
import warnings
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .rules import MODULE_CALL, RULES, Step

CATALOG_VERSION = 2

# (name, kind, rule, template) — templates use {i}/{o}/{k}/{c}/... for __init__ arguments (rules.py)
# and {x} for the forward input.
CURATED: list[tuple[str, str, str, str]] = [
    ("nn.Linear", "module", "linear", "nn.Linear({i}, {o})"),
    ("nn.Conv1d", "module", "conv1d", "nn.Conv1d({i}, {o}, {k})"),
    ("nn.Conv2d", "module", "conv2d", "nn.Conv2d({i}, {o}, {k})"),
    ("nn.Conv3d", "module", "conv3d", "nn.Conv3d({i}, {o}, {k})"),
    ("nn.ConvTranspose2d", "module", "conv_transpose2d", "nn.ConvTranspose2d({i}, {o}, {k})"),
    ("nn.BatchNorm1d", "module", "channel_norm_1d", "nn.BatchNorm1d({c})"),
    ("nn.BatchNorm2d", "module", "channel_norm_2d", "nn.BatchNorm2d({c})"),
    ("nn.BatchNorm3d", "module", "channel_norm_3d", "nn.BatchNorm3d({c})"),
    ("nn.InstanceNorm2d", "module", "channel_norm_2d", "nn.InstanceNorm2d({c})"),
    ("nn.LayerNorm", "module", "layer_norm", "nn.LayerNorm({n})"),
    ("nn.RMSNorm", "module", "layer_norm", "nn.RMSNorm({n})"),
    ("nn.GroupNorm", "module", "group_norm", "nn.GroupNorm({g}, {c})"),
    ("nn.MaxPool1d", "module", "pool1d", "nn.MaxPool1d({k})"),
    ("nn.AvgPool1d", "module", "pool1d", "nn.AvgPool1d({k})"),
    ("nn.MaxPool2d", "module", "pool2d", "nn.MaxPool2d({k})"),
    ("nn.AvgPool2d", "module", "pool2d", "nn.AvgPool2d({k})"),
    ("nn.MaxPool3d", "module", "pool3d", "nn.MaxPool3d({k})"),
    ("nn.AvgPool3d", "module", "pool3d", "nn.AvgPool3d({k})"),
    ("nn.AdaptiveAvgPool2d", "module", "adaptive_pool2d", "nn.AdaptiveAvgPool2d({s})"),
    ("nn.AdaptiveMaxPool2d", "module", "adaptive_pool2d", "nn.AdaptiveMaxPool2d({s})"),
    ("nn.Dropout", "module", "same", "nn.Dropout(p=0.1)"),
    ("F.dropout", "functional", "same", "F.dropout({x}, p=0.1)"),
    ("F.softmax", "functional", "along_dim", "F.softmax({x}, dim={dim})"),
    ("F.log_softmax", "functional", "along_dim", "F.log_softmax({x}, dim={dim})"),
    ("F.normalize", "functional", "along_dim", "F.normalize({x}, dim={dim})"),
    ("torch.cumsum", "tensor", "along_dim", "torch.cumsum({x}, dim={dim})"),
    ("torch.sum", "tensor", "reduce", "torch.sum({x}, dim={dim}, keepdim={keep})"),
    ("torch.mean", "tensor", "reduce", "torch.mean({x}, dim={dim}, keepdim={keep})"),
    ("torch.amax", "tensor", "reduce", "torch.amax({x}, dim={dim}, keepdim={keep})"),
    ("torch.amin", "tensor", "reduce", "torch.amin({x}, dim={dim}, keepdim={keep})"),
    ("torch.logsumexp", "tensor", "reduce", "torch.logsumexp({x}, dim={dim}, keepdim={keep})"),
    ("torch.flatten", "tensor", "flatten", "torch.flatten({x}, 1)"),
    ("torch.clamp", "tensor", "clamp", "torch.clamp({x}, min={lo}, max={hi})"),
    ("mul", "tensor", "scale", "{x} * {c}"),
]

# One-tensor torch functions probed as shape-preserving tensor ops.
TENSOR_UNARY = ("abs", "sin", "cos", "tanh", "sigmoid", "exp", "erf", "square", "sqrt", "log", "rsqrt",
                "reciprocal", "neg", "sign", "round", "floor", "ceil", "expm1", "log1p", "atan", "sinh",
                "cosh", "asinh", "relu", "frac", "trunc")

# Crawled names never used: containers, identity-like and lazy modules.
NOT_OPS = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "Container", "Identity", "Flatten", "Unflatten"}

PROBE_SHAPES = {1: (64,), 2: (4, 16), 3: (2, 8, 16), 4: (2, 8, 8, 8), 5: (2, 4, 4, 4, 4)}
PROBE_DTYPES = (torch.float64, torch.float16, torch.bfloat16)

FAMILIES = {"linear": "compute", "conv1d": "compute", "conv2d": "compute", "conv3d": "compute",
            "conv_transpose2d": "compute", "channel_norm_1d": "norm", "channel_norm_2d": "norm",
            "channel_norm_3d": "norm", "layer_norm": "norm", "group_norm": "norm", "pool1d": "pool",
            "pool2d": "pool", "pool3d": "pool", "adaptive_pool2d": "pool", "reduce": "reduce",
            "flatten": "reduce", "along_dim": "softmax", "same": "activation", "clamp": "activation",
            "scale": "activation"}

NAMESPACE = {"torch": torch, "nn": nn, "F": F}

# transformers blocks: (name, rule, template, imports). Dropout probabilities are 0 and attention is
# the eager implementation (no warning, no kernel choice at run time).
TRANSFORMERS: list[tuple[str, str, str, str]] = [
    ("transformers.LlamaRMSNorm", "hidden", "LlamaRMSNorm({n})",
     "from transformers.models.llama.modeling_llama import LlamaRMSNorm"),
    ("transformers.GemmaRMSNorm", "hidden", "GemmaRMSNorm({n})",
     "from transformers.models.gemma.modeling_gemma import GemmaRMSNorm"),
    ("transformers.T5LayerNorm", "hidden", "T5LayerNorm({n})",
     "from transformers.models.t5.modeling_t5 import T5LayerNorm"),
    ("transformers.LlamaMLP", "hidden_mlp",
     "LlamaMLP(LlamaConfig(hidden_size={n}, intermediate_size={m}, num_attention_heads=1, num_key_value_heads=1))",
     "from transformers import LlamaConfig\nfrom transformers.models.llama.modeling_llama import LlamaMLP"),
    ("transformers.GPT2MLP", "hidden_mlp", "GPT2MLP({m}, GPT2Config(n_embd={n}, resid_pdrop=0.0))",
     "from transformers import GPT2Config\nfrom transformers.models.gpt2.modeling_gpt2 import GPT2MLP"),
    ("transformers.T5DenseGatedActDense", "hidden_mlp",
     'T5DenseGatedActDense(T5Config(d_model={n}, d_ff={m}, dropout_rate=0.0, feed_forward_proj="gated-gelu"))',
     "from transformers import T5Config\nfrom transformers.models.t5.modeling_t5 import T5DenseGatedActDense"),
    ("transformers.BertSelfAttention", "attention",
     'BertSelfAttention(BertConfig(hidden_size={n}, num_attention_heads={h}, attention_probs_dropout_prob=0.0, '
     'attn_implementation="eager"))',
     "from transformers import BertConfig\nfrom transformers.models.bert.modeling_bert import BertSelfAttention"),
    ("transformers.GPT2Attention", "attention",
     'GPT2Attention(GPT2Config(n_embd={n}, n_head={h}, attn_pdrop=0.0, resid_pdrop=0.0, attn_implementation="eager"))',
     "from transformers import GPT2Config\nfrom transformers.models.gpt2.modeling_gpt2 import GPT2Attention"),
]
TRANSFORMERS_FAMILIES = {"module_same": "activation", "hidden": "norm", "hidden_mlp": "mlp", "attention": "attention"}
ACTIVATION_IMPORT = "from transformers.activations import ACT2FN"


class ModuleCall(nn.Module):
    """A module called through a call text other than m(x) (e.g. an attention block's output, taken
    from the (output, weights) it returns)."""

    def __init__(self, module: nn.Module, call: str):
        super().__init__()
        self.inner = module
        self.fn = eval("lambda m, x: " + call.format(m="m", x="x"))  # noqa: S307 - catalog text

    def forward(self, x):
        return self.fn(self.inner, x)


def namespace(imports: str = "") -> dict:
    """The names op texts are evaluated in: torch, nn, F, plus what the op's import lines bring."""
    names = dict(NAMESPACE)
    if imports:
        exec(imports, names)  # noqa: S102 - the catalog's own import lines
    return names


def instantiate(step: Step, names: dict | None = None) -> Any:
    """A callable x -> output for one applied op: a fresh module (its hyperparameter names bound to
    their values), or a lambda over the call text."""
    names = names if names is not None else NAMESPACE
    if step.module is not None:
        module = eval(step.module, {**names, **step.params})  # noqa: S307 - catalog text
        return module if step.call == MODULE_CALL else ModuleCall(module, step.call)
    return eval("lambda x: " + step.call.format(x="x"), dict(names))  # noqa: S307 - catalog text


def probe(name: str, kind: str, rule: str, template: str, source: str, imports: str = "") -> dict:
    """The catalog entry of one op: the ranks and dtypes it accepts and how it behaves."""
    family = TRANSFORMERS_FAMILIES[rule] if source == "transformers" else FAMILIES[rule]
    entry: dict[str, Any] = {"name": name, "kind": kind, "rule": rule, "family": family, "template": template,
             "source": source, "imports": imports, "ranks": [], "dtypes": [], "stochastic": False,
             "identity": False, "finite": True, "warning": None, "problem": None}
    try:
        names = namespace(imports)
    except Exception as exc:  # noqa: BLE001 - not in this transformers version
        entry["problem"] = f"import: {type(exc).__name__}: {exc}"[:200]
        return entry
    first = None
    for rank, shape in PROBE_SHAPES.items():
        step = RULES[rule](template, shape, random.Random(0))
        if step is None:
            continue
        try:
            fn = instantiate(step, names)
            torch.manual_seed(0)
            x = torch.randn(shape)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = fn(x)
            if caught and entry["warning"] is None:
                entry["warning"] = str(caught[0].message).splitlines()[0]
        except Exception as exc:  # noqa: BLE001 - an op that rejects this rank
            entry["problem"] = entry["problem"] or f"rank {rank}: {type(exc).__name__}"
            continue
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != step.shape:
            entry["problem"] = entry["problem"] or f"rank {rank}: output is not a tensor of shape {step.shape}"
            continue
        entry["ranks"].append(rank)
        if first is None:
            first = (fn, x, out)
    if first is None:
        return entry
    fn, x, out = first
    entry["dtypes"].append("float32")
    entry["identity"] = out.shape == x.shape and torch.equal(out, x)
    entry["finite"] = bool(torch.isfinite(out).all())
    outs = []
    for seed in (1, 1, 2):
        torch.manual_seed(seed)
        outs.append(fn(x))
    entry["stochastic"] = not all(identical(outs[0], o) for o in outs[1:])
    for dtype in PROBE_DTYPES:
        try:
            f = fn.to(dtype) if isinstance(fn, nn.Module) else fn
            if f(x.to(dtype)).dtype == dtype:
                entry["dtypes"].append(str(dtype).replace("torch.", ""))
        except Exception:  # noqa: BLE001 - the dtype is not supported
            pass
        finally:
            if isinstance(fn, nn.Module):
                fn.to(torch.float32)
    return entry


def crawled_modules() -> list[tuple[str, str, str, str]]:
    """torch.nn module classes that construct without arguments, as shape-preserving candidates."""
    found = []
    curated = {c[0] for c in CURATED}
    for attr in sorted(dir(nn)):
        obj = getattr(nn, attr)
        if not (inspect.isclass(obj) and issubclass(obj, nn.Module)) or attr in NOT_OPS or attr.startswith("_"):
            continue
        if attr.startswith("Lazy") or f"nn.{attr}" in curated:
            continue
        try:
            obj()
        except Exception:  # noqa: BLE001 - needs arguments: only the curated table covers it
            continue
        found.append((f"nn.{attr}", "module", "same", f"nn.{attr}()"))
    return found


def crawled_functions() -> list[tuple[str, str, str, str]]:
    """torch.nn.functional functions whose only required argument is the input tensor."""
    found = []
    curated = {c[0] for c in CURATED}
    for attr in sorted(dir(F)):
        obj = getattr(F, attr)
        if attr.startswith("_") or not callable(obj) or inspect.isclass(obj) or f"F.{attr}" in curated:
            continue
        try:
            params = list(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):
            continue
        if not params or params[0].name not in ("input", "x", "self"):
            continue
        if any(p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params[1:]):
            continue
        found.append((f"F.{attr}", "functional", "same", f"F.{attr}({{x}})"))
    for attr in TENSOR_UNARY:
        if hasattr(torch, attr):
            found.append((f"torch.{attr}", "tensor", "same", f"torch.{attr}({{x}})"))
    return found


def identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape and the same values, nan equal to nan (torch.equal says nan != nan)."""
    return a.shape == b.shape and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)


def transformers_version() -> str | None:
    try:
        import transformers  # optional
    except Exception:  # noqa: BLE001 - not installed or broken: skipped
        return None
    return str(transformers.__version__)


def crawled_transformers() -> list[tuple[str, str, str, str, str]]:
    """(name, kind, rule, template, imports) of the transformers ops: every activation of ACT2CLS, then
    the TRANSFORMERS table. Empty when transformers is not installed."""
    try:
        from transformers.activations import ACT2CLS  # optional
    except Exception:  # noqa: BLE001 - not installed or broken
        return []
    found = [(f"transformers.ACT2FN[{key}]", "module", "module_same", f'ACT2FN["{key}"]', ACTIVATION_IMPORT)
             for key in sorted(ACT2CLS)]
    found += [(name, "module", rule, template, imports) for name, rule, template, imports in TRANSFORMERS]
    return found


def build_catalog() -> dict:
    """Crawls and probes every op; the result is JSON-ready."""
    ops, skipped = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        candidates: list[tuple[str, ...]] = [c + ("curated",) for c in CURATED
                                             if hasattr(nn, c[0][3:]) or not c[0].startswith("nn.")]
        candidates += [c + ("crawled",) for c in crawled_modules() + crawled_functions()]
        candidates = [c + ("",) for c in candidates]
        candidates += [(name, kind, rule, template, "transformers", imports)
                       for name, kind, rule, template, imports in crawled_transformers()]
        for name, kind, rule, template, source, imports in candidates:
            entry = probe(name, kind, rule, template, source, imports)
            if entry["ranks"]:
                ops.append(entry)
            else:
                skipped.append({"name": name, "reason": entry["problem"] or "accepts no probed rank"})
    tv = transformers_version()
    n_transformers = sum(op["source"] == "transformers" for op in ops)
    return {"version": CATALOG_VERSION, "torch_version": torch.__version__,
            "transformers_version": tv,
            "transformers_note": f"crawled: {n_transformers} ops" if tv else "not installed: skipped",
            "ops": ops, "skipped": skipped}


def usable(op: dict, allow_stochastic: bool = False) -> bool:
    """float32, finite on normal input, silent (no warning: deprecated implicit dimensions), not the
    identity, not stochastic."""
    return ("float32" in op["dtypes"] and op["finite"] and not op["identity"] and not op["warning"]
            and (allow_stochastic or not op["stochastic"]))


def composable_ops(catalog: dict, allow_stochastic: bool = False) -> list[dict]:
    """The torch ops the random composer chains (usable ones)."""
    return [op for op in catalog["ops"] if op["source"] != "transformers" and usable(op, allow_stochastic)]


def transformers_ops(catalog: dict) -> list[dict]:
    """The usable transformers ops, each a task of its own."""
    return [op for op in catalog["ops"] if op["source"] == "transformers" and usable(op)]


def stochastic_names(catalog: dict) -> set[str]:
    """Short names (`Dropout`, `dropout`, `rrelu`) of the ops the catalog found stochastic."""
    return {op["name"].split(".")[-1] for op in catalog["ops"] if op["stochastic"]}
