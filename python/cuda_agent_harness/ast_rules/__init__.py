"""Static rules for model_new.py: an allowlist of what the candidate's Python may do (HACKS.md A2, A3, A4,
B2, B4, C1, C2).

The published rule is "no torch operations in model_new.py beyond tensor creation, tensor properties and
the custom ops". Read as an allowlist, per part of the file:

- everywhere: imports only of torch, torch.nn, cuda_extension, math, typing, numbers and __future__; no
  dynamic code (exec, eval, getattr, dunder attributes), no try/except, no patching of torch, of
  cuda_extension or of any imported module, no use of torch.nn.functional (an unused import is fine),
  torch.compile/jit, torch.ops/_C/library, side streams, threads, profiler or global-flag calls;
  classes derive only from nn.Module or classes of this file;
- `__init__` may build anything from torch: parameters and buffers (nn.Linear declared so the
  state_dict matches is fine), since the reference state_dict is loaded over them;
- everything else (forward, helpers it calls, module-level code) may call only cuda_extension (also
  through an alias: ext = cuda_extension, self.ext = ext, self.f = cuda_extension.f), tensor creation
  (torch.empty*/zeros*/ones*/full*, torch.tensor of literals and shapes), metadata (shape, size(), dim(),
  dtype, ...), pure views (view, unsqueeze, squeeze, transpose, permute, narrow, select, ...), data
  movement to the GPU (contiguous(), cuda(), to(x.device), to(w.device, w.dtype) with a task tensor's
  dtype; dst.copy_(src) into a local tensor that is not an input), functions of this file and autograd
  wrappers of the extension (Fn.apply: Fn.forward is checked); ModelNew.forward's branches the judged
  task never takes (`if not x.is_cuda:`, a torch fallback on the task's configuration) are not checked
  for compute (compute.py unvisited_branches).

Which values are tensors is decided by a small taint analysis: forward's parameters (except those
annotated int/float/bool/str), tensor attributes of self (parameters, buffers, submodules and anything
`__init__` did not plainly assign a number to), results of cuda_extension calls and tensor creation, and
everything computed from those. Arithmetic, comparisons, truth tests, indexing with tensors and methods
other than metadata/views on a tainted value are torch computation. Metadata (x.shape, x.size(0)) is not
tainted, so shape arithmetic is fine. docs/static-rules.md lists every rule.

    violations = check_source(source)
    if violations: print(violations[0].reason())

The rules live in one module per family: table (the rule table, Violation), imports, torch_paths,
dynamic (dynamic code and patching), classes, compute (the taint analysis), tied together by checker.
"""

from __future__ import annotations

import ast
import sys

from .checker import Checker
from .policy import PolicyRules
from .policy import apply as apply_policy
from .table import FILE_NAME, RULE_HINTS, RULES, RULES_BY_NAME, Rule, Violation
from .vocabulary import RECURSION_LIMIT

__all__ = ["FILE_NAME", "RULE_HINTS", "RULES", "RULES_BY_NAME", "PolicyRules", "Rule", "Violation",
           "check_source", "check_tree"]


def check_tree(tree: ast.Module, rules: PolicyRules | None = None) -> list[Violation]:
    """Every violation of the rules in a parsed model_new.py, in source order, under the policy's `rules`
    (policy.py; default: the paper's). A tree the checker cannot walk (nested deeper than the
    interpreter's recursion limit) is one `unanalysable` violation."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        checker = Checker(tree)
        return apply_policy(checker, checker.run(), rules or PolicyRules())
    except RecursionError:
        return [Violation("unanalysable", 1, "the file is nested too deeply to be checked")]
    finally:
        sys.setrecursionlimit(limit)


def check_source(source: str | bytes, rules: PolicyRules | None = None) -> list[Violation]:
    """Parses and checks model_new.py's text (a SyntaxError propagates)."""
    return check_tree(ast.parse(source, filename=FILE_NAME), rules)
