"""Rule ``residual_add``: ``Add(p, r)`` where ``p`` is a :class:`~..fused.linear.MatMulAdd`'s result (or a
MatMul node's by a constant 2-D weight: Llama's and T5's bias-free projections) read only by that Add
(the output projection and the second feed-forward product of every transformer layer, added to the
residual stream) becomes one :class:`~..fused.linear.MatMulAddResidual` step that adds ``r`` in place
into the product: one result array and one step instead of two each.

Condition: the product has one reader, the Add; ``r`` must have the product's shape at run time
(checked per call, else the original steps run). Exact (level 1): the same sums in the same order
(``p + r`` equals ``r + p``).
"""

from __future__ import annotations

import numpy as np

from ..fused.linear import MatMulAdd, MatMulAddResidual
from ..fused.original import OriginalSteps
from .graph import GraphView

NAME = "residual_add"
LEVEL = 1


def _linear(view: GraphView, k: int):
    """The :class:`MatMulAdd` step ``k`` computes: its own, or, outside subgraphs, a bias-free one for a
    MatMul node by a constant 2-D float weight (Llama's and T5's output and down projections); else
    None. (In a Scan body the MatMul and Add nodes stay: kernels/scan_vectorized.py batches such
    bodies over all slices at once, which it cannot do with a fused step.)"""
    st = view.step(k)
    if type(st[0]) is MatMulAdd and len(st[1]) == 1:
        return st[0]
    if view.op(k) == "MatMul" and view.constant(st[1][0]) is None and ".attribute[" not in st[5].path:
        w = view.constant(st[1][1])
        if isinstance(w, np.ndarray) and w.ndim == 2 and w.dtype.kind == "f":
            return MatMulAdd(w, None, None)  # (no fallback of its own: the step's covers both nodes)
    return None


def fuse_residual_adds(steps: list, keep: set, known, fuse) -> list:
    """Each ``Add(p, r)`` (either order) whose ``p`` is read only by it, ``r`` not a constant, and
    ``fuse(view, k, product, add, r)`` (``k`` the producer of ``p``) gives ``(fused step, its input)``,
    becomes that one step reading ``(input, r)``; ``fuse`` returns None for a product it does not take.
    The loop of rules ``residual_add`` and ``quantized_residual_add``."""
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
            if product is None or not view.single_reader_value(p) or view.constant(r) is not None or p == r:
                continue
            made = fuse(view, k, product, st, r)
            if made is None:
                continue
            fused, a = made
            view.remove(k)
            view.replace(i, (fused, (a, r), st[2], {}, (), product[5], False), [a, r])
            changed = True
            break
    return view.entries() if changed else steps


def _fuse_float(view: GraphView, k: int, product, add, r: str):
    linear = _linear(view, k)
    if linear is None:
        return None
    a = product[1][0]
    constants = {n: view.constant(n) for n in product[1] if n and view.constant(n) is not None}
    return MatMulAddResidual(linear, OriginalSteps([product, add], (a, r), add[2], constants)), a


def apply(steps: list, keep: set, known) -> list:
    return fuse_residual_adds(steps, keep, known, _fuse_float)
