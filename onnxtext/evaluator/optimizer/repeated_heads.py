"""Rule ``repeated_heads``: grouped-query attention's repeated key/value heads join the attention step.

Llama, Mistral, Qwen (any GQA or MQA export) repeat each key/value head for its group of query heads
before the products (transformers' ``repeat_kv``): ``Unsqueeze`` a new axis after the heads, ``Expand``
it to the group size g, ``Reshape`` it into the heads axis: a copy of g times the key (and value)
cache per layer, and three steps each. After rule ``shaped_views`` those are three
:class:`~..fused.shape_cone.ShapedView` steps whose targets come from constants or shape cones. Here,
when such a chain is the only reader path into an attention step's k or v (made by rules
``attention`` and ``attention_operands``), the step takes the un-repeated operand and the views'
sources instead, and the products read each head once per group (:func:`~..fused.attention.grouped_matmul`:
q's heads folded into the rows, no copy of k or v).

Condition: the chain is Reshape-like view, Expand, Reshape-like view (each the only reader of what the
one before makes, none computing an output or kept value). Whether the three do repeat heads is
checked per tuple of input shapes on the first call (:class:`~..fused.attention.RepeatedHeads`), from
the shapes they produce; anything else runs the original steps. Level 2, like the attention rules:
the products are grouped differently, equal up to float rounding.
"""

from __future__ import annotations

from ..fused.attention import DotProductAttention, HeadsAttention, RepeatedHeads
from ..fused.original import OriginalSteps
from ..fused.shape_cone import ShapedView
from .graph import GraphView

NAME = "repeated_heads"
LEVEL = 2

_CHAIN = (ShapedView.VIEW, ShapedView.EXPAND, ShapedView.VIEW)  # Unsqueeze, Expand, Reshape (read upward: reversed)


def apply(steps: list, keep: set, known) -> list:
    """``steps`` with each attention step's repeated k/v heads absorbed (module docstring)."""
    if not any(type(st[0]) in (HeadsAttention, DotProductAttention) for st, _ in steps):
        return steps
    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        st = view.step(i)
        if st is not None and type(st[0]) in (HeadsAttention, DotProductAttention):
            changed |= _absorb(view, i)
    return view.entries() if changed else steps


def _chain(view: GraphView, name: str):
    """The step indices ``[unsqueeze, expand, reshape]`` of a repeat_kv chain computing ``name``, or None."""
    found = []
    for mode in reversed(_CHAIN):
        k = view.producer.get(name)
        st = view.step(k) if k is not None else None
        if st is None or type(st[0]) is not ShapedView or st[0].mode != mode or len(st[2]) != 1 or \
                not view.single_reader_value(name):
            return None
        found.append(k)
        name = st[1][0]
    return found[::-1]


def _absorb(view: GraphView, i: int) -> bool:
    st = view.step(i)
    fn = st[0]
    chains = [_chain(view, st[1][role]) if len(st[1]) > role and st[1][role] else None for role in (1, 2)]
    if chains == [None, None]:
        return False
    operands = list(st[1][:3])
    sources: list = []
    repeats: list = [None, None]
    original = []
    for role, chain in zip((1, 2), chains):
        if chain is None:
            continue
        links = [view.step(k) for k in chain]
        operands[role] = links[0][1][0]
        for link in links:
            sources.extend(link[1][1:])
        repeats[role - 1] = RepeatedHeads([link[0] for link in links], [len(link[1]) - 1 for link in links])
        original.extend(links)
    inputs = tuple(operands) + tuple(st[1][3:]) + tuple(sources)
    original.append(st)
    constants = {n: view.constant(n) for s in original for n in s[1] if n and view.constant(n) is not None}
    fallback = OriginalSteps(original, inputs, st[2], constants)
    if type(fn) is HeadsAttention:
        fused = HeadsAttention(fn.core, fn.perms, fn.out_perm, fn.dtype, fallback, fn.divides, repeats)
    else:
        core = DotProductAttention(fn.scale, fn.nan_to_zero, fn.has_mask, None)
        fused = HeadsAttention(core, (None, None, None), None, None, fallback, (), repeats)
    for chain in chains:
        for k in chain or ():
            view.remove(k)
    view.replace(i, (fused, inputs, st[2], {}, (), st[5], False), [n for n in inputs if n])
    return True
