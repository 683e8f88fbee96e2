"""The evaluator's optimizer: plan-time rewrites of a graph's step list, as a table of named rules.

A rule is a :class:`Rule`: a name (what ``Evaluator(model, disable=(...))`` switches off), a level
(``Evaluator(model, optimize=N)`` applies the rules of level 1..N; 0 runs every node as its own step,
the reference path every rewrite is tested against) and a function ``apply(steps, keep, known)``
taking and returning the list of ``(step, used names)`` entries (see :mod:`..plan`); ``keep`` are
the names that must stay values (outputs, values read by subgraphs), ``known`` the graph's true
constants (:class:`~.graph.Constants`).

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
    from . import layout_chains
    from . import (attention, bias_into_pointwise, concat_chain, conv_affine, conv_stem, convs_into_concat,
                   depthwise_into_pointwise, dropout_passthrough, float16_in_float32, gelu, integer_matmul_to_float,
                   layer_norm, matmul_add,
                   prepared_conv, prepared_recurrent, qdq_pair, qlinear_conv, relu_after_max_pool, residual_into_conv,
                   rms_norm, shape_arithmetic, shuffle_into_conv)
    from . import (attention_operands, clamped_pointwise, gemm_constant, pool_after_pointwise_map,
                   pool_before_pointwise_conv)
    from . import conv_activation, conv_silu_divided, hard_swish
    from . import dynamic_quantized_matmul, fake_quantize_into_conv, prepared_matmul_nbits, qgemm_constant
    from . import redundant_fake_quantize
    from . import layout_views, norm_casts, residual_add, shaped_views, shared_input_products, silu
    from . import common_steps, contrib_transformer, repeated_heads
    from . import dequantized_gather, space_to_depth_slices
    from . import max_pool_before_fake_quantize, prepared_qlinear_ops, quantized_codes, shared_codes_products
    from . import quantized_residual_add

    def module_rule(m):
        return Rule(m.NAME, m.LEVEL, m.apply, m.__doc__)

    def pattern_rule(m):
        return Rule(m.RULE.name, m.RULE.level, m.RULE.apply, m.RULE.doc)

    return (
        module_rule(shape_arithmetic),
        module_rule(float16_in_float32),
        module_rule(space_to_depth_slices),
        *(pattern_rule(m) for m in (gelu, hard_swish, layer_norm, rms_norm, attention, matmul_add, gemm_constant,
                                    qdq_pair, integer_matmul_to_float, dequantized_gather)),
        pattern_rule(silu),
        module_rule(redundant_fake_quantize),
        module_rule(dynamic_quantized_matmul),
        module_rule(shared_codes_products),
        module_rule(quantized_residual_add),
        *(Rule(r.name, r.level, r.apply, r.doc) for r in (layout_chains.TRANSPOSE_RULE, layout_chains.RESHAPE_RULE)),
        module_rule(norm_casts),
        module_rule(shared_input_products),
        module_rule(residual_add),
        module_rule(attention_operands),
        module_rule(pool_after_pointwise_map),
        module_rule(conv_affine),
        module_rule(prepared_conv),
        module_rule(conv_activation),
        module_rule(conv_silu_divided),
        module_rule(prepared_recurrent),
        module_rule(qlinear_conv),
        module_rule(contrib_transformer),
        module_rule(prepared_matmul_nbits),
        module_rule(qgemm_constant),
        module_rule(prepared_qlinear_ops),
        module_rule(quantized_codes),
        module_rule(fake_quantize_into_conv),
        module_rule(max_pool_before_fake_quantize),
        module_rule(bias_into_pointwise),
        module_rule(depthwise_into_pointwise),
        module_rule(shuffle_into_conv),
        module_rule(residual_into_conv),
        module_rule(convs_into_concat),
        module_rule(conv_stem),
        module_rule(relu_after_max_pool),
        module_rule(dropout_passthrough),
        module_rule(pool_before_pointwise_conv),
        module_rule(clamped_pointwise),
        module_rule(concat_chain),
        module_rule(shaped_views),
        module_rule(repeated_heads),
        module_rule(layout_views),
        module_rule(common_steps),
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
