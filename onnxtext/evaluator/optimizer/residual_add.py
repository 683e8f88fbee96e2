"""Rule ``residual_add``: ``Add(p, r)`` where ``p`` is a :class:`~..fused.linear.MatMulAdd`'s result read
only by that Add (the output projection and the second feed-forward product of every transformer
layer, added to the residual stream) becomes one :class:`~..fused.linear.MatMulAddResidual` step that
adds ``r`` in place into the product: one result array and one step instead of two each.

Condition: the product has one reader, the Add; ``r`` must have the product's shape at run time
(checked per call, else the original steps run). Exact (level 1): the same sums in the same order
(``p + r`` equals ``r + p``).
"""

from __future__ import annotations

from ..fused.linear import MatMulAdd, MatMulAddResidual
from ..fused.original import OriginalSteps
from .graph import GraphView

NAME = "residual_add"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    if not any(type(st[0]) is MatMulAdd for st, _ in steps):
        return steps
    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        if view.op(i) != "Add":
            continue
        st = view.step(i)
        if len(st[1]) != 2:
            continue
        for p, r in (st[1], st[1][::-1]):
            k = view.producer.get(p)
            product = view.step(k) if k is not None else None
            if product is None or type(product[0]) is not MatMulAdd or len(product[1]) != 1 or \
                    not view.single_reader_value(p) or view.constant(r) is not None or p == r:
                continue
            a = product[1][0]
            fallback = OriginalSteps([product, st], (a, r), st[2], {})
            fused = MatMulAddResidual(product[0], fallback)
            view.remove(k)
            view.replace(i, (fused, (a, r), st[2], {}, (), product[5], False), [a, r])
            changed = True
            break
    return view.entries() if changed else steps
