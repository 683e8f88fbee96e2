"""Rule ``norm_casts``: around a fused last-axis normalization (rules ``rms_norm``, ``layer_norm``), the
``Cast`` before it, the ``Cast`` after it and the ``Mul`` by a constant scale after those, as
exporters write Llama's and T5's norms (``Cast(to=float) -> RMSNorm -> Cast(to=float) -> Mul(weight)``,
casts included in float32 models; dynamo's exports without the Casts), become one
:class:`~..fused.normalization.CastNorm` step: the scale joins the norm step, and the Casts are checked
per call to change nothing (the input already of the first Cast's type, the result of the second's;
else the original steps run). Up to three steps fewer per norm.

Condition: any of: a Cast before the norm read only by it, a Cast after it, a Mul by a float constant
of rank at most 1 (of the first Cast's type, if there is one) after those, each the only reader of
what it reads; the Mul only when the norm has no scale or bias of its own for it to join. The Llama
exports read the first Cast's result again for the residual, so there it stays a step (the Cast
kernel passes a value already of its type on without a copy). Exact (level 1): a Cast to a value's
own type is the value, and ``w * y`` is ``y * w``.
"""

from __future__ import annotations

import numpy as np

from ...dtypes import np_dtype
from ..fused.normalization import CastNorm, LastAxisLayerNorm, LastAxisRmsNorm
from ..fused.original import OriginalSteps
from .graph import GraphView

NAME = "norm_casts"
LEVEL = 1


def _cast_to(view: GraphView, k: int):
    """The numpy type step ``k`` casts to when it is a node's own Cast to a float type, else None."""
    if k is None or view.op(k) != "Cast":
        return None
    try:
        dtype = np_dtype(int(view.step(k)[3]["to"]))
    except (KeyError, ValueError, TypeError):
        return None
    return dtype if dtype.kind == "f" else None


def apply(steps: list, keep: set, known) -> list:
    if not any(type(st[0]) in (LastAxisRmsNorm, LastAxisLayerNorm) for st, _ in steps):
        return steps
    view = GraphView(steps, keep, known)
    changed = False
    for i in range(len(view)):
        st = view.step(i)
        if st is None or type(st[0]) not in (LastAxisRmsNorm, LastAxisLayerNorm) or len(st[1]) != 1:
            continue
        covered, first, last, in_dtype, out_dtype = [i], i, i, None, None
        k_in = view.producer.get(st[1][0])
        if _cast_to(view, k_in) is not None and view.single_reader_value(st[1][0]):
            in_dtype = _cast_to(view, k_in)
            covered.append(k_in)
            first = k_in
        after = view.only_reader(st[2][0])
        if after is not None and _cast_to(view, after) is not None:
            out_dtype = _cast_to(view, after)
            covered.append(after)
            last = after
            after = view.only_reader(view.step(after)[2][0])
        norm = st[0]
        if after is not None and view.op(after) == "Mul" and norm.scale is None and \
                getattr(norm, "bias", None) is None:  # (a Mul after a bias scales the bias too)
            ins = view.step(after)[1]
            w = view.constant(ins[0]) if ins[1] == view.step(last)[2][0] else view.constant(ins[1])
            # (the scale of the input's type, checked per call: the norm step then never takes its
            # own fallback, which would leave the scale out)
            if isinstance(w, np.ndarray) and w.dtype.kind == "f" and w.ndim <= 1 and len(ins) == 2 and \
                    in_dtype in (None, w.dtype):
                norm = type(norm)(*_with_scale(norm, w))
                in_dtype = w.dtype
                covered.append(after)
                last = after
        if len(covered) == 1:
            continue
        x = view.step(first)[1][0]
        originals = [view.step(k) for k in sorted(covered)]
        constants = {n: view.constant(n) for s in originals for n in s[1] if n and view.constant(n) is not None}
        outputs = view.step(last)[2]
        fused = CastNorm(norm, in_dtype, out_dtype, OriginalSteps(originals, (x,), outputs, constants))
        for k in covered:
            if k != last:
                view.remove(k)
        view.replace(last, (fused, (x,), outputs, {}, (), st[5], False), [x])
        changed = True
    return view.entries() if changed else steps


def _with_scale(norm, w):
    """The constructor arguments of ``norm`` with ``w`` as its scale."""
    if type(norm) is LastAxisRmsNorm:
        return norm.eps, w, norm.fallback
    return norm.eps, w, norm.bias, norm.fallback
