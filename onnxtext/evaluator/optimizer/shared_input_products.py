"""Rule ``shared_input_products``: products of ONE input with several constant 2-D weights (the query,
key and value projections of every attention layer, a gated MLP's gate and up projections), each a
:class:`~..fused.linear.MatMulAdd` (rules ``matmul_add``, ``gemm_constant``) or a plain ``MatMul`` by a
constant, become one :class:`~..fused.linear.SharedInputProducts` step: the weights (and biases)
concatenated once at preparation, one product and one bias addition per call instead of one each per
projection, each result a view of its columns.

Condition: at least two such steps read the same value, with weights of one float type and the same
number of rows, all with a bias or all without. Level 2: BLAS may sum a wider product in another order.
"""

from __future__ import annotations

import numpy as np

from ..fused.linear import MatMulAdd, SharedInputProducts
from ..fused.original import OriginalSteps
from .graph import GraphView

NAME = "shared_input_products"
LEVEL = 2


def _projection(view: GraphView, i: int):
    """``(input, weight, bias or None)`` when step ``i`` multiplies one value by a constant 2-D float
    weight (and adds a bias), else None."""
    st = view.step(i)
    if st is None or len(st[2]) != 1:
        return None
    if type(st[0]) is MatMulAdd and len(st[1]) == 1:
        w, b = st[0].w, st[0].b
        if b is None:
            return (st[1][0], w, None) if w.ndim == 2 else None
        if w.ndim != 2 or b.ndim != 1 or b.dtype != w.dtype or b.size not in (1, w.shape[1]):
            return None
        return st[1][0], w, np.broadcast_to(b, (w.shape[1],))
    if view.op(i) == "MatMul" and view.constant(st[1][0]) is None:
        w = view.constant(st[1][1])
        if isinstance(w, np.ndarray) and w.ndim == 2 and w.dtype.kind == "f":
            return st[1][0], w, None
    return None


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    groups: dict[tuple, list] = {}
    for i in range(len(view)):
        p = _projection(view, i)
        if p is not None:
            a, w, b = p
            groups.setdefault((a, w.dtype, w.shape[0], b is None), []).append((i, w, b))
    changed = False
    for (a, _, _, _), members in groups.items():
        if len(members) < 2:
            continue
        indices = [i for i, _, _ in members]
        originals = [view.step(i) for i in indices]
        outputs = tuple(st[2][0] for st in originals)
        w = np.ascontiguousarray(np.concatenate([m[1] for m in members], axis=1))
        b = None if members[0][2] is None else np.concatenate([m[2] for m in members])
        stops = np.cumsum([m[1].shape[1] for m in members]).tolist()
        bounds = tuple(zip([0] + stops[:-1], stops))
        constants = {n: view.constant(n) for st in originals for n in st[1] if n and view.constant(n) is not None}
        fused = SharedInputProducts(w, b, bounds, OriginalSteps(originals, (a,), outputs, constants))
        for i in indices[1:]:
            view.remove(i)
        view.replace(indices[0], (fused, (a,), outputs, {}, (), originals[0][5], False), [a])
        changed = True
    return view.entries() if changed else steps
