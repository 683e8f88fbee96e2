"""The evaluator's optimizer: plan-time rewrites of a graph's step list, as a table of named rules.

A rule is a :class:`Rule`: a name (what ``Evaluator(model, disable=(...))`` switches off), a level
(``Evaluator(model, optimize=N)`` applies the rules of level 1..N; 0 runs every node as its own step,
the reference path every rewrite is tested against) and a function ``apply(steps, keep, known)``
taking and returning the list of ``(step, used names)`` entries (see :mod:`..plan`); ``keep`` are
the names that must stay values (outputs, values read by subgraphs), ``known`` the graph's true
constants (:class:`~..fusion.Constants`).

Levels:

* 1, **exact**: constant folding and rewrites that compute the same values as the nodes they replace;
* 2, **fused**: rewrites that reassociate float arithmetic (folded weights, moved biases, pools moved
  across linear maps, fused normalizations and activations), equal up to float rounding.

:data:`RULES` lists the rules in the order they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import EvalError

#: the highest level (the default of ``Evaluator(optimize=...)``)
MAX_LEVEL = 2


@dataclass(frozen=True)
class Rule:
    """One rewrite: ``apply(steps, keep, known) -> steps`` at ``level``; ``doc`` says what it does."""

    name: str
    level: int
    apply: Callable
    doc: str


def _rules() -> tuple[Rule, ...]:
    from .. import fusion
    from ..kernels.conv_clamped import affine_relus_into_pointwise_convs
    from ..kernels.pool import pools_after_pointwise_maps, pools_before_pointwise_convs
    from ..plan import chain_concats
    from . import gelu, layer_norm, matmul_add, rms_norm, shape_arithmetic

    patterns = [m.RULE for m in (gelu, layer_norm, rms_norm, matmul_add)]
    return (
        Rule(shape_arithmetic.NAME, shape_arithmetic.LEVEL, shape_arithmetic.apply, shape_arithmetic.__doc__),
        *(Rule(r.name, r.level, r.apply, r.doc) for r in patterns),
        Rule("pool_after_pointwise_map", 2, pools_after_pointwise_maps,
             "AveragePool moved after a channel-narrowing pointwise Conv and its affine steps"),
        Rule("fold_affine_and_relu", 2, fusion.fold_pairs,
             "Conv/BatchNormalization + per-channel Mul/Add folded; Relu in place in its producer"),
        Rule("prepared_conv", 1, fusion.prepared_convs,
             "Conv with constant float weights prepared once per input shape"),
        Rule("bias_into_pointwise", 2, lambda s, k, c: fusion._biases_into_pointwise_convs(s, k),
             "a Conv's bias moved into the pointwise Conv that is its only reader"),
        Rule("depthwise_into_pointwise", 1, lambda s, k, c: fusion._depthwise_into_pointwise_convs(s, k),
             "a depthwise Conv writing straight into the column buffer of its pointwise reader"),
        Rule("shuffle_into_conv", 1, fusion._shuffles_into_convs,
             "Reshape/Transpose/Reshape channel shuffle written by the Conv before it"),
        Rule("residual_into_conv", 1, lambda s, k, c: fusion._residuals_into_convs(s, k),
             "residual Add/Sum (+Relu) in place on a prepared Conv's result"),
        Rule("convs_into_concat", 1, lambda s, k, c: fusion._convs_into_concat(s, k),
             "Concat computing its prepared Convs straight into their slices"),
        Rule("conv_stem", 1, lambda s, k, c: fusion._stems(s, k),
             "stride-2 Conv (+Relu) + 3x3 stride-2 MaxPool as one step"),
        Rule("relu_after_max_pool", 1, lambda s, k, c: fusion._relus_after_max_pools(s, k),
             "a fused Relu moved after the MaxPool that reads it"),
        Rule("dropout_passthrough", 1, fusion.inference_dropouts,
             "inference Dropout without a read mask passes its input on"),
        Rule("pool_before_pointwise_conv", 2, lambda s, k, c: pools_before_pointwise_convs(s, k),
             "strided AveragePool moved before the pointwise Conv that feeds it"),
        Rule("clamped_pointwise", 2, affine_relus_into_pointwise_convs,
             "per-channel affine + Relu before a pointwise Conv as one threshold pass"),
        Rule("concat_chain", 1, lambda s, k, c: chain_concats(s),
             "chains of Concats extending each other share one buffer"),
    )


_RULES: tuple[Rule, ...] | None = None


def rules() -> tuple[Rule, ...]:
    """Every rule, in the order they run."""
    global _RULES
    if _RULES is None:
        _RULES = _rules()
    return _RULES


def rule_names() -> list[str]:
    return [r.name for r in rules()]


def check_options(level, disable) -> tuple[int, frozenset]:
    """``(level, disabled names)`` validated: a level in 0..MAX_LEVEL and known rule names."""
    if level is None:
        level = MAX_LEVEL
    if type(level) is not int or not 0 <= level <= MAX_LEVEL:
        raise EvalError(f"optimize must be an integer from 0 to {MAX_LEVEL}, got {level!r}")
    if isinstance(disable, str):
        disable = (disable,)
    names = set(rule_names()) | {"constant_folding"}
    unknown = [n for n in disable if n not in names]
    if unknown:
        raise EvalError(f"unknown optimizer rule {unknown[0]!r}; rules: {', '.join(sorted(names))}")
    return level, frozenset(disable)


def optimize(steps: list, keep: set, known, level: int, disable=frozenset()) -> list:
    """``steps`` rewritten by every rule of level at most ``level`` not named in ``disable``."""
    for rule in rules():
        if rule.level <= level and rule.name not in disable:
            steps = rule.apply(steps, keep, known)
    return steps
